/**
 * Token deltas of the session log (EventDelta: a piece of text of block N of model request R)
 * as the SDK's opt-in preview events: an `event_start` naming the event being produced, then
 * `event_delta`s with its content fragments. agent.thinking previews are start-only, as the SDK
 * documents; tool input deltas have no SDK counterpart and are not sent.
 *
 * The previewed event's id is derived from (R, N) by previewEventId, so the buffered
 * agent.message reconciles its preview when the harness gives it that id (see docs/api.md);
 * both are served under the same public id (publicEventId).
 * A model request that ends without the event (error, interrupt) is closed by its
 * span.model_request_end, after which its previews are forgotten.
 */
import { contentBlockEventId, publicEventId } from "@metaharness/events";
import type { BetaManagedAgentsDeltaEvent, BetaManagedAgentsDeltaType, BetaManagedAgentsStartEvent } from "@anthropic-ai/sdk/resources/beta/sessions/sessions";
import { DeltaKind, type Event, type EventDelta } from "@metaharness/proto";

export type PreviewFrame = BetaManagedAgentsStartEvent | BetaManagedAgentsDeltaEvent;

/** Previews one connection tracks at once; beyond it the oldest are forgotten (and restarted). */
const MAX_OPEN_PREVIEWS = 256;

/** The stored event's id for that block: the harness names it the same way. */
export const previewEventId = contentBlockEventId;

interface OpenPreview {
  /** Its model request's id. */
  readonly request: string;
  /** Its id as served (a digest of the session and the block's id: computed once, not per delta). */
  readonly served: string;
}

export class Previews {
  /** Preview id -> its request and served id. */
  private readonly open = new Map<string, OpenPreview>();

  constructor(
    private readonly types: ReadonlySet<BetaManagedAgentsDeltaType>,
    private readonly sessionId: string,
  ) {}

  get enabled(): boolean {
    return this.types.size > 0;
  }

  frames(delta: EventDelta): PreviewFrame[] {
    const type = delta.kind === DeltaKind.DELTA_KIND_TEXT ? "agent.message" : delta.kind === DeltaKind.DELTA_KIND_THINKING ? "agent.thinking" : undefined;
    if (type === undefined || !this.types.has(type)) return [];
    const id = previewEventId(delta.modelRequestId, delta.blockIndex);
    const out: PreviewFrame[] = [];
    let served = this.open.get(id)?.served;
    if (served === undefined) {
      if (this.open.size >= MAX_OPEN_PREVIEWS) this.open.delete(this.open.keys().next().value ?? "");
      served = publicEventId(this.sessionId, id);
      this.open.set(id, { request: delta.modelRequestId, served });
      out.push({ type: "event_start", event: { id: served, type } });
    }
    if (type === "agent.message" && delta.text !== "") {
      out.push({ type: "event_delta", event_id: served, delta: { type: "content_delta", content: { type: "text", text: delta.text }, index: 0 } });
    }
    return out;
  }

  /** Stored events close previews: the buffered event itself, or its request's end. */
  settle(event: Event): void {
    if (this.open.size === 0) return;
    this.open.delete(event.id);
    if (event.payload?.$case !== "spanModelRequestEnd") return;
    const request = event.payload.value.modelRequestStartId;
    for (const [id, preview] of this.open) if (preview.request === request) this.open.delete(id);
  }
}
