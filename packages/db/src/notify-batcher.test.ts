/**
 * NotifyBatcher.sent(): what a writer waits for before its next step must reach other instances
 * after its items (a message after its last token deltas). It resolves once the NOTIFY carrying
 * the items enqueued so far was sent, or failed, and items enqueued later do not hold it.
 */
import { describe, expect, it } from "vitest";
import { createLogger } from "@metaharness/service-kit/logging";
import type { Db } from "./db.js";
import { NotifyBatcher } from "./notify-batcher.js";

/** A database whose NOTIFYs the test completes (or fails) one at a time, recording their items. */
function notifyRecorder() {
  const sent: string[][] = [];
  const finish: Array<(ok: boolean) => void> = [];
  const db = {
    query: (_sql: string, params: [string, string]) => {
      sent.push(params[1].slice(params[1].indexOf("|") + 1).split(";"));
      return new Promise((resolve, reject) => finish.push((ok) => (ok ? resolve({ rows: [] }) : reject(new Error("connection lost")))));
    },
  } as unknown as Db;
  return { db, sent, finish };
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Whether `p` has settled by now. */
async function settled(p: Promise<void>): Promise<boolean> {
  let done = false;
  void p.then(() => (done = true));
  await tick();
  return done;
}

describe("NotifyBatcher.sent", () => {
  it("resolves once the items enqueued so far went out, not waiting for later ones", async () => {
    const r = notifyRecorder();
    const b = new NotifyBatcher(r.db, "mh_test", createLogger({ service: "test", level: "silent" }));
    b.enqueue("a");
    b.enqueue("b");
    const both = b.sent();
    expect(r.sent).toEqual([["a"]]);
    r.finish.shift()?.(true);
    await tick();
    // "a" is out; "b" goes in the next NOTIFY, and the wait is for it too.
    expect(r.sent).toEqual([["a"], ["b"]]);
    expect(await settled(both)).toBe(false);
    b.enqueue("c");
    r.finish.shift()?.(true);
    expect(await settled(both)).toBe(true);
    // "c", enqueued after the wait began, is still in flight.
    expect(r.sent).toEqual([["a"], ["b"], ["c"]]);
    const third = b.sent();
    expect(await settled(third)).toBe(false);
    // A NOTIFY that fails ends the wait too (it is logged; other instances re-check).
    r.finish.shift()?.(false);
    expect(await settled(third)).toBe(true);
    expect(await settled(b.sent())).toBe(true);
    await b.flush();
  });
});
