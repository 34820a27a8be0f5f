/**
 * The public package registries that `allow_package_managers: true` opens (the Managed Agents
 * API's limited networking): the hosts each manager's default configuration talks to, and no
 * mirror or CDN a tenant could not name itself. They are added to a sandbox's egress scope when
 * its endpoint is opened, so a change here applies to sandboxes opened after it. Listing a host
 * promises nothing about reaching it: a deployment whose network has no route to one (RubyGems,
 * on some) answers as that network does.
 */
export const PACKAGE_REGISTRY_HOSTS: readonly string[] = [
  // pip: the index and the files it links to
  "pypi.org",
  "files.pythonhosted.org",
  // npm (and yarn, pnpm: same registry)
  "registry.npmjs.org",
  // cargo: the API, the sparse index, the crate files
  "crates.io",
  "index.crates.io",
  "static.crates.io",
  // go: the module proxy and the checksum database
  "proxy.golang.org",
  "sum.golang.org",
  // apt: Debian's mirrors
  "deb.debian.org",
  "security.debian.org",
  // gem
  "rubygems.org",
  "index.rubygems.org",
];
