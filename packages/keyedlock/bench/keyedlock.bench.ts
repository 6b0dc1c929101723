// Peer: none (in-process). KeyedLock against a naive Map of promise chains. Each test prints
// a markdown table row; BENCH_SMOKE=1 is the smoke run CI makes (runs of a few milliseconds, only
// to show the benchmark runs and measures).
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

const SMOKE = process.env.BENCH_SMOKE === '1';
const runOpts = SMOKE ? { time: 30, warmupTime: 10 } : { time: 500, warmupTime: 100 };
/** Says on stderr which part starts, so a stall names where it is. */
const part = (name: string) => process.stderr.write(`bench: ${name}…\n`);

function printRatio(what: string, ours: BenchResult, naive: BenchResult): void {
  const ratio = ours.throughput.mean / naive.throughput.mean;
  const ops = (r: BenchResult) => `${Math.round(r.throughput.mean).toLocaleString('en-US')} ops/s`;
  console.log(
    [
      '| measure | KeyedLock | Map of promise chains | KeyedLock / chains |',
      '|---|---:|---:|---:|',
      `| ${what} | ${ops(ours)} | ${ops(naive)} | ${ratio.toFixed(2)}x |`,
    ].join('\n'),
  );
}
const WAITERS = 100;

test('uncontended acquire + release', async ({ bench }) => {
  part('uncontended acquire + release');
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
  printRatio('uncontended acquire + release', r.get('KeyedLock'), r.get('Map of promise chains'));
});

test(`contended hand-over, ${WAITERS} waiters on one key`, async ({ bench }) => {
  part(`contended hand-over, ${WAITERS} waiters on one key`);
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
  printRatio(
    `contended hand-over, ${WAITERS} waiters on one key`,
    r.get('KeyedLock'),
    r.get('Map of promise chains'),
  );
});
