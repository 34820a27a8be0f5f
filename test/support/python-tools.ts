/**
 * The test command's Python tools (infra/python-tools: kubernetes-validate, grpcio-tools' protoc,
 * confluent-kafka): scripts/test-all.sh makes the virtualenv once and passes its python as
 * MH_PYTHON_TOOLS; a test file run alone makes it (about 2 min the first time on this machine,
 * cached in MH_CACHE after).
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";

const ROOT = new URL("../../", import.meta.url).pathname;

export async function pythonTools(): Promise<string> {
  const given = process.env["MH_PYTHON_TOOLS"];
  if (given !== undefined && given !== "") return given;
  const { stdout } = await promisify(execFile)("bash", [`${ROOT}infra/python-tools/up.sh`], { timeout: 600_000 });
  return stdout.trim();
}
