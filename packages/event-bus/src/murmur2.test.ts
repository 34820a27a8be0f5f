/**
 * Our murmur2 must hash like Kafka's Java client (the vectors of Kafka's UtilsTest#testMurmur2)
 * and pick the same partitions as kafkajs's DefaultPartitioner, or the in-process bus would order
 * and split keys differently from Kafka.
 */
import kafkajs from "kafkajs";
import { describe, expect, it } from "vitest";
import { murmur2, partitionForKey } from "./murmur2.js";

const utf8 = new TextEncoder();

describe("murmur2", () => {
  it.each([
    ["21", -973932308],
    ["foobar", -790332482],
    ["a-little-bit-long-string", -985981536],
    ["a-little-bit-longer-string", -1486304829],
    ["lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971],
    ["abc", 479470107],
  ])("hashes %j as Java does", (input, expected) => {
    expect(murmur2(utf8.encode(input))).toBe(expected);
  });

  it("picks the partition kafkajs's DefaultPartitioner picks, for any key", () => {
    const partitioner = kafkajs.Partitioners.DefaultPartitioner();
    const keys = ["", "a", "ab", "abc", "session-1", "ünïcødé-✓", "🙂🙃", ...Array.from({ length: 500 }, (_, i) => `key-${i * 7919}`)];
    for (const partitions of [1, 3, 7, 12, 50]) {
      const partitionMetadata = Array.from({ length: partitions }, (_, partitionId) => ({
        partitionId,
        leader: 0,
        replicas: [0],
        isr: [0],
        partitionErrorCode: 0,
      }));
      for (const key of keys) {
        const theirs = partitioner({ topic: "t", partitionMetadata, message: { key, value: null } });
        expect(partitionForKey(key, partitions), `key ${JSON.stringify(key)} over ${partitions}`).toBe(theirs);
      }
    }
  });
});
