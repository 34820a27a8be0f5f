/**
 * The clock a component reads time from and sets its timers on: the system's in production, a
 * test's ManualClock (service-kit/testing) where time is the test's subject (a lease that lapses,
 * a renewal that lands late), so the test moves time instead of waiting it out. A component takes
 * one as an optional last parameter and reads time nowhere else.
 */
export interface Clock {
  /** Milliseconds since the epoch, as Date.now(). */
  now(): number;
  /** Calls `fn` once `ms` have passed on this clock; the handle cancels it. */
  setTimeout(fn: () => void, ms: number): ClockTimer;
  clearTimeout(timer: ClockTimer | undefined): void;
}

/** A timer of a Clock, only good for that clock's clearTimeout. */
export type ClockTimer = object;

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (timer) => clearTimeout(timer as NodeJS.Timeout | undefined),
};
