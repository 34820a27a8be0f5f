/**
 * Outbox shards. Every session's outbox rows carry shard = fnv1a(session_id) mod OUTBOX_SHARDS;
 * a relay instance publishes whole shards it holds an advisory lock on, so one session is only
 * ever published by one relay at a time, in seq order. Changing OUTBOX_SHARDS needs every relay
 * stopped first. The append writes the shard (store/append.ts), the relay reads by it
 * (outbox/relay.ts), so it lives with the store.
 */
export const OUTBOX_SHARDS = 32;

export function shardOf(sessionId: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < sessionId.length; i++) {
    hash ^= sessionId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % OUTBOX_SHARDS;
}
