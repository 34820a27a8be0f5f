/**
 * The terminal as the live renderer uses it: whole lines, streamed text that may leave the
 * cursor mid-line, and one spinner line at the bottom (terminals only) that is cleared before
 * anything else is printed and drawn again after.
 */
import type { Output } from "../output.js";
import { printable } from "./style.js";

const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
const FRAME_MS = 80;

export class Screen {
  /** The cursor is mid-line after streamed text. */
  private open = false;
  /** The last line printed was empty (or nothing was printed yet). */
  private blank = true;
  private label: (() => string) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private frame = 0;
  private drawn = false;

  constructor(readonly out: Output) {}

  /** A whole line (a newline first if streamed text left the cursor mid-line). */
  line(text = ""): void {
    this.clear();
    this.closeText();
    this.out.line(text);
    this.blank = text === "";
    this.draw();
  }

  /** An empty line, unless the last one was. */
  gap(): void {
    if (this.open || !this.blank) this.line();
  }

  /** Streamed text, as it comes; stops the spinner. */
  text(chunk: string): void {
    if (chunk === "") return;
    this.stopSpinner();
    this.out.write(printable(chunk));
    this.open = !chunk.endsWith("\n");
    this.blank = chunk.endsWith("\n\n");
  }

  /** Ends streamed text with a newline, if it needs one. */
  closeText(): void {
    if (!this.open) return;
    this.out.write("\n");
    this.open = false;
  }

  /** Shows (or relabels) the spinner; only on a terminal. */
  spin(label: () => string): void {
    if (!this.out.tty) return;
    this.clear();
    this.closeText();
    this.label = label;
    this.timer ??= setInterval(() => {
      this.frame = (this.frame + 1) % FRAMES.length;
      this.clear();
      this.draw();
    }, FRAME_MS).unref();
    this.draw();
  }

  stopSpinner(): void {
    this.clear();
    this.label = undefined;
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  private draw(): void {
    if (this.label === undefined || this.drawn) return;
    const text = `${FRAMES[this.frame] ?? ""} ${this.label()}`;
    this.out.write(text.length > this.out.columns - 1 ? text.slice(0, this.out.columns - 1) : text);
    this.drawn = true;
  }

  private clear(): void {
    if (!this.drawn) return;
    this.out.write("\r\x1b[2K");
    this.drawn = false;
  }
}
