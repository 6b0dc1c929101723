// Peer: none (in-process). KeyedLock against a naive Map of promise chains.
import { type BenchResult, test } from 'vitest';
import { KeyedLock } from '../src/index.js';

/** The usual hand-rolled keyed lock: each acquire chains onto the key's last promise. */
class ChainLock<K> {
  readonly #tails = new Map<K, Promise<void>>();

  async acquire(key: K): Promise<() => void> {
    const prev = this.#tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const done = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tail = prev.then(() => done);
    this.#tails.set(key, tail);
    await prev;
    return () => {
      release();
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    };
  }
}

const runOpts = { time: 500, warmupTime: 100 };

function printRatio(what: string, ours: BenchResult, naive: BenchResult): void {
  const ratio = ours.throughput.mean / naive.throughput.mean;
  console.log(`${what}: KeyedLock is ${ratio.toFixed(2)}x the naive reference's throughput`);
}
const WAITERS = 100;

test('uncontended acquire + release', async ({ bench }) => {
  const lock = new KeyedLock();
  const naive = new ChainLock<string>();
  const r = await bench.compare(
    bench('KeyedLock', async () => {
      (await lock.acquire('vm')).release();
    }),
    bench('Map of promise chains', async () => {
      (await naive.acquire('vm'))();
    }),
    runOpts,
  );
  printRatio('uncontended', r.get('KeyedLock'), r.get('Map of promise chains'));
});

test(`contended hand-over, ${WAITERS} waiters on one key`, async ({ bench }) => {
  const lock = new KeyedLock();
  const naive = new ChainLock<string>();
  const r = await bench.compare(
    bench('KeyedLock', async () => {
      const all: Promise<void>[] = [];
      for (let i = 0; i < WAITERS; i++) all.push(lock.acquire('vm').then((l) => l.release()));
      await Promise.all(all);
    }),
    bench('Map of promise chains', async () => {
      const all: Promise<void>[] = [];
      for (let i = 0; i < WAITERS; i++) all.push(naive.acquire('vm').then((release) => release()));
      await Promise.all(all);
    }),
    runOpts,
  );
  printRatio('contended', r.get('KeyedLock'), r.get('Map of promise chains'));
});
