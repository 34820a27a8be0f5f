/**
 * A gate for one call: a test arms it, the wrapped call (a harness's ReleaseLease, say) that
 * comes while it is armed waits at it, the test learns that it did (`reached`) and lets it go on
 * (`open`), so that what the test does meanwhile lands in that window every time.
 */
export class Gate {
  armed = false;
  private arrive: () => void = () => undefined;
  private release: () => void = () => undefined;
  /** Resolves when a call is held at the gate. */
  readonly reached = new Promise<void>((resolve) => (this.arrive = resolve));
  private readonly opened = new Promise<void>((resolve) => (this.release = resolve));

  /** Holds the first call that comes while armed until open(); lets the others by. */
  async pass(): Promise<void> {
    if (!this.armed) return;
    this.armed = false;
    this.arrive();
    await this.opened;
  }

  open(): void {
    this.release();
  }
}
