/**
 * The metaharness.v1.SessionLog gRPC service: request validation and mapping onto the store.
 * Everything that touches Postgres lives in store/; everything about live delivery in watch/.
 */
import type { UntypedServiceImplementation } from "@grpc/grpc-js";
import { MhError, invalidArgument } from "@metaharness/errors";
import { isEventType, isValidSessionId, newSessionId, requireSessionId, SESSION_ID_RULE, validateEventForAppend, type ValidatedEvent } from "@metaharness/events";
import {
  LeaseRenewal_Outcome,
  SessionLogService,
  SessionMetadata,
  type Event,
  type EventDelta,
  type GetEventsRequest,
  type SessionLogServer,
} from "@metaharness/proto";
import { currentTraceContext } from "@metaharness/telemetry";
import type { handleUnaryCall } from "@grpc/grpc-js";
import { guardedServerStream, guardedUnary, type Guard, type GuardedContext } from "@metaharness/service-kit/auth";
import type { Logger } from "@metaharness/service-kit/logging";
import { BROKER_EVENT_TYPES, POLICY, type Role, type RpcName } from "./auth/policy.js";
import type { Db } from "@metaharness/db";
import { checkDeltas, checkMetadataEnums, checkNothingAfterTermination, checkTenant, checkText } from "./checks.js";
import type { AppendResult } from "./store/append.js";
import { Appender } from "./store/appender.js";
import { checkRepositories, updateSession } from "./store/repositories.js";
import { createSession, getSession, listSessions } from "./store/sessions.js";
import { DEFAULT_SLICE, MAX_SLICE, readStoredSlice, type SliceRequest } from "./store/read.js";
import { storedAcquireLeaseResponse, storedEmitEventResponse, storedEmitEventsResponse, storedGetEventsResponse } from "./stored-wire.js";
import { acquireLease, checkHolder, checkLeaseTtlWithAppend, releaseLease, renewLease } from "./store/leases.js";
import { renewLeases } from "./store/renew-leases.js";
import type { HolderLines } from "./holders/lines.js";
import { watchEvents } from "./watch/watch.js";
import { EVENTS_CHANNEL, type AppendHub } from "./watch/hub.js";
import type { DeltaHub } from "./watch/deltas.js";
import type { LeaseNews } from "./watch/lease-news.js";
import { DeltaGate } from "./watch/delta-gate.js";

export const MAX_BATCH = 1000;
export const MAX_DELTAS = 100;
export const MAX_DELTA_TEXT_BYTES = 64 * 1024;
/** AcquireLease returns a session's events when it has at most this many (AcquireLeaseResponse.events). */
export const LEASE_EVENTS = 100;

export interface ServiceDeps {
  readonly db: Db;
  readonly hub: AppendHub;
  readonly deltas: DeltaHub;
  /** What this instance's answers say of leases, for the watches that end with one. */
  readonly leases: LeaseNews;
  /** The holders' lines (HoldLeases): leases freed when a holder dies, and freed sessions announced. */
  readonly lines: HolderLines;
  readonly logger: Logger;
  /** The service tokens it accepts; every RPC checks its caller's role against auth/policy.ts. */
  readonly guard: Guard<Role>;
  readonly maxPayloadBytes: number;
  readonly watchRecheckMs: number;
  /** Appends waiting for a batch beyond this are refused with RESOURCE_EXHAUSTED. */
  readonly appendMaxQueued: number;
}

