/** ManualClock (the tests' Clock): timers run in time order as time is moved, those they set too, and a cleared one never. */
import { describe, expect, it } from "vitest";
import { ManualClock } from "../testing.js";
import { systemClock } from "./clock.js";

describe("ManualClock", () => {
  it("runs the timers due, in time order (then in the order set), each at its own time", async () => {
    const clock = new ManualClock(1_000);
    const ran: string[] = [];
    const at = (name: string) => () => ran.push(`${name}@${clock.now()}`);
    clock.setTimeout(at("b"), 20);
    clock.setTimeout(at("a"), 10);
    clock.setTimeout(at("a2"), 10);
    clock.setTimeout(at("late"), 100);
    const cleared = clock.setTimeout(at("cleared"), 5);
    clock.clearTimeout(cleared);
    await clock.advance(50);
    expect(ran).toEqual(["a@1010", "a2@1010", "b@1020"]);
    expect(clock.now()).toBe(1_050);
    await clock.advance(50);
    expect(ran.at(-1)).toBe("late@1100");
  });

  it("runs what a timer sets, and what a settled promise goes on to, within the same advance", async () => {
    const clock = new ManualClock();
    const ran: number[] = [];
    const again = (): void => {
      ran.push(clock.now());
      void Promise.resolve().then(() => clock.setTimeout(again, 30));
    };
    clock.setTimeout(again, 30);
    await clock.advance(100);
    expect(ran).toEqual([30, 60, 90]);
  });
});

describe("systemClock", () => {
  it("reads the time the system does", () => {
    const before = Date.now();
    const now = systemClock.now();
    expect(now).toBeGreaterThanOrEqual(before);
    expect(now).toBeLessThanOrEqual(Date.now());
  });
});
