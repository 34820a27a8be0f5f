/**
 * Peers: an instance is alone only once it is sure (its listener up a TTL) and has heard no other
 * instance for a TTL; a listener that is away or reconnected makes it unsure.
 */
import { describe, expect, it } from "vitest";
import { Peers } from "./peers.js";

describe("Peers", () => {
  it("is not alone until it has listened a TTL without hearing another instance", () => {
    let now = 0;
    const peers = new Peers(100, () => now);
    expect(peers.alone).toBe(false);
    now = 99;
    expect(peers.alone).toBe(false);
    now = 100;
    expect(peers.alone).toBe(true);
  });

  it("is not alone for a TTL after each announcement of another instance", () => {
    let now = 200;
    const peers = new Peers(100, () => now);
    now = 300;
    expect(peers.alone).toBe(true);
    peers.heard();
    expect(peers.alone).toBe(false);
    now = 399;
    expect(peers.alone).toBe(false);
    now = 400;
    expect(peers.alone).toBe(true);
  });

  it("is unsure, so not alone, for a TTL after its listener came back", () => {
    let now = 0;
    const peers = new Peers(100, () => now);
    now = 500;
    expect(peers.alone).toBe(true);
    peers.unsure();
    expect(peers.alone).toBe(false);
    now = 600;
    expect(peers.alone).toBe(true);
  });

  it("is not alone while its listener is away, however long, nor for a TTL after it is back", () => {
    let now = 0;
    const peers = new Peers(100, () => now);
    now = 500;
    expect(peers.alone).toBe(true);
    peers.away();
    now = 10_000;
    expect(peers.alone).toBe(false);
    peers.unsure();
    now = 10_099;
    expect(peers.alone).toBe(false);
    now = 10_100;
    expect(peers.alone).toBe(true);
  });
});
