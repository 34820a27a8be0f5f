/**
 * What this instance knows of sessions' heads without reading them: a session's last seq as a
 * snapshot of this instance saw it (CreateSession's insert, AcquireLease's statement, a watcher's
 * read), carried forward by the appends it hears of (hub.ts). A watch that starts where the head
 * is known to be needs no read before it waits: the harness's follow begins at the last seq its
 * lease returned, and a client's watch of a session just created at 0 (most of a text-only turn's
 * slice reads). The knowledge is of the same kind as a watcher's after its first read (a snapshot,
 * then the pokes): an append committed after it is heard through a poke, which reaches every
 * watcher subscribed by then, so a watch that starts from it misses nothing that one after a read
 * would not. A head is usable only while nothing beyond it was heard (an append of this instance
 * that follows it moves it on); the LISTEN connection's loss forgets them all (its NOTIFYs were
 * lost), a terminating append forgets its session (a terminated watch must read to end).
 */

/** Sessions whose heads are kept; the oldest learnt is forgotten past it (a watch then reads, as before). */
const MAX_HEADS = 10_000;

interface Head {
  /** The session held exactly this many events in a snapshot, and was not terminated. */
  through: number;
  /** The highest seq heard of since (an append's poke): past `through`, the head is not usable. */
  heard: number;
}

export class SessionHeads {
  private readonly heads = new Map<string, Head>();

  /**
   * A snapshot taken after this instance began to hear the session's appends held `lastSeq`
   * events and was not terminated; `heard` is the highest seq heard of since that began.
   */
  learn(sessionId: string, lastSeq: number, heard: number): void {
    const head = this.heads.get(sessionId);
    if (head !== undefined) {
      head.through = Math.max(head.through, lastSeq);
      head.heard = Math.max(head.heard, heard);
      return;
    }
    this.heads.set(sessionId, { through: lastSeq, heard });
    if (this.heads.size > MAX_HEADS) {
      const oldest = this.heads.keys().next().value;
      if (oldest !== undefined) this.heads.delete(oldest);
    }
  }

  /**
   * An append heard of: `first` is the first seq it stored when it was made here (its events
   * known, none terminating), undefined when only its last seq is known (another instance's).
   */
  heardOf(sessionId: string, lastSeq: number, first: number | undefined): void {
    const head = this.heads.get(sessionId);
    if (head === undefined) return;
    if (first !== undefined && first === head.through + 1 && head.heard <= head.through) head.through = lastSeq;
    head.heard = Math.max(head.heard, lastSeq);
  }

  forget(sessionId: string): void {
    this.heads.delete(sessionId);
  }

  forgetAll(): void {
    this.heads.clear();
  }

  /** The session's last seq if known and nothing was heard past it since; else undefined. */
  lastSeq(sessionId: string): number | undefined {
    const head = this.heads.get(sessionId);
    return head !== undefined && head.heard <= head.through ? head.through : undefined;
  }
}
