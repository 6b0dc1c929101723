import type { Lease } from '../src/index.js';

/** Lets every pending promise reaction run (microtasks, then one macrotask turn). */
export function flush(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** The settled state of a promise, readable synchronously. */
export interface Tracked<T> {
  readonly promise: Promise<T>;
  state: 'pending' | 'fulfilled' | 'rejected';
  value: T | undefined;
  error: unknown;
}

/** Follows `promise` so tests can look at its state without awaiting it. */
export function track<T>(promise: Promise<T>): Tracked<T> {
  const t: Tracked<T> = { promise, state: 'pending', value: undefined, error: undefined };
  promise.then(
    (value) => {
      t.state = 'fulfilled';
      t.value = value;
    },
    (error: unknown) => {
      t.state = 'rejected';
      t.error = error;
    },
  );
  return t;
}

/** The lease of a fulfilled tracked acquire; fails the test otherwise. */
export function leaseOf<K>(t: Tracked<Lease<K>>): Lease<K> {
  if (t.state !== 'fulfilled' || t.value === undefined) {
    throw new Error(`expected a granted lease, the acquire is ${t.state}`);
  }
  return t.value;
}
