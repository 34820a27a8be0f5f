/**
 * AsyncResource.prototype.bind without Node 20's two `deprecate` wrappers per bound function.
 * Node 20's http2 client binds an AsyncResource in every `ClientHttp2Session.request()`, so every
 * gRPC call a client makes binds one; `bind` gives the bound function an `asyncResource`
 * accessor whose getter and setter are each wrapped by `util.deprecate` (DEP0172), which sets
 * the wrapper's prototype to the function's: 1.2-1.8% of the gateway's busy samples and 1.0-1.5%
 * of the harness's at 1.6 and 2.6 calls a text-only turn (issue 31). No option or other call of
 * http2's avoids it (`request()` binds unconditionally, `--no-deprecation` only silences the
 * warning). This is Node 20's `bind` (lib/async_hooks.js) with plain accessors that warn once,
 * as `deprecate` does; nothing we run reads the property. Later Node releases make the wrappers
 * without the prototype change, so it is installed on Node 20 only.
 */
import { AsyncResource } from "node:async_hooks";

const DEP0172 = "The asyncResource property on bound functions is deprecated";
let warned = false;
const warn = (): void => {
  if (warned) return;
  warned = true;
  process.emitWarning(DEP0172, "DeprecationWarning", "DEP0172");
};

/** Node 20's `bind` (lib/async_hooks.js), its `asyncResource` accessors plain. */
function bindTo(resource: AsyncResource, fn: (...args: unknown[]) => unknown, thisArg?: unknown): unknown {
  if (typeof fn !== "function") throw new TypeError(`The "fn" argument must be of type function. Received ${typeof fn}`);
  // What the deprecated property reads and sets; as in Node, setting it changes no scope.
  let self: unknown = resource;
  const bound =
    thisArg === undefined
      ? function (this: unknown, ...args: unknown[]): unknown {
          return resource.runInAsyncScope(fn, this, ...args);
        }
      : resource.runInAsyncScope.bind(resource, fn, thisArg);
  Object.defineProperties(bound, {
    length: { configurable: true, enumerable: false, value: fn.length, writable: false },
    asyncResource: {
      configurable: true,
      enumerable: true,
      get: () => {
        warn();
        return self;
      },
      set: (value: unknown) => {
        warn();
        self = value;
      },
    },
  });
  return bound;
}

let installed = false;

/** Installs the cheaper `bind` once, on Node 20; elsewhere leaves Node's. */
export function installCheapAsyncResourceBind(): void {
  if (installed || process.versions.node.split(".")[0] !== "20") return;
  installed = true;
  const bind = function (this: AsyncResource, fn: (...args: unknown[]) => unknown, thisArg?: unknown): unknown {
    return bindTo(this, fn, thisArg);
  };
  AsyncResource.prototype.bind = bind as AsyncResource["bind"];
}
