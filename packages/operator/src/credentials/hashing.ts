/**
 * SHA-512-crypt hashes of credentials, made on a worker thread: each takes
 * a millisecond or more, and the operator makes one per new credential.
 * One worker, started on first use, never keeping the process alive; where
 * no worker can start, the hash is made here.
 *
 * @module
 */
import { Worker } from 'node:worker_threads';
import { hashPassword } from '@proxy-op/htpasswd';
import type { HashJob } from './hash-worker.js';

let worker: Worker | undefined;
let failed = false;
let nextId = 0;
const waiting = new Map<number, { resolve(hash: string): void; reject(err: unknown): void }>();

/** The worker, started now if need be; undefined where none can run. */
function hashWorker(): Worker | undefined {
  if (worker !== undefined || failed) return worker;
  // Beside this module: its `.js` when built, its `.ts` when run from source.
  const ext = import.meta.url.endsWith('.ts') ? 'ts' : 'js';
  try {
    const w = new Worker(new URL(`./hash-worker.${ext}`, import.meta.url));
    w.on('message', (m: { id: number; hash: string }) => {
      waiting.get(m.id)?.resolve(m.hash);
      waiting.delete(m.id);
      // Held only while a hash is awaited: an idle worker keeps no process alive.
      if (waiting.size === 0) w.unref();
    });
    w.unref();
    w.on('error', (err) => {
      for (const p of waiting.values()) p.reject(err);
      waiting.clear();
      worker = undefined;
      failed = true;
    });
    worker = w;
  } catch {
    failed = true;
  }
  return worker;
}

/** `hashPassword(password, { salt, rounds })`, made on the worker thread. */
export function hashOffThread(
  password: string,
  salt: string,
  rounds: number | undefined,
): Promise<string> {
  const w = hashWorker();
  if (w === undefined) return Promise.resolve(hashPassword(password, { salt, rounds }));
  const id = nextId++;
  return new Promise<string>((resolve, reject) => {
    waiting.set(id, { resolve, reject });
    w.ref();
    w.postMessage({ id, password, salt, rounds } satisfies HashJob);
  });
}
