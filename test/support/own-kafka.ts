/**
 * A Kafka broker of a test's own: the jars infra/kafka/up.sh fetched (its state directory, found
 * beside the MH_KAFKA_SECURE_LISTENERS file it wrote, or this checkout's .local/kafka), run in
 * KRaft combined mode on ports free right now, with its data in a temp directory. For fault tests
 * that stop the broker: the shared one serves every other test running beside them and is never
 * touched.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import kafkajs from "kafkajs";
import { eventually } from "./eventually.js";
import { unusedPort } from "./process.js";

const run = promisify(execFile);
const ROOT = new URL("../../", import.meta.url).pathname;

export interface OwnKafka {
  /** 127.0.0.1:<port>, its PLAINTEXT listener. */
  readonly brokers: string;
  /** SIGTERM (a controlled shutdown); resolves once the JVM is gone. */
  stop(): Promise<void>;
  /** Starts it again on the same ports and data; resolves once it answers a metadata request. */
  start(): Promise<void>;
  /** Stops it for good and deletes its data. */
  dispose(): Promise<void>;
}

function libsDir(): string {
  const secure = process.env["MH_KAFKA_SECURE_LISTENERS"];
  const candidates = [...(secure === undefined ? [] : [join(dirname(secure), "libs")]), join(ROOT, ".local/kafka/libs")];
  const found = candidates.find((d) => existsSync(d));
  if (found === undefined) throw new Error(`no Kafka jars in ${candidates.join(" or ")}: infra/kafka/up.sh fetches them`);
  return found;
}

export async function startOwnKafka(): Promise<OwnKafka> {
  const libs = libsDir();
  const dir = await mkdtemp(join(tmpdir(), "mh-own-kafka-"));
  const [port, controller] = [await unusedPort(), await unusedPort()];
  const brokers = `127.0.0.1:${port}`;
  const properties = join(dir, "server.properties");
  const log4j = join(dir, "log4j.properties");
  await writeFile(
    properties,
    [
      "process.roles=broker,controller",
      "node.id=1",
      `controller.quorum.voters=1@127.0.0.1:${controller}`,
      `listeners=PLAINTEXT://${brokers},CONTROLLER://127.0.0.1:${controller}`,
      `advertised.listeners=PLAINTEXT://${brokers}`,
      "controller.listener.names=CONTROLLER",
      "inter.broker.listener.name=PLAINTEXT",
      "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
      `log.dirs=${join(dir, "data")}`,
      "num.partitions=3",
      "auto.create.topics.enable=true",
      "offsets.topic.replication.factor=1",
      "transaction.state.log.replication.factor=1",
      "transaction.state.log.min.isr=1",
      "offsets.topic.num.partitions=3",
      "transaction.state.log.num.partitions=3",
      "group.initial.rebalance.delay.ms=0",
      "num.recovery.threads.per.data.dir=1",
      "log.cleaner.dedupe.buffer.size=16777216",
      "",
    ].join("\n"),
  );
  await writeFile(log4j, "log4j.rootLogger=WARN, stderr\nlog4j.appender.stderr=org.apache.log4j.ConsoleAppender\nlog4j.appender.stderr.Target=System.err\nlog4j.appender.stderr.layout=org.apache.log4j.PatternLayout\nlog4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n\n");
  const java = (main: string, args: string[], heap: string[]): [string, string[]] => [
    "java",
    [...heap, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto", `-Dlog4j.configuration=file:${log4j}`, "-cp", `${libs}/*`, main, ...args],
  ];
  let child: ChildProcess | undefined;
  let out = "";
  const start = async (): Promise<void> => {
    const [file, args] = java("kafka.Kafka", [properties], ["-Xmx384m", "-Xms128m"]);
    const c = spawn(file, args, { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
    c.stdout?.on("data", (b: Buffer) => (out = (out + b.toString()).slice(-20_000)));
    c.stderr?.on("data", (b: Buffer) => (out = (out + b.toString()).slice(-20_000)));
    child = c;
    const kafka = new kafkajs.Kafka({ clientId: "own-kafka-probe", brokers: [brokers], logLevel: kafkajs.logLevel.NOTHING, retry: { retries: 0 } });
    await eventually(
      async () => {
        if (c.exitCode !== null) throw new Error(`kafka exited at start:\n${out}`);
        const admin = kafka.admin();
        try {
          await admin.connect();
          await admin.describeCluster();
          return true;
        } catch {
          return undefined;
        } finally {
          await admin.disconnect().catch(() => undefined);
        }
      },
      // A JVM's start on 2 shared cores at load 30 took over 60 s (kafka.test, 2026-12-05).
      () => `kafka to answer (120 s):\n${out}`,
      120_000,
    );
  };
  const stop = async (): Promise<void> => {
    const c = child;
    if (c === undefined || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => c.once("exit", () => resolve()));
    c.kill("SIGTERM");
    const timer = setTimeout(() => c.kill("SIGKILL"), 20_000);
    await exited;
    clearTimeout(timer);
  };
  const dispose = async (): Promise<void> => {
    await stop();
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const [file, args] = java("kafka.tools.StorageTool", ["format", "-t", clusterId(), "-c", properties, "--ignore-formatted"], ["-Xmx128m"]);
    await run(file, args, { cwd: dir });
    await start();
  } catch (err) {
    await dispose();
    throw err;
  }
  return { brokers, stop, start, dispose };
}

/** A Kafka Uuid: 16 random bytes, URL-safe base64 without padding, never starting with "-" (the tool reads that as a flag). */
function clusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString("base64url");
    if (!id.startsWith("-")) return id;
  }
}
