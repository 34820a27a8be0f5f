/**
 * The key-to-partition hash of Kafka's Java client (murmur2 over the key's utf-8 bytes), so the
 * in-process bus puts a key in the same partition as Kafka, kafkajs's DefaultPartitioner and any
 * Java producer would. A port of org.apache.kafka.common.utils.Utils#murmur2. The Kafka publisher
 * partitions with it too (kafka-partitioner.ts).
 */

const SEED = 0x9747b28c;
const M = 0x5bd1e995;

/** Java's murmur2 as a signed 32-bit integer. */
export function murmur2(data: Uint8Array): number {
  const length = data.length;
  let h = (SEED ^ length) | 0;
  const length4 = length >>> 2;
  for (let i = 0; i < length4; i++) {
    const i4 = i * 4;
    let k =
      (data[i4] ?? 0) |
      ((data[i4 + 1] ?? 0) << 8) |
      ((data[i4 + 2] ?? 0) << 16) |
      ((data[i4 + 3] ?? 0) << 24);
    k = Math.imul(k, M);
    k ^= k >>> 24;
    k = Math.imul(k, M);
    h = Math.imul(h, M) ^ k;
  }
  const tail = length & ~3;
  const rest = length & 3;
  if (rest === 3) h ^= (data[tail + 2] ?? 0) << 16;
  if (rest >= 2) h ^= (data[tail + 1] ?? 0) << 8;
  if (rest >= 1) {
    h ^= data[tail] ?? 0;
    h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
}

const utf8 = new TextEncoder();

/** The partition Kafka's default partitioner picks for a key: toPositive(murmur2) % partitions. */
export function partitionForKey(key: string, partitions: number): number {
  return (murmur2(utf8.encode(key)) & 0x7fffffff) % partitions;
}
