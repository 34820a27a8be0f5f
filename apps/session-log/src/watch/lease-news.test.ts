/**
 * LeaseNews and leaseAfter: a watch that ends with the lease of an epoch hears only what is told
 * after it subscribed; a later epoch, or a lease no longer held, ends it; the same epoch moves its
 * end; an earlier epoch, or a held lease the answer did not name, says nothing of it.
 */
import { describe, expect, it } from "vitest";
import { LeaseNews, leaseAfter, type LeaseFact } from "./lease-news.js";

describe("leaseAfter", () => {
  it("reads each fact against the watch's epoch", () => {
    const now = 1_000;
    expect(leaseAfter(3, { epoch: 3, leftMs: 600 }, now)).toBe(1_600);
    expect(leaseAfter(3, { epoch: 3, leftMs: 0 }, now)).toBe("over");
    expect(leaseAfter(3, { epoch: 4, leftMs: 30_000 }, now)).toBe("over");
    expect(leaseAfter(3, { epoch: 2, leftMs: 0 }, now)).toBeUndefined();
    expect(leaseAfter(3, { epoch: undefined, leftMs: 0 }, now)).toBe("over");
    expect(leaseAfter(3, { epoch: undefined, leftMs: 900 }, now)).toBeUndefined();
  });
});

describe("LeaseNews", () => {
  it("tells a session's subscribers from their subscription on, and no one after they leave", () => {
    const news = new LeaseNews();
    news.tell("s", { epoch: 1, leftMs: 0 });
    const heard: LeaseFact[] = [];
    const stop = news.subscribe("s", (f) => heard.push(f));
    news.tell("other", { epoch: 1, leftMs: 0 });
    news.tell("s", { epoch: 1, leftMs: 500 });
    stop();
    news.tell("s", { epoch: 2, leftMs: 500 });
    expect(heard).toEqual([{ epoch: 1, leftMs: 500 }]);
  });
});
