"""Analytics from Meta-Harness's Kafka topic, in Python: per tenant, token usage and each tool's
calls, errors and error rate, from `metaharness.session-events` (docs/kafka.md is the contract).

It does what any consumer of the topic does, as the TypeScript example
(apps/session-log/src/examples/usage-consumer.ts) does it, and prints the same lines:
- decodes each record's value, a protobuf `metaharness.v1.Event`, with classes generated from the
  repository's proto/ at start by grpcio-tools' protoc (nothing generated is kept in the repository);
- reads the tenant from the record's `mh-tenant` header ("" for a session without one);
- processes each session's events once: a record whose seq is at or below the last one processed
  for its session is a redelivery and is skipped; one beyond the next leaves a gap, printed as
  {"gap": {"session_id": ..., "from": ..., "to": ...}} (the log still has those events);
- prints {"tenant_usage": {...}} whenever a tenant's figures change;
- commits a record's offset only once it is processed (at least once, in a consumer group).
Its figures live in memory: a real one would store them with the last seqs, in one transaction.

Settings are the services' own (MH_KAFKA_BROKERS, MH_KAFKA_TOPIC, MH_KAFKA_TLS*, MH_KAFKA_SASL_*)
and MH_USAGE_GROUP, the consumer group. Run it with the virtualenv of infra/python-tools/up.sh:

    python=$(infra/python-tools/up.sh)
    MH_KAFKA_BROKERS=127.0.0.1:9092 "$python" examples/analytics-python/consumer.py
"""
import json
import os
import signal
import sys
import tempfile
from pathlib import Path

from confluent_kafka import Consumer, KafkaException

HERE = Path(__file__).resolve().parent
MECHANISMS = {"plain": "PLAIN", "scram-sha-256": "SCRAM-SHA-256", "scram-sha-512": "SCRAM-SHA-512"}


class SettingError(Exception):
    """A setting that is missing or wrong, named."""


def generate_classes(proto_dir: Path, out: Path) -> None:
    """protoc --python_out for every contract under proto_dir, with protobuf's own well-known types."""
    from importlib import resources

    from grpc_tools import protoc

    files = sorted(str(p.relative_to(proto_dir)) for p in proto_dir.rglob("*.proto"))
    well_known = resources.files("grpc_tools") / "_proto"
    args = ["protoc", f"-I{proto_dir}", f"-I{well_known}", f"--python_out={out}", *files]
    if protoc.main(args) != 0:
        raise SettingError(f"protoc could not generate Python classes from {proto_dir}")


def kafka_config(env: dict) -> dict:
    """confluent-kafka's settings from the services' variables (packages/event-bus/src/kafka-security.ts)."""
    config = {
        "bootstrap.servers": env.get("MH_KAFKA_BROKERS", "127.0.0.1:9092"),
        "group.id": env.get("MH_USAGE_GROUP", "metaharness-usage-python"),
        "auto.offset.reset": "earliest",
        # Offsets are stored once a record is processed, and committed in the background from those.
        "enable.auto.offset.store": False,
    }
    ca, cert, key = env.get("MH_KAFKA_TLS_CA_FILE"), env.get("MH_KAFKA_TLS_CERT_FILE"), env.get("MH_KAFKA_TLS_KEY_FILE")
    if (cert is None) != (key is None):
        raise SettingError("MH_KAFKA_TLS_CERT_FILE and MH_KAFKA_TLS_KEY_FILE go together")
    tls = env.get("MH_KAFKA_TLS") == "true" or ca is not None or cert is not None
    if ca is not None:
        config["ssl.ca.location"] = ca
    if cert is not None:
        config["ssl.certificate.location"], config["ssl.key.location"] = cert, key
    mechanism = env.get("MH_KAFKA_SASL_MECHANISM", "none")
    if mechanism == "none":
        config["security.protocol"] = "SSL" if tls else "PLAINTEXT"
        return config
    if mechanism not in MECHANISMS:
        raise SettingError(f"MH_KAFKA_SASL_MECHANISM={mechanism!r}: plain, scram-sha-256 or scram-sha-512")
    if mechanism == "plain" and not tls:
        raise SettingError("MH_KAFKA_SASL_MECHANISM=plain sends the password as is: set MH_KAFKA_TLS=true (or a CA file)")
    username, password_file = env.get("MH_KAFKA_SASL_USERNAME"), env.get("MH_KAFKA_SASL_PASSWORD_FILE")
    if username is None or password_file is None:
        raise SettingError("MH_KAFKA_SASL_USERNAME and MH_KAFKA_SASL_PASSWORD_FILE are needed with MH_KAFKA_SASL_MECHANISM")
    config["security.protocol"] = "SASL_SSL" if tls else "SASL_PLAINTEXT"
    config["sasl.mechanism"] = MECHANISMS[mechanism]
    config["sasl.username"] = username
    config["sasl.password"] = Path(password_file).read_text().strip()
    return config


