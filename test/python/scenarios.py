"""The TypeScript SDK's scenarios, from the official Python SDK (`anthropic`, the version that
infra/python-sdk/up.sh pins): agents, environments, sessions, events (send, list, stream), vaults
and credentials, archive and delete, each with the checks a Python user's code relies on. The
Python SDK sends `Content-Type: application/json` with an empty body on every POST and DELETE
without params (archive, delete), which the gateway must take as no body.

Run by test/integration/gateway/python-sdk.test.ts against a stack it starts (MH_URL, MH_API_KEY;
the agent's system prompt names the offline model's "hello" scenario). Prints one line per
scenario and closes with `python-sdk: N passed, M failed`; exits 1 when any failed.
"""

import os
import sys
import traceback
from typing import Callable, List, Tuple

import anthropic

client = anthropic.Anthropic(base_url=os.environ["MH_URL"], api_key=os.environ["MH_API_KEY"], max_retries=0)
beta = client.beta
SCENARIOS: List[Tuple[str, Callable[[], None]]] = []


def scenario(fn: Callable[[], None]) -> Callable[[], None]:
    SCENARIOS.append((fn.__name__, fn))
    return fn


def check(condition: bool, what: str) -> None:
    if not condition:
        raise AssertionError(what)


def refused(call: Callable[[], object], error: type) -> anthropic.APIStatusError:
    try:
        call()
    except error as err:  # the SDK's typed error for the status
        return err
    raise AssertionError(f"expected {error.__name__}")


def archive_delete_gone(resource, id: str, deleted: str) -> None:
    """Archive, then delete, then 404: each call sends an empty body with its content-type."""
    check(resource.archive(id).archived_at is not None, "archive")
    check(resource.delete(id).type == deleted, "delete")
    refused(lambda: resource.retrieve(id), anthropic.NotFoundError)


def new_agent(name: str):
    return beta.agents.create(name=name, model="claude-sonnet-5-5", system="[scenario:hello]")


@scenario
def agents_create_retrieve_update_list_archive() -> None:
    agent = new_agent("py-agent")
    check(agent.id.startswith("agent_"), f"agent id {agent.id}")
    check(beta.agents.retrieve(agent.id).name == "py-agent", "retrieve")
    updated = beta.agents.update(agent.id, version=agent.version, description="from python")
    check(updated.description == "from python" and updated.version == agent.version + 1, "update")
    check(agent.id in [a.id for a in beta.agents.list()], "list")
    archived = beta.agents.archive(agent.id)
    check(archived.archived_at is not None, "archive")
    check(agent.id not in [a.id for a in beta.agents.list()], "archived agents are not listed")


@scenario
def environments_create_update_archive_delete() -> None:
    env = beta.environments.create(name="py-env")
    check(env.id.startswith("env_"), f"environment id {env.id}")
    check(beta.environments.retrieve(env.id).name == "py-env", "retrieve")
    check(beta.environments.update(env.id, description="d").description == "d", "update")
    check(env.id in [e.id for e in beta.environments.list()], "list")
    archive_delete_gone(beta.environments, env.id, "environment_deleted")


@scenario
def sessions_events_send_list_stream() -> None:
    agent = new_agent("py-session")
    env = beta.environments.create(name="py-session-env")
    session = beta.sessions.create(agent=agent.id, environment_id=env.id, title="python")
    check(session.id.startswith("sesn_") and session.title == "python", "create")
    check(beta.sessions.retrieve(session.id).id == session.id, "retrieve")
    check(beta.sessions.update(session.id, title="renamed").title == "renamed", "update")
    check(session.id in [s.id for s in beta.sessions.list()], "list")
    stream = beta.sessions.events.stream(session.id)
    sent = beta.sessions.events.send(session.id, events=[{"type": "user.message", "content": [{"type": "text", "text": "hi"}]}])
    check([e.type for e in sent.data] == ["user.message"], "send answers the stored events")
    seen = []
    for event in stream:
        seen.append(event)
        if event.type == "session.status_idle":
            break
    stream.close()
    types = [e.type for e in seen]
    check(types[0] == "user.message" and types[-1] == "session.status_idle", f"stream: {types}")
    message = next(e for e in seen if e.type == "agent.message")
    check(message.content[0].text == "Hello from the offline model.", "the agent's message")
    check(seen[-1].stop_reason.type == "end_turn", "end_turn")
    listed = list(beta.sessions.events.list(session.id))
    # The update before the stream opened is in the log, not in the stream.
    check(listed[0].type == "session.updated" and listed[0].title == "renamed", "the update is a session.updated")
    check([e.id for e in listed[1:]] == [e.id for e in seen], "list has what the stream had, by id")
    check(all(e.id.startswith("sevt_") for e in listed), "sevt_ ids")
    check(all(not hasattr(e, "seq") or getattr(e, "seq", None) is None for e in listed), "no seq by default")
    threads = list(beta.sessions.threads.list(session.id))
    check(len(threads) == 1, "one thread")
    archive_delete_gone(beta.sessions, session.id, "session_deleted")


@scenario
def events_refuse_a_stray_answer() -> None:
    agent = new_agent("py-stray")
    env = beta.environments.create(name="py-stray-env")
    session = beta.sessions.create(agent=agent.id, environment_id=env.id)
    err = refused(
        lambda: beta.sessions.events.send(
            session.id,
            events=[{"type": "user.custom_tool_result", "custom_tool_use_id": "sevt_nothing", "content": [{"type": "text", "text": "x"}]}],
        ),
        anthropic.BadRequestError,
    )
    check("events[0].custom_tool_use_id" in str(err), f"names the field: {err}")
    check(list(beta.sessions.events.list(session.id)) == [], "stores nothing")


@scenario
def vaults_and_credentials() -> None:
    vault = beta.vaults.create(display_name="py-vault")
    check(vault.id.startswith("vlt_"), f"vault id {vault.id}")
    check(beta.vaults.retrieve(vault.id).display_name == "py-vault", "retrieve")
    check(beta.vaults.update(vault.id, display_name="renamed").display_name == "renamed", "update")
    check(vault.id in [v.id for v in beta.vaults.list()], "list")
    auth = {"type": "static_bearer", "mcp_server_url": "https://mcp.example.com/mcp", "token": "py-token-123"}
    credential = beta.vaults.credentials.create(vault.id, auth=auth, display_name="bearer")
    check(credential.id.startswith("vcrd_"), f"credential id {credential.id}")
    check(not hasattr(credential.auth, "token") or getattr(credential.auth, "token", None) is None, "the token is never shown")
    check(beta.vaults.credentials.retrieve(credential.id, vault_id=vault.id).display_name == "bearer", "retrieve")
    check(beta.vaults.credentials.update(credential.id, vault_id=vault.id, display_name="b2").display_name == "b2", "update")
    check([c.id for c in beta.vaults.credentials.list(vault.id)] == [credential.id], "list")
    check(beta.vaults.credentials.archive(credential.id, vault_id=vault.id).archived_at is not None, "credential archive")
    check(beta.vaults.credentials.delete(credential.id, vault_id=vault.id).type == "vault_credential_deleted", "credential delete")
    archive_delete_gone(beta.vaults, vault.id, "vault_deleted")


def main() -> int:
    passed = failed = 0
    for name, fn in SCENARIOS:
        try:
            fn()
            passed += 1
            print(f"ok - {name}", flush=True)
        except Exception:  # noqa: BLE001 - every failure is reported, then counted
            failed += 1
            print(f"FAIL - {name}", flush=True)
            traceback.print_exc(file=sys.stdout)
    print(f"python-sdk: {passed} passed, {failed} failed", flush=True)
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
