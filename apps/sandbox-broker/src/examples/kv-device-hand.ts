/**
 * An external hand that is not a sandbox: a key-value "device" offering kv_get, kv_set and
 * kv_list. It shows the whole contract a hand implements: open ConnectHand, register (kind,
 * hand_id, its tools described for a model), then answer each execute request with a result
 * carrying its call_id. A real hand (a phone, an emulator, a lab instrument) differs only in what
 * its tools do.
 */
import { randomBytes } from "node:crypto";
import type { ConnectHandRequest, ConnectHandResponse, HandTool } from "@metaharness/proto";
import { SandboxBrokerClient } from "@metaharness/proto";
import type { ChannelCredentials } from "@grpc/grpc-js";
import { createClient } from "@metaharness/service-kit/grpc";
import type { Logger } from "@metaharness/service-kit/logging";

export const KV_DEVICE_KIND = "kv-device";

const KEY = { type: "string", description: "The key." };
/** The device's tools as a model is offered them (ConnectHand's tool_specs). */
export const KV_TOOL_SPECS: readonly HandTool[] = [
  {
    name: "kv_get",
    description: "Read the value the device stores under a key.",
    inputSchema: { type: "object", properties: { key: KEY }, required: ["key"] },
  },
  {
    name: "kv_set",
    description: "Store a value under a key on the device, replacing any value it had.",
    inputSchema: { type: "object", properties: { key: KEY, value: { type: "string", description: "The value to store." } }, required: ["key", "value"] },
  },
  {
    name: "kv_list",
    description: "List the device's keys (one a line, sorted), optionally only those starting with a prefix.",
    inputSchema: { type: "object", properties: { prefix: { type: "string", description: "Only keys starting with this." } } },
  },
];

export interface KvDeviceOptions {
  /** The broker, "host:port". */
  readonly address: string;
  /** This hand's service token for the broker (a token the broker gives the role "hand"). */
  readonly token: string;
  readonly handId?: string;
  readonly logger?: Logger;
  /** TLS to the broker (loadGrpcTls's `client`); plaintext when omitted. */
  readonly credentials?: ChannelCredentials;
}

export interface KvDeviceHandle {
  readonly handId: string;
  /** The device's memory, for inspection. */
  readonly store: ReadonlyMap<string, string>;
  /** Settles when the stream ends, with why. */
  readonly closed: Promise<string>;
  /** Hangs up; the broker then reports this hand's sandboxes lost. */
  close(): void;
}

type Answer = { readonly output: string; readonly isError: boolean };

function text(input: Record<string, unknown> | undefined, key: string): string | undefined {
  const v = input?.[key];
  return typeof v === "string" ? v : undefined;
}

/** The device itself: one tool call in, one answer out. */
export function answer(store: Map<string, string>, name: string, input: Record<string, unknown> | undefined): Answer {
  switch (name) {
    case "kv_set": {
      const key = text(input, "key");
      const value = text(input, "value");
      if (key === undefined || value === undefined) return { output: "kv_set: key and value (strings) are required", isError: true };
      store.set(key, value);
      return { output: `stored ${key}`, isError: false };
    }
    case "kv_get": {
      const key = text(input, "key");
      if (key === undefined) return { output: "kv_get: key (a string) is required", isError: true };
      const value = store.get(key);
      return value === undefined ? { output: `kv_get: no key ${key}`, isError: true } : { output: value, isError: false };
    }
    case "kv_list": {
      const prefix = text(input, "prefix") ?? "";
      const keys = [...store.keys()].filter((k) => k.startsWith(prefix)).sort();
      return { output: keys.length === 0 ? "(no keys)" : keys.join("\n"), isError: false };
    }
    default:
      return { output: `unknown tool ${name}`, isError: true };
  }
}

export function startKvDevice(opts: KvDeviceOptions): KvDeviceHandle {
  const handId = opts.handId ?? `kv-${randomBytes(4).toString("hex")}`;
  const store = new Map<string, string>();
  const client = createClient(SandboxBrokerClient, opts.address, {
    bearerToken: opts.token,
    ...(opts.credentials === undefined ? {} : { credentials: opts.credentials }),
  });
  const call = client.connectHand();
  let resolveClosed!: (why: string) => void;
  const closed = new Promise<string>((resolve) => (resolveClosed = resolve));
  const finish = (why: string): void => {
    resolveClosed(why);
    client.close();
  };
  call.on("data", (req: ConnectHandResponse) => {
    const { output, isError } = answer(store, req.name, req.input);
    opts.logger?.debug({ call_id: req.callId, tool: req.name, sandbox_id: req.sandboxId, is_error: isError }, "kv call");
    const reply: ConnectHandRequest = { message: { $case: "result", value: { callId: req.callId, output, isError } } };
    call.write(reply);
  });
  call.on("end", () => finish("the broker ended the stream"));
  call.on("error", (err: Error) => finish(`the stream failed: ${err.message}`));
  const registration: ConnectHandRequest = {
    message: { $case: "register", value: { kind: KV_DEVICE_KIND, handId, tools: [], toolSpecs: [...KV_TOOL_SPECS] } },
  };
  call.write(registration);
  opts.logger?.info({ hand_id: handId, address: opts.address }, "kv device registering");
  return {
    handId,
    store,
    closed,
    close: () => {
      call.end();
      call.cancel();
    },
  };
}
