/**
 * Event and session ids. Generated ids are ULIDs (48-bit millisecond time, then 80 random bits,
 * Crockford base32) behind a prefix, so they sort by creation time as strings. Within one process
 * ids are strictly increasing: in the same millisecond (or if the clock steps back) the random
 * part of the previous id is incremented instead of drawn again, as in the ULID spec.
 */
import { randomBytes } from "node:crypto";
import { invalidArgument } from "@metaharness/errors";

export const EVENT_ID_PREFIX = "sevt_";
export const SESSION_ID_PREFIX = "sesn_";

/** Client-chosen event ids: 1..128 of [A-Za-z0-9._:-], any prefix. */
export const MAX_EVENT_ID_LENGTH = 128;
const EVENT_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const SESSION_ID = /^sesn_[A-Za-z0-9_-]{1,64}$/;

const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/;
const MAX_TIME = 2 ** 48 - 1;
/** The 80 random bits are two 40-bit halves: exact in a double, where BigInt arithmetic per id cost more than the rest of an append's bookkeeping. */
const HALF = 2 ** 40;

let lastTime = -1;
let lastHigh = 0;
let lastLow = 0;

/** Random bytes drawn 4 KiB at a time: a draw from the system per id was most of an id's cost. */
const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let poolAt = 0;

function drawRandom(): void {
  if (poolAt + 10 > pool.length) {
    pool = randomBytes(POOL_BYTES);
    poolAt = 0;
  }
  lastHigh = pool[poolAt]! * 2 ** 32 + pool.readUInt32BE(poolAt + 1);
  lastLow = pool[poolAt + 5]! * 2 ** 32 + pool.readUInt32BE(poolAt + 6);
  poolAt += 10;
}

/** `value`'s `chars` last base32 digits, most significant first. */
function base32(value: number, chars: number): string {
  let out = "";
  for (let i = 0; i < chars; i++) {
    out = CROCKFORD.charAt(value % 32) + out;
    value = Math.floor(value / 32);
  }
  return out;
}

function ulid(now: number): string {
  let time = Math.min(Math.max(Math.floor(now), 0), MAX_TIME);
  if (time <= lastTime) {
    time = lastTime;
    lastLow += 1;
    if (lastLow === HALF) {
      lastLow = 0;
      lastHigh += 1;
    }
    if (lastHigh === HALF) {
      // 2^80 ids in one millisecond: borrow the next millisecond rather than repeat an id.
      time += 1;
      drawRandom();
    }
  } else {
    drawRandom();
  }
  lastTime = time;
  // 26 characters of 5 bits: the time's 48 (10 characters, the top 2 bits zero), then 40 + 40 random bits.
  return base32(time, 10) + base32(lastHigh, 8) + base32(lastLow, 8);
}

/** "sevt_" + a 26-character ULID. */
export function newEventId(now: number = Date.now()): string {
  return EVENT_ID_PREFIX + ulid(now);
}

/** "sesn_" + a 26-character ULID. */
export function newSessionId(now: number = Date.now()): string {
  return SESSION_ID_PREFIX + ulid(now);
}

/** The creation time (ms since the epoch) of a generated id, or undefined if it is not one. */
export function timeOfId(id: string): number | undefined {
  const body = id.slice(id.indexOf("_") + 1);
  if (!ULID.test(body)) return undefined;
  let time = 0;
  for (const char of body.slice(0, 10)) time = time * 32 + CROCKFORD.indexOf(char);
  return time <= MAX_TIME ? time : undefined;
}

export function isValidEventId(id: unknown): id is string {
  return typeof id === "string" && EVENT_ID.test(id);
}

export function isValidSessionId(id: unknown): id is string {
  return typeof id === "string" && SESSION_ID.test(id);
}

/** What a session id must look like, as a refusal says it. */
export const SESSION_ID_RULE = 'must be "sesn_" followed by 1-64 of [A-Za-z0-9_-]';

/** `sessionId` when it is one; INVALID_ARGUMENT naming `field` when it is empty or malformed. */
export function requireSessionId(sessionId: string, field = "session_id"): string {
  if (sessionId === "") throw invalidArgument(field, "required");
  if (!isValidSessionId(sessionId)) throw invalidArgument(field, SESSION_ID_RULE);
  return sessionId;
}

/**
 * The id of the event recording content block `blockIndex` of the model response whose
 * span.model_request_start is `modelRequestId`. Deterministic, so a client that saw the block
 * stream as deltas can match the stored event, and a re-appended response is deduplicated.
 */
export function contentBlockEventId(modelRequestId: string, blockIndex: number): string {
  return `${modelRequestId}.block${blockIndex}`;
}
