/**
 * The open event streams: at most MH_GATEWAY_MAX_STREAMS_PER_TENANT per tenant (one tenant
 * cannot hold every socket), and all of them ended at once on shutdown, so a stop never waits
 * for a client that keeps listening.
 */
import { ApiError } from "../errors/api-error.js";

export interface StreamLease {
  readonly signal: AbortSignal;
  release(): void;
}

export class StreamRegistry {
  private readonly perTenant = new Map<string, number>();
  private readonly open = new Set<AbortController>();
  private closed = false;

  constructor(private readonly maxPerTenant: number) {}

  acquire(tenant: string): StreamLease {
    if (this.closed) throw new ApiError("unavailable", "The gateway is shutting down.");
    const count = this.perTenant.get(tenant) ?? 0;
    if (count >= this.maxPerTenant) {
      throw new ApiError("rate_limited", `at most ${this.maxPerTenant} event streams may be open per API tenant`, { headers: { "retry-after": "5" } });
    }
    this.perTenant.set(tenant, count + 1);
    const controller = new AbortController();
    this.open.add(controller);
    let released = false;
    return {
      signal: controller.signal,
      release: () => {
        if (released) return;
        released = true;
        this.open.delete(controller);
        const left = (this.perTenant.get(tenant) ?? 1) - 1;
        if (left <= 0) this.perTenant.delete(tenant);
        else this.perTenant.set(tenant, left);
      },
    };
  }

  get size(): number {
    return this.open.size;
  }

  /** Ends every stream and refuses new ones. */
  closeAll(): void {
    this.closed = true;
    for (const controller of this.open) controller.abort();
  }
}
