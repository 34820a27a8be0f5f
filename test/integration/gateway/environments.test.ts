/**
 * Environments through the official SDK: create (cloud by default, without network), networking
 * and packages resolved in full, updates that keep omitted fields, what the sandbox broker cannot
 * honour refused naming the field, the SDK's typed errors for a config type change and for an
 * archived environment, list, archive and delete.
 */
import Anthropic from "@anthropic-ai/sdk";
import type { EnvironmentCreateParams } from "@anthropic-ai/sdk/resources/beta/environments/environments";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, type CountingClient, type Stack } from "../../support/gateway.js";

let stack: Stack;
let client: CountingClient;
beforeAll(async () => {
  stack = await startStack({ scenarios: [] });
  client = stack.client();
});
afterAll(async () => {
  await stack?.stop();
});

const NO_PACKAGES = { type: "packages", apt: [], cargo: [], gem: [], go: [], npm: [], pip: [] };

describe("environments", () => {
  it("creates a cloud environment with defaults and retrieves it", async () => {
    const env = await client.sdk.beta.environments.create({ name: "default" });
    expect(env).toMatchObject({
      type: "environment",
      name: "default",
      description: null,
      metadata: {},
      scope: "organization",
      archived_at: null,
      config: {
        type: "cloud",
        networking: { type: "limited", allowed_hosts: [], allow_mcp_servers: false, allow_package_managers: false },
        packages: NO_PACKAGES,
      },
    });
    expect(env.id).toMatch(/^env_/);
    expect(await client.sdk.beta.environments.retrieve(env.id)).toEqual(env);
  });

  it("stores limited networking, and keeps omitted fields on update", async () => {
    const env = await client.sdk.beta.environments.create({
      name: "locked",
      config: { type: "cloud", networking: { type: "limited", allowed_hosts: ["github.com", "*.npmjs.org"] } },
      metadata: { owner: "ci" },
    });
    expect(env.config).toEqual({
      type: "cloud",
      networking: { type: "limited", allowed_hosts: ["github.com", "*.npmjs.org"], allow_package_managers: false, allow_mcp_servers: false },
      packages: NO_PACKAGES,
    });
    const updated = await client.sdk.beta.environments.update(env.id, {
      config: { type: "cloud", networking: { type: "limited", allow_mcp_servers: true } },
      metadata: { owner: "", stage: "beta" },
      description: "for CI",
    });
    expect(updated.config).toMatchObject({ networking: { allowed_hosts: ["github.com", "*.npmjs.org"], allow_mcp_servers: true } });
    expect(updated.metadata).toEqual({ stage: "beta" });
    expect(updated.description).toBe("for CI");
    expect(updated.name).toBe("locked");

    const bad = await client.sdk.beta.environments
      .create({ name: "x", config: { type: "cloud", networking: { type: "limited", allowed_hosts: ["https://example.com/path"] } } })
      .catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(Anthropic.BadRequestError);
    expect((bad as InstanceType<typeof Anthropic.APIError>).apiMessage).toContain("config.networking.allowed_hosts[0]:");
  });

  it("serves unrestricted networking and the package registries", async () => {
    const open = await client.sdk.beta.environments.create({ name: "open", config: { type: "cloud", networking: { type: "unrestricted" } } });
    expect(open.config).toMatchObject({ type: "cloud", networking: { type: "unrestricted" } });
    const registries = await client.sdk.beta.environments.create({
      name: "registries",
      config: { type: "cloud", networking: { type: "limited", allow_package_managers: true } },
    });
    expect(registries.config).toMatchObject({ networking: { type: "limited", allowed_hosts: [], allow_package_managers: true } });
    const updated = await client.sdk.beta.environments.update(registries.id, { config: { type: "cloud", networking: { type: "unrestricted" } } });
    expect((await client.sdk.beta.environments.retrieve(updated.id)).config).toMatchObject({ networking: { type: "unrestricted" } });
  });

  it("refuses, naming the field, what the sandbox broker cannot honour", async () => {
    const refused = async (config: EnvironmentCreateParams["config"]): Promise<string | null> => {
      const err = await client.sdk.beta.environments.create({ name: "x", config }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Anthropic.BadRequestError);
      return (err as InstanceType<typeof Anthropic.APIError>).apiMessage;
    };
    const registries = { type: "limited", allow_package_managers: true } as const;
    expect(await refused({ type: "cloud", packages: { npm: ["left-pad@1.3.0"] } })).toMatch(/^config.networking.allow_package_managers: must be true/);
    expect(await refused({ type: "cloud", networking: registries, packages: { pip: ["-e ."] } })).toMatch(/^config.packages.pip\[0\]: "-e \." is not a package name/);
    // This stack's gateway has no sandbox broker to build them.
    expect(await refused({ type: "cloud", networking: registries, packages: { npm: ["left-pad@1.3.0"] } })).toMatch(/^config.packages: cannot be built: .*MH_SANDBOX_BROKER_ADDR/);
    const env = await client.sdk.beta.environments.create({ name: "kept" });
    const update = await client.sdk.beta.environments.update(env.id, { config: { type: "cloud", networking: registries, packages: { pip: ["six"] } } }).catch((e: unknown) => e);
    expect(update).toBeInstanceOf(Anthropic.BadRequestError);
    expect((await client.sdk.beta.environments.retrieve(env.id)).config).toEqual(env.config);
  });

  it("answers with the SDK's typed errors: config type change, archived environment", async () => {
    const env = await client.sdk.beta.environments.create({ name: "typed" });
    const change = await client.sdk.beta.environments.update(env.id, { config: { type: "self_hosted" } }).catch((e: unknown) => e);
    expect(change).toBeInstanceOf(Anthropic.BadRequestError);
    expect((change as InstanceType<typeof Anthropic.APIError>).errorCode).toBe("invalid_config_type_change");

    const archived = await client.sdk.beta.environments.archive(env.id);
    expect(archived.archived_at).toEqual(expect.any(String));
    const update = await client.sdk.beta.environments.update(env.id, { name: "again" }).catch((e: unknown) => e);
    expect((update as InstanceType<typeof Anthropic.APIError>).errorCode).toBe("environment_archived");
  });

  it("lists with pagination, hides archived ones by default, and deletes", async () => {
    const other = stack.client("mh-test-key-tenant-b-0123456789");
    const made = [];
    for (let i = 0; i < 3; i++) made.push(await other.sdk.beta.environments.create({ name: `env ${i}` }));
    await other.sdk.beta.environments.archive(made[1]!.id);
    const ids = [];
    for await (const e of other.sdk.beta.environments.list({ limit: 1 })) ids.push(e.id);
    expect(ids).toEqual([made[2]!.id, made[0]!.id]);
    const all = [];
    for await (const e of other.sdk.beta.environments.list({ include_archived: true })) all.push(e.id);
    expect(all).toEqual(made.map((e) => e.id).reverse());

    expect(await other.sdk.beta.environments.delete(made[0]!.id)).toEqual({ id: made[0]!.id, type: "environment_deleted" });
    await expect(other.sdk.beta.environments.retrieve(made[0]!.id)).rejects.toBeInstanceOf(Anthropic.NotFoundError);
    await expect(other.sdk.beta.environments.delete(made[0]!.id)).rejects.toBeInstanceOf(Anthropic.NotFoundError);
  });
});
