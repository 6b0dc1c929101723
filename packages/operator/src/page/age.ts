/**
 * Ages as kubectl writes them, for the live table and the status page
 * (whose browser code imports this file too: it must stay free of Node).
 *
 * @module
 */

/** A kubectl-style age: `42s`, `7m`, `3h`, `2d`. */
export function age(from: string, now: number): string {
  const s = Math.max(0, Math.floor((now - Date.parse(from)) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.floor(s / 60)}m`;
  if (s < 172800) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}
