/**
 * Waiting for and stopping the daemons the harness starts.
 *
 * @module
 */
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';

/** Polls `ok` until it holds; fails when the child exits or the time runs out (then kills it). */
export async function waitFor(
  what: string,
  ok: () => boolean | Promise<boolean>,
  child: ChildProcess,
  timeoutMs: number,
  log: () => Promise<string>,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await ok())) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${what} exited (${child.exitCode ?? child.signalCode}):\n${await log()}`);
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${what} not ready within ${timeoutMs} ms:\n${await log()}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** SIGTERM, then SIGKILL after `timeoutMs`; resolves once the child exited. */
export async function stopChild(child: ChildProcess, timeoutMs = 5000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  await exited;
  clearTimeout(timer);
}

/** A file's text, or empty when it cannot be read. */
export async function readOr(path: string): Promise<string> {
  return readFile(path, 'utf8').catch(() => '');
}
