/**
 * Listen addresses as the flags write them: `host:port`, `[::1]:port`, or
 * `:port` for every address. Kept apart from the metrics endpoints so that
 * reading one does not load the metrics SDK.
 *
 * @module
 */

/** Parses `host:port` (`[::1]:9464`, `:9464` for every address). */
export function parseListenAddress(addr: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(addr);
  if (m === null) throw new Error(`listen address "${addr}" is not host:port`);
  const port = Number(m[3]);
  if (port > 65535) throw new Error(`listen address "${addr}": port out of range`);
  const host = m[1] ?? m[2] ?? '';
  return { host: host === '' ? '0.0.0.0' : host, port };
}