class SeqTracker:
    """The last seq processed per session (@metaharness/events' SeqTracker): duplicates and gaps."""

    def __init__(self):
        self.last = {}

    def accept(self, session_id: str, seq: int):
        """("duplicate", None), ("gap", (from, to)) or ("next", None); a gap's seq is accepted."""
        last = self.last.get(session_id, 0)
        if seq <= last:
            return "duplicate", None
        self.last[session_id] = seq
        return ("gap", (last + 1, seq - 1)) if seq > last + 1 else ("next", None)


def empty_tenant(tenant: str) -> dict:
    return {
        "tenant": tenant,
        "sessions": 0,
        "sessions_terminated": 0,
        "model_requests": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "tools": {},
    }


class TenantBook:
    """Every tenant's figures: tenant-usage.ts of the TypeScript example, the same numbers."""

    def __init__(self):
        self.tenants = {}
        self.sessions = set()
        # Per session, the tool calls awaiting their result: tool use id -> tool name.
        self.pending = {}

    def count(self, tenant: str, event):
        """Counts an Event of a session of tenant; the tenant's figures when one changed, else None."""
        usage = self.tenants.setdefault(tenant, empty_tenant(tenant))
        changed = False
        if event.session_id not in self.sessions:
            self.sessions.add(event.session_id)
            usage["sessions"] += 1
            changed = True
        kind = event.WhichOneof("payload")
        payload = getattr(event, kind) if kind is not None else None
        if kind == "span_model_request_end":
            u = payload.model_usage
            usage["model_requests"] += 1
            usage["input_tokens"] += u.input_tokens
            usage["output_tokens"] += u.output_tokens
            usage["cache_creation_input_tokens"] += u.cache_creation_input_tokens
            usage["cache_read_input_tokens"] += u.cache_read_input_tokens
            changed = True
        elif kind in ("agent_tool_use", "agent_custom_tool_use", "agent_mcp_tool_use"):
            name = f"{payload.mcp_server_name}/{payload.name}" if kind == "agent_mcp_tool_use" else payload.name
            self.tool(usage, name)["calls"] += 1
            self.pending.setdefault(event.session_id, {})[event.id] = name
            changed = True
        elif kind in ("agent_tool_result", "agent_mcp_tool_result", "user_custom_tool_result"):
            use_id = {"agent_tool_result": "tool_use_id", "agent_mcp_tool_result": "mcp_tool_use_id", "user_custom_tool_result": "custom_tool_use_id"}[kind]
            waiting = self.pending.get(event.session_id, {})
            tool = self.tool(usage, waiting.pop(getattr(payload, use_id), "unknown"))
            tool["results"] += 1
            if payload.is_error:
                tool["errors"] += 1
            tool["error_rate"] = tool["errors"] / tool["results"]
            changed = True
        elif event.type == "session.status_terminated":
            usage["sessions_terminated"] += 1
            self.pending.pop(event.session_id, None)
            changed = True
        return usage if changed else None

    @staticmethod
    def tool(usage: dict, name: str) -> dict:
        return usage["tools"].setdefault(name, {"calls": 0, "results": 0, "errors": 0, "error_rate": 0})


def print_line(line: dict) -> None:
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


def main() -> int:
    env = dict(os.environ)
    try:
        config = kafka_config(env)
    except (SettingError, OSError) as err:
        print(f"usage-consumer (python) could not start: {err}", file=sys.stderr)
        return 1
    out = Path(env.get("MH_PROTO_OUT") or tempfile.mkdtemp(prefix="mh-proto-py-"))
    generate_classes(Path(env.get("MH_PROTO_DIR", str(HERE.parent.parent / "proto"))), out)
    sys.path.insert(0, str(out))
    from metaharness.v1 import event_pb2  # generated above

    topic = env.get("MH_KAFKA_TOPIC", "metaharness.session-events")
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    signal.signal(signal.SIGINT, lambda *_: stopping.append(True))
    consumer = Consumer(config)
    consumer.subscribe([topic])
    seqs, book = SeqTracker(), TenantBook()
    print(f"counting usage of {topic} as group {config['group.id']}", file=sys.stderr)
    try:
        while not stopping:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error() is not None:
                if msg.error().fatal():
                    raise KafkaException(msg.error())
                continue
            event = event_pb2.Event.FromString(msg.value())
            session_id = msg.key().decode() if msg.key() is not None else event.session_id
            verdict, gap = seqs.accept(session_id, event.seq)
            if verdict != "duplicate":
                if verdict == "gap":
                    print_line({"gap": {"session_id": session_id, "from": gap[0], "to": gap[1]}})
                headers = dict(msg.headers() or [])
                tenant = headers.get("mh-tenant", b"").decode()
                figures = book.count(tenant, event)
                if figures is not None:
                    print_line({"tenant_usage": figures})
            consumer.store_offsets(message=msg)
    finally:
        consumer.close()  # commits the stored offsets, leaves the group
    return 0


if __name__ == "__main__":
    sys.exit(main())
