/**
 * The publisher's partitioner picks what kafkajs's DefaultPartitioner picks: a message's own
 * partition, the key's (string or bytes) murmur2, and for a message without a key one of the
 * partitions.
 */
import kafkajs from "kafkajs";
import { describe, expect, it } from "vitest";
import { keyPartitioner } from "./kafka-partitioner.js";

const metadata = (partitions: number) =>
  Array.from({ length: partitions }, (_, partitionId) => ({ partitionId, leader: 0, replicas: [0], isr: [0], partitionErrorCode: 0 }));

describe("keyPartitioner", () => {
  it("picks the partition kafkajs's DefaultPartitioner picks, for keys as strings and as bytes, and a message's own", () => {
    const ours = keyPartitioner();
    const theirs = kafkajs.Partitioners.DefaultPartitioner();
    const keys = ["", "a", "sesn_01JXYZ", "ünïcødé-✓", "🙂🙃", ...Array.from({ length: 300 }, (_, i) => `sesn_${i * 7919}`)];
    for (const partitions of [1, 3, 12, 50]) {
      const partitionMetadata = metadata(partitions);
      for (const key of keys) {
        for (const k of [key, Buffer.from(key)]) {
          const args = { topic: "t", partitionMetadata, message: { key: k, value: null } };
          expect(ours(args), `key ${JSON.stringify(key)} over ${partitions}`).toBe(theirs(args));
        }
      }
      expect(ours({ topic: "t", partitionMetadata, message: { key: "k", value: null, partition: partitions - 1 } })).toBe(partitions - 1);
      const keyless = ours({ topic: "t", partitionMetadata, message: { value: null } });
      expect(keyless).toBeGreaterThanOrEqual(0);
      expect(keyless).toBeLessThan(partitions);
    }
  });
});
