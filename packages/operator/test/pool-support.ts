// What the standalone pool suites share: the pool as the state file holds it, waiting on it,
// and the Basic value of a kept client URL.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

/** The pool `key` as the standalone state file beside `root`'s manifests holds it, or undefined. */
export async function poolState<T>(root: string, key: string): Promise<T | undefined> {
  const text = await readFile(join(root, 'proxies.state.json'), 'utf8').catch(() => '{}');
  try {
    return (JSON.parse(text) as { pools?: Record<string, T> }).pools?.[key];
  } catch {
    return undefined; // between a truncate and a write
  }
}

/** Polls `fn` every 100 ms until it answers something other than undefined or false. */
export async function until<T>(
  fn: () => Promise<T | undefined | false>,
  ms: number,
  what: string,
): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The `Basic …` value of the credential in a client URL (`http://user:password@host:port`). */
export function basicOf(url: URL): string {
  const pair = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
  return `Basic ${Buffer.from(pair).toString('base64')}`;
}
