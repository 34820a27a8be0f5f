#!/usr/bin/env bash
# buf breaking: the gRPC contracts (proto/) of this commit against those of its parent, so that a
# break is a deliberate decision: a new package version (metaharness.v2 beside v1), or an exception
# listed under `breaking.ignore` in proto/buf.yaml with a comment saying why. The parent's contracts
# are read with git (git archive), which works in a worktree and in any clone that has the parent.
# A shallow clone (CI's depth 1) has no parent: it is fetched one commit deeper from origin; if that
# cannot be done, the contracts are compared against the merge-base with origin's branch; if there
# is none either, the check is skipped with the reason printed. Exit 0 when compatible or skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
buf=node_modules/.bin/buf

base=""
if git rev-parse -q --verify HEAD~1 >/dev/null; then
  base=HEAD~1
elif [ "$(git rev-parse --is-shallow-repository)" = true ] && git fetch -q --deepen=1 origin 2>/dev/null && git rev-parse -q --verify HEAD~1 >/dev/null; then
  base=HEAD~1
else
  upstream=$(git rev-parse -q --verify '@{upstream}' 2>/dev/null || git rev-parse -q --verify origin/HEAD 2>/dev/null || true)
  if [ -n "$upstream" ]; then
    mb=$(git merge-base HEAD "$upstream" 2>/dev/null || true)
    if [ -n "$mb" ] && [ "$mb" != "$(git rev-parse HEAD)" ]; then base=$mb; fi
  fi
fi
if [ -z "$base" ]; then
  echo "proto-breaking: skipped: this clone has no parent commit (a shallow clone that could not be deepened) and no merge-base with origin to compare the contracts against" >&2
  exit 0
fi
if ! git cat-file -e "$base:proto" 2>/dev/null; then
  echo "proto-breaking: skipped: $(git rev-parse --short "$base") has no proto/ to compare against" >&2
  exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git archive "$base" proto | tar -x -C "$tmp"
echo "proto-breaking: proto/ against $(git rev-parse --short "$base") ($base)" >&2
if ! "$buf" breaking proto --against "$tmp/proto"; then
  echo "proto-breaking: the change above breaks a contract other backends depend on: add a new package version (metaharness.v2) instead, or list the rule under breaking.ignore in proto/buf.yaml with a comment saying why" >&2
  exit 1
fi