export function sessionLogService(deps: ServiceDeps): UntypedServiceImplementation {
  const { db, hub, leases, logger } = deps;
  const rpc = <Req, Res>(name: Exclude<RpcName, "watchEvents" | "holdLeases">, fn: (req: Req, ctx: GuardedContext<Role>) => Promise<Res>): handleUnaryCall<Req, Res> =>
    guardedUnary(SessionLogService[name].path.slice(1), deps.guard, POLICY[name], fn);
  // Alone, an instance NOTIFYs no one of its appends: its own listener would only skip them.
  const appender = new Appender(db, () => ({ channel: deps.deltas.alone ? null : EVENTS_CHANNEL, prefix: hub.payloads.prefix }), deps.appendMaxQueued);
  const deltaGate = new DeltaGate(db);

  const prepare = (sessionId: string, event: Event | undefined, field: string): ValidatedEvent => {
    if (event === undefined) throw invalidArgument(field, "required");
    if (event.sessionId !== "" && event.sessionId !== sessionId) {
      throw invalidArgument(`${field}.session_id`, `is ${event.sessionId} but the request is for ${sessionId}`);
    }
    // Encoded once, here, without the fields the log sets: the append adds session_id and
    // created_at after these bytes and the seq after those (store/append.ts).
    const traceContext = event.traceContext?.traceparent ? event.traceContext : currentTraceContext();
    const unset = { ...event, traceContext, sessionId: "", seq: 0, createdAt: undefined };
    return validateEventForAppend(unset, { maxPayloadBytes: deps.maxPayloadBytes, field });
  };

  const append = async (
    sessionId: string,
    events: ValidatedEvent[],
    expectedSeq: number | undefined,
    leaseEpoch: number | undefined,
    leaseTtlMs?: number,
  ): Promise<AppendResult> => {
    const result = await appender.append({ sessionId, events, expectedSeq, leaseEpoch, leaseTtlMs });
    // All new: they are the session's events up to lastSeq, which watchers here take as they are.
    if (result.duplicates === 0) hub.publish(sessionId, result.lastSeq, { events: result.events, bodies: result.bodies, leaseEpoch });
    else if (result.duplicates < events.length) hub.publish(sessionId, result.lastSeq);
    if (events.some((v) => v.event.type === "session.status_terminated")) deltaGate.terminated(sessionId);
    else if (result.duplicates < events.length) deltaGate.appended(sessionId);
    leases.tell(sessionId, { epoch: leaseEpoch, leftMs: result.leaseLeftMs });
    return result;
  };

  /** Token deltas to the session's watchers (PublishDeltas, or an append's `deltas`), within the call's limits. */
  const publish = async (sessionId: string, raw: readonly EventDelta[]): Promise<void> => {
    if (raw.length > MAX_DELTAS) throw invalidArgument("deltas", `at most ${MAX_DELTAS} per call`);
    const bytes = raw.reduce((n, d) => n + Buffer.byteLength(d.text), 0);
    if (bytes > MAX_DELTA_TEXT_BYTES) throw invalidArgument("deltas", `at most ${MAX_DELTA_TEXT_BYTES} bytes of text per call`);
    const deltas = checkDeltas(raw, sessionId);
    await deltaGate.check(sessionId);
    await deps.deltas.publish(deltas);
  };

  const impl: SessionLogServer = {
    createSession: rpc("createSession", async (req) => {
      if (req.sessionId !== "" && !isValidSessionId(req.sessionId)) {
        throw invalidArgument("session_id", SESSION_ID_RULE);
      }
      const metadata = req.metadata ?? SessionMetadata.fromPartial({});
      checkText(metadata, "metadata");
      checkTenant(metadata.tenant, "metadata.tenant");
      checkRepositories(metadata.repositories, "metadata.repositories");
      checkMetadataEnums(metadata, "metadata");
      const sessionId = req.sessionId || newSessionId();
      // Its head (0) is known here from now on: a watch of it from 0 starts without a read (watch/heads.ts).
      return { session: await hub.learnHead(sessionId, () => createSession(db, sessionId, metadata), (s) => s.lastSeq) };
    }),

    updateSession: rpc("updateSession", async (req) => {
      const sessionId = requireSessionId(req.sessionId);
      checkText(req, "");
      checkMetadataEnums({ agent: req.agent, environment: undefined }, "");
      const session = await updateSession(db, sessionId, {
        putRepositories: req.putRepositories,
        removeRepositories: req.removeRepositories,
        agent: req.agent,
        archive: req.archive,
      });
      logger.info(
        {
          session_id: sessionId,
          put: req.putRepositories.map((r) => r.resourceId),
          removed: req.removeRepositories,
          agent_changed: req.agent !== undefined,
          archived: req.archive === true,
        },
        "session changed",
      );
      return { session };
    }),

    getSession: rpc("getSession", async (req, ctx) => {
      const session = await getSession(db, requireSessionId(req.sessionId));
      // The broker, which runs untrusted code, needs a session's status, not its agent's
      // configuration, vaults or repositories.
      return { session: ctx.caller.role === "broker" ? { ...session, metadata: undefined } : session };
    }),

    listSessions: rpc("listSessions", async (req) => {
      checkText(req, "");
      return listSessions(db, {
        pageSize: req.pageSize,
        pageToken: req.pageToken,
        tenant: req.tenant,
        status: req.status,
        labels: req.labels,
        orphaned: req.orphaned,
      });
    }),

    emitEvent: rpc("emitEvent", async (req, ctx) => {
      const sessionId = requireSessionId(req.sessionId);
      const valid = prepare(sessionId, req.event, "event");
      const { type } = valid.event;
      if (ctx.caller.role === "broker" && !BROKER_EVENT_TYPES.has(type)) {
        throw new MhError("PERMISSION_DENIED", `${ctx.caller.name} (role broker) may not append ${type} events`, { field: "event.type" });
      }
      const result = await append(sessionId, [valid], req.expectedSeq, req.leaseEpoch);
      const [stored, body] = [result.events[0], result.bodies[0]];
      if (stored === undefined || body === undefined) throw new MhError("INTERNAL", "the append returned no event");
      return storedEmitEventResponse(stored, body, result.duplicates > 0);
    }),

    emitEvents: rpc("emitEvents", async (req) => {
      const sessionId = requireSessionId(req.sessionId);
      if (req.events.length === 0) throw invalidArgument("events", "at least one event is required");
      if (req.events.length > MAX_BATCH) throw invalidArgument("events", `at most ${MAX_BATCH} events per batch`);
      const seen = new Map<string, number>();
      const events = req.events.map((e, i) => {
        const valid = prepare(sessionId, e, `events[${i}]`);
        const first = seen.get(valid.event.id);
        if (first !== undefined) throw invalidArgument(`events[${i}].id`, `repeats events[${first}].id`);
        seen.set(valid.event.id, i);
        return valid;
      });
      checkNothingAfterTermination(events.map((v) => v.event));
      if (req.leaseTtlMs !== undefined) checkLeaseTtlWithAppend(req.leaseTtlMs, req.leaseEpoch);
      // The last deltas of a response, ahead of its events: watchers see them first, as after a PublishDeltas.
      if (req.deltas !== undefined && req.deltas.deltas.length > 0) await publish(sessionId, req.deltas.deltas);
      const result = await append(sessionId, events, req.expectedSeq, req.leaseEpoch, req.leaseTtlMs);
      return storedEmitEventsResponse(result.events, result.bodies, result.duplicates, result.leaseLeftMs);
    }),

    getEvents: rpc("getEvents", async (req) => {
      const slice = await readStoredSlice(db, sliceRequest(req));
      return storedGetEventsResponse(slice.bodies, slice.lastSeq, slice.hasMore);
    }),

    watchEvents: guardedServerStream(SessionLogService.watchEvents.path.slice(1), deps.guard, POLICY.watchEvents, async (req, stream) => {
      const sessionId = requireSessionId(req.sessionId);
      checkTypes(req.types);
      if (req.endWithLease === true && req.exceptLeaseEpoch === undefined) throw invalidArgument("end_with_lease", "needs except_lease_epoch, the lease it ends with");
      // The watch's first read fails fast with NOT_FOUND instead of waiting for a session that
      // does not exist, and with OUT_OF_RANGE for a position it has not reached (watch.ts).
      await watchEvents(
        { db, hub, deltas: deps.deltas, leases, recheckMs: deps.watchRecheckMs },
        {
          sessionId,
          afterSeq: req.afterSeq,
          types: req.types,
          includeDeltas: req.includeDeltas,
          batchDeltas: req.batchDeltas,
          fromHead: req.fromHead,
          exceptLeaseEpoch: req.exceptLeaseEpoch,
          endWithLease: req.endWithLease,
        },
        (item) => stream.writeOrWait(item),
        stream.signal,
      );
    }),

    publishDeltas: rpc("publishDeltas", async (req) => {
      await publish(requireSessionId(req.sessionId), req.deltas);
      return {};
    }),

    acquireLease: rpc("acquireLease", async (req) => {
      const sessionId = requireSessionId(req.sessionId);
      // The row it returns is the session's latest (it holds the row's lock): its head, from which the holder's follow starts.
      const { lease, session, events } = await hub.learnHead(
        sessionId,
        () => acquireLease(db, sessionId, req.holder, req.ttlMs, LEASE_EVENTS),
        (r) => r.session.lastSeq,
      );
      // A later epoch ends the watches that end with an earlier one; the same one runs on.
      leases.tell(sessionId, { epoch: lease.epoch, leftMs: req.ttlMs });
      // A short session's whole log: the harness's first step needs no read of its own. Read by
      // the lease's statement when its snapshot held every event; else (an earlier holder's last
      // append committed while the lease was taken) read now, after the lease, so that append is
      // in it, or fenced.
      if (session.lastSeq > LEASE_EVENTS) return storedAcquireLeaseResponse(lease, session, []);
      if (events !== undefined) return storedAcquireLeaseResponse(lease, session, events);
      const slice = await readStoredSlice(db, { sessionId, direction: "after", position: 0, limit: LEASE_EVENTS, types: [] });
      if (slice.hasMore) return storedAcquireLeaseResponse(lease, session, []);
      return storedAcquireLeaseResponse(lease, { ...session, lastSeq: slice.lastSeq }, slice.bodies);
    }),

    renewLease: rpc("renewLease", async (req) => {
      const sessionId = requireSessionId(req.sessionId);
      const lease = await renewLease(db, sessionId, req.holder, req.epoch, req.ttlMs).catch((err: unknown) => {
        // Refused (another holds the session, or nobody): the epoch is over, as RenewLeases' refusals say.
        if (err instanceof MhError && err.code === "ABORTED") leases.tell(sessionId, { epoch: req.epoch, leftMs: 0 });
        throw err;
      });
      leases.tell(sessionId, { epoch: req.epoch, leftMs: req.ttlMs });
      return { lease };
    }),

    renewLeases: rpc("renewLeases", async (req) => {
      const renewals = await renewLeases(db, req.holder, req.ttlMs, req.leases);
      // In the request's order: a refused one's epoch (another holds the session, or nobody) is over.
      renewals.forEach((r, i) => {
        const epoch = req.leases[i]?.epoch;
        if (epoch === undefined) return;
        if (r.outcome === LeaseRenewal_Outcome.OUTCOME_RENEWED) leases.tell(r.sessionId, { epoch, leftMs: req.ttlMs });
        else if (r.outcome === LeaseRenewal_Outcome.OUTCOME_ABORTED) leases.tell(r.sessionId, { epoch, leftMs: 0 });
      });
      return { renewals };
    }),

    releaseLease: rpc("releaseLease", async (req) => {
      const sessionId = requireSessionId(req.sessionId);
      const { needsHarness } = await releaseLease(db, sessionId, req.holder, req.epoch);
      leases.tell(sessionId, { epoch: req.epoch, leftMs: 0 });
      // Given back mid-turn (its harness is shutting down): another takes it over now, not at its next sweep.
      if (needsHarness) deps.lines.announce([sessionId]);
      return {};
    }),

    holdLeases: guardedServerStream(SessionLogService.holdLeases.path.slice(1), deps.guard, POLICY.holdLeases, async (req, stream) => {
      checkHolder(req.holder);
      await deps.lines.hold(req.holder, stream);
    }),
  };
  return impl;
}

function checkTypes(types: readonly string[]): void {
  types.forEach((t, i) => {
    if (!isEventType(t)) throw invalidArgument(`types[${i}]`, `unknown event type "${t}"`);
  });
}

function sliceRequest(req: GetEventsRequest): SliceRequest {
  const sessionId = requireSessionId(req.sessionId);
  if (req.limit > MAX_SLICE) throw invalidArgument("limit", `at most ${MAX_SLICE}, got ${req.limit}`);
  checkTypes(req.types);
  const limit = req.limit === 0 ? DEFAULT_SLICE : req.limit;
  if (req.position?.$case === "beforeSeq") {
    if (req.position.value < 1) throw invalidArgument("before_seq", "must be at least 1");
    return { sessionId, direction: "before", position: req.position.value, limit, types: req.types };
  }
  return { sessionId, direction: "after", position: req.position?.value ?? 0, limit, types: req.types };
}
