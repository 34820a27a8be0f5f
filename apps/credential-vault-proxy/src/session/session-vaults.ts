/**
 * Which vaults a session may use: the ones its metadata names (SessionMetadata.vault_ids, fixed
 * when the session was created), read from the session log, that exist, are not archived and
 * belong to the session's tenant. Cached briefly and boundedly; a session that does not exist is NOT_FOUND.
 */
import { MhError } from "@metaharness/errors";
import type { Db } from "@metaharness/db";
import type { SessionLogService } from "@metaharness/proto";
import type { Logger, PromiseClient } from "@metaharness/service-kit";
import { vaultsByIds } from "../store/vaults.js";

export type SessionLogClient = PromiseClient<typeof SessionLogService>;

const MAX_CACHED = 10_000;
const SESSION_ID = /^sesn_[A-Za-z0-9_-]{1,64}$/;

export class SessionVaults {
  private readonly cache = new Map<string, { readonly ids: readonly string[]; readonly until: number }>();

  constructor(
    private readonly log: SessionLogClient,
    private readonly db: Db,
    private readonly cacheMs: number,
    private readonly logger: Logger,
  ) {}

  /** The ids of the vaults `sessionId` may draw credentials from, in the order it names them. */
  async vaultIds(sessionId: string): Promise<readonly string[]> {
    if (!SESSION_ID.test(sessionId)) throw new MhError("INVALID_ARGUMENT", "session_id: is not a session id", { field: "session_id" });
    const cached = this.cache.get(sessionId);
    if (cached !== undefined && cached.until > Date.now()) return cached.ids;
    const ids = await this.lookUp(sessionId);
    if (this.cacheMs > 0) {
      if (this.cache.size >= MAX_CACHED) this.cache.delete(this.cache.keys().next().value ?? "");
      this.cache.set(sessionId, { ids, until: Date.now() + this.cacheMs });
    }
    return ids;
  }

  private async lookUp(sessionId: string): Promise<readonly string[]> {
    let session;
    try {
      ({ session } = await this.log.getSession({ sessionId }, { deadlineMs: 10_000 }));
    } catch (err) {
      const e = MhError.from(err);
      if (e.code === "NOT_FOUND") throw new MhError("NOT_FOUND", `session ${sessionId} does not exist`, { field: "session_id" });
      throw new MhError("UNAVAILABLE", `the session log could not be asked about session ${sessionId}: ${e.code}`, { cause: err });
    }
    const tenant = session?.metadata?.tenant ?? "";
    const named = session?.metadata?.vaultIds ?? [];
    const vaults = await vaultsByIds(this.db, named);
    const usable = vaults.filter((v) => tenant === "" || v.tenant === "" || v.tenant === tenant);
    if (usable.length < named.length) {
      this.logger.warn(
        { session_id: sessionId, named: named.length, usable: usable.length },
        "some vaults the session names do not exist, are archived or belong to another tenant",
      );
    }
    return usable.map((v) => v.vaultId);
  }
}
