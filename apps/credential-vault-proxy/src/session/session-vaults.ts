/**
 * Which vaults a session may use: its own vault (the tokens of its repository resources), first,
 * then the ones its metadata names (SessionMetadata.vault_ids, fixed when the session was
 * created), read from the session log, that exist, are not archived, belong to the session's
 * tenant and are no session's own. The named ones are cached briefly and boundedly; the own vault
 * is looked up each time, so one created after the session started is used at once. A session
 * that does not exist is NOT_FOUND; a terminated one draws no credentials (FAILED_PRECONDITION),
 * as soon as the log says so or, for one looked up while it ran, once its cache entry expires.
 */
import { MhError } from "@metaharness/errors";
import type { Db } from "@metaharness/db";
import type { SessionLogService } from "@metaharness/proto";
import type { PromiseClient } from "@metaharness/service-kit/grpc";
import type { Logger } from "@metaharness/service-kit/logging";
import { SessionStatus, type Session } from "@metaharness/proto";
import { sessionVault, vaultsByIds } from "../store/vaults.js";

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
    const named = await this.namedVaultIds(sessionId);
    const own = await sessionVault(this.db, sessionId);
    return own === undefined ? named : [own.vaultId, ...named];
  }

  /** The session's tenant, from the log (not cached: asked when a session's own vault is made). */
  async tenantOf(sessionId: string): Promise<string> {
    return (await this.session(sessionId)).metadata?.tenant ?? "";
  }

  private async namedVaultIds(sessionId: string): Promise<readonly string[]> {
    const cached = this.cache.get(sessionId);
    if (cached !== undefined && cached.until > Date.now()) return cached.ids;
    const ids = await this.lookUp(sessionId);
    if (this.cacheMs > 0) {
      if (this.cache.size >= MAX_CACHED) this.cache.delete(this.cache.keys().next().value ?? "");
      this.cache.set(sessionId, { ids, until: Date.now() + this.cacheMs });
    }
    return ids;
  }

  private async session(sessionId: string): Promise<Session> {
    if (!SESSION_ID.test(sessionId)) throw new MhError("INVALID_ARGUMENT", "session_id: is not a session id", { field: "session_id" });
    try {
      const { session } = await this.log.getSession({ sessionId }, { deadlineMs: 10_000 });
      if (session === undefined) throw new MhError("NOT_FOUND", "no session");
      return session;
    } catch (err) {
      const e = MhError.from(err);
      if (e.code === "NOT_FOUND") throw new MhError("NOT_FOUND", `session ${sessionId} does not exist`, { field: "session_id" });
      throw new MhError("UNAVAILABLE", `the session log could not be asked about session ${sessionId}: ${e.code}`, { cause: err });
    }
  }

  /**
   * Asks the log (uncached) that the session exists and has not ended: what opening a sandbox's
   * remotes needs, since a capability outlives any cache entry.
   */
  async requireLive(sessionId: string): Promise<Session> {
    const session = await this.session(sessionId);
    if (session.status === SessionStatus.SESSION_STATUS_TERMINATED) {
      throw new MhError("FAILED_PRECONDITION", `session ${sessionId} is terminated; it draws no credentials`, { field: "session_id" });
    }
    return session;
  }

  private async lookUp(sessionId: string): Promise<readonly string[]> {
    const session = await this.requireLive(sessionId);
    const tenant = session.metadata?.tenant ?? "";
    const named = session.metadata?.vaultIds ?? [];
    const vaults = await vaultsByIds(this.db, named);
    // Another session's own vault is never usable, whoever names it. Tenants are compared exactly:
    // "no tenant" is a tenant of its own, so a session made without one (straight over gRPC)
    // cannot name a tenant's vault, and a tenant's session cannot name an untenanted one.
    const usable = vaults.filter((v) => v.sessionId === "" && v.tenant === tenant);
    if (usable.length < named.length) {
      this.logger.warn(
        { session_id: sessionId, named: named.length, usable: usable.length },
        "some vaults the session names do not exist, are archived, belong to another tenant or are another session's own",
      );
    }
    return usable.map((v) => v.vaultId);
  }
}
