/** Request headers as one value: Node gives an array for a header sent more than once; the first counts. */
import type { FastifyRequest } from "fastify";

export function headerValue(req: FastifyRequest, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
