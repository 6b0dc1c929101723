/**
 * The ownership mark in a VM's description: one `key=value` line per key of
 * the contract's mark, passed in the clone call itself.
 *
 * @module
 */
import { formatMark, type Mark, parseMark } from '@proxy-op/contract';

/** The tag the config step sets, for filtering in the Proxmox UI and as a ListByTag hint. */
export const PROXY_TAG = 'proxy_operator';

/** The description holding `mark`, one `key=value` line per key. */
export function formatDescription(mark: Mark): string {
  return `${Object.entries(formatMark(mark))
    .map(([k, v]) => `${k}=${v}`)
    .join('\n')}\n`;
}

/**
 * Reads the mark from a description. Tolerates CRLF, blank lines and lines
 * an admin added; undefined unless the managed line says exactly `true`.
 * A description without the installation line belongs to the default
 * installation.
 */
export function parseDescription(description: string | undefined): Mark | undefined {
  if (description === undefined) return undefined;
  const kv: Record<string, string> = {};
  for (const raw of description.split(/\r?\n/)) {
    const line = raw.trim();
    const eq = line.indexOf('=');
    if (eq <= 0) continue;
    const key = line.slice(0, eq).trim();
    if (!(key in kv)) kv[key] = line.slice(eq + 1).trim();
  }
  return parseMark(kv);
}

/** True when a tags value (separated by `;`, `,` or spaces) holds {@link PROXY_TAG}. */
export function hasProxyTag(tags: string | undefined): boolean {
  return (tags ?? '').split(/[;,\s]+/).some((t) => t.toLowerCase() === PROXY_TAG);
}
