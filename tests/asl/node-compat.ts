// What both local executors (tests/asl/execute.ts, tests/deployed/execute.ts)
// need before they run a definition.

// aws-local-stepfunctions 3 calls Promise.withResolvers (Node >= 22); Node 20 lacks it.
const P = Promise as unknown as { withResolvers?: () => unknown };
if (typeof P.withResolvers !== 'function') {
  P.withResolvers = function withResolvers<T>() {
    let resolve!: (v: T | PromiseLike<T>) => void;
    let reject!: (e: unknown) => void;
    const promise = new Promise<T>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    return { promise, resolve, reject };
  };
}

/** env reads a required variable (or its fallback) of the executor's environment. */
export function env(name: string, fallback?: string): string {
  const v = process.env[name];
  if (v !== undefined && v !== '') return v;
  if (fallback !== undefined) return fallback;
  throw new Error(`${name} is not set`);
}
