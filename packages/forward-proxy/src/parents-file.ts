/**
 * The parents file of the proxy program: `{ "upstreams": [{ "name", "url",
 * "verified", "location": { "country", "region" }, "provider" }] }`, read at start and again within a second of each change
 * (an atomic rename by whoever keeps the pool's list), so a gateway follows
 * its pool without a restart. A file that cannot be read or parsed keeps
 * the list the proxy has, and says why without showing what it holds.
 *
 * @module
 */
import { fs } from './fs.js';
import type { ParentProxy } from './parents.js';
import { fileStamp, RECHECK_MS, whyUnreadable } from './password-file.js';

/** Reads and checks a parents file; throws an `Error` naming the file and the entry at fault. */
export function readParentsFile(path: string): ParentProxy[] {
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(path, 'utf8'));
  } catch (err) {
    const why = err instanceof SyntaxError ? 'not JSON' : whyUnreadable(err);
    throw new Error(`parents.file: cannot read ${path} (${why})`);
  }
  const list = (raw as { upstreams?: unknown } | null)?.upstreams;
  if (!Array.isArray(list)) {
    throw new Error(`parents.file: ${path} has no "upstreams" list`);
  }
  return list.map((e: unknown, i) => {
    const o = (e ?? {}) as Record<string, unknown>;
    if (typeof o.name !== 'string' || typeof o.url !== 'string') {
      throw new Error(`parents.file: upstreams[${i}] of ${path} needs a name and a url`);
    }
    const at = (o.location ?? {}) as Record<string, unknown>;
    const text = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);
    const country = text(at.country);
    const region = text(at.region);
    return {
      name: o.name,
      url: o.url,
      ...(typeof o.verified === 'string' ? { verified: o.verified } : {}),
      ...(country === undefined && region === undefined
        ? {}
        : { location: { ...(country ? { country } : {}), ...(region ? { region } : {}) } }),
      ...(text(o.provider) === undefined ? {} : { provider: text(o.provider) }),
    };
  });
}

/**
 * Checks `path` every second and calls `changed` with the new list after
 * each change; `warn` gets what went wrong (path and reason only). `current`
 * is the list the caller read (none: the file was not there): the first
 * check compares the file with it, so a change between the caller's read and
 * this call is not missed. Returns what stops it.
 */
export function watchParentsFile(
  path: string,
  changed: (list: ParentProxy[]) => void,
  warn: (message: string) => void,
  current: readonly ParentProxy[] = [],
): () => void {
  let stamp: string | undefined;
  let last = JSON.stringify(current);
  const timer = setInterval(() => {
    const next = safeStamp(path);
    if (next === stamp || next === undefined) return;
    stamp = next;
    try {
      const list = readParentsFile(path);
      const text = JSON.stringify(list);
      if (text === last) return;
      last = text;
      changed(list);
    } catch (err) {
      warn(`${(err as Error).message}; the upstreams stay as they were`);
    }
  }, RECHECK_MS);
  timer.unref();
  return () => clearInterval(timer);
}

function safeStamp(path: string): string | undefined {
  try {
    return fileStamp(path);
  } catch {
    return undefined;
  }
}
