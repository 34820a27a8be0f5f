/**
 * The Kafka publisher's partitioner: kafkajs's DefaultPartitioner (a message's own partition, else
 * the key's murmur2, else round robin) with the key hashed by murmur2.ts. kafkajs's murmur2 does
 * its 32-bit arithmetic with Long objects, a dozen allocations a message (about 4% of what the
 * session log allocated per text-only turn, issue 31); the partitions are the same
 * (kafka-partitioner.test.ts). A message without a key goes to kafkajs's own.
 */
import kafkajs from "kafkajs";
import type { ICustomPartitioner } from "kafkajs";
import { murmur2 } from "./murmur2.js";

const utf8 = new TextEncoder();

export const keyPartitioner: ICustomPartitioner = () => {
  const keyless = kafkajs.Partitioners.DefaultPartitioner();
  return (args) => {
    const { message, partitionMetadata } = args;
    if (message.partition !== null && message.partition !== undefined) return message.partition;
    const key = message.key;
    if (key === null || key === undefined) return keyless(args);
    const hash = typeof key === "string" ? murmur2(utf8.encode(key)) : murmur2(key);
    return (hash & 0x7fffffff) % partitionMetadata.length;
  };
};
