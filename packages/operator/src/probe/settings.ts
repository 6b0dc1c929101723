/**
 * A provider's `probe` block in the providers file: whether its proxies
 * are probed, the target they are probed against (the operator's own by
 * default, or `url`), and `maxUnhealthy`, the share of its probed proxies
 * that may fail at once before every replacement stops. Validated with
 * each problem naming its field.
 *
 * @module
 */
import type { ProbeTargetSpec } from '@proxy-op/probe';
import { DEFAULTS } from '../defaults.js';

/** At most this many of a provider's probed proxies may fail before remediation stops. */
export type MaxUnhealthy = { readonly count: number } | { readonly percent: number };

/** A provider's probe settings, validated. */
export interface ProbeSettings {
  /** False: its proxies are not probed (Ready keeps its old meaning; `DataPlane` is Unknown). */
  readonly enabled: boolean;
  /** The target its proxies reach (`CONNECT`; TLS inside for `https:`); default the operator's own. */
  readonly url?: string | undefined;
  /** The URL of the absolute-form GET, where it differs from `url`. */
  readonly getUrl?: string | undefined;
  /** Also a SOCKS5 tunnel on the proxy's port (for proxies that speak SOCKS5, as the local provider's). */
  readonly socks5?: boolean | undefined;
  /** More of its probed proxies failing at once than this stops every replacement. */
  readonly maxUnhealthy: MaxUnhealthy;
}

/** `"40%"` or `3` as {@link MaxUnhealthy}; undefined when it is neither. */
export function parseMaxUnhealthy(v: unknown): MaxUnhealthy | undefined {
  if (typeof v === 'number') return Number.isInteger(v) && v >= 0 ? { count: v } : undefined;
  if (typeof v !== 'string') return undefined;
  const m = /^(\d{1,3})%$/.exec(v);
  if (m !== null && Number(m[1]) <= 100) return { percent: Number(m[1]) };
  return /^\d+$/.test(v) ? { count: Number(v) } : undefined;
}

/** The settings of a provider whose block has no `probe`. */
export const DEFAULT_PROBE_SETTINGS: ProbeSettings = Object.freeze({
  enabled: true,
  maxUnhealthy: parseMaxUnhealthy(DEFAULTS.maxUnhealthy) as MaxUnhealthy,
});

/**
 * How many of `total` probed proxies may fail at once: the count, or the
 * percentage of `total` rounded down (as Cluster API's MachineHealthCheck)
 * but at least one, so that a provider with one or two proxies can still
 * have one replaced (a percentage of 0 allows none).
 */
export function allowedUnhealthy(m: MaxUnhealthy, total: number): number {
  if ('count' in m) return m.count;
  return m.percent === 0 ? 0 : Math.max(1, Math.floor((m.percent * total) / 100));
}

/** `40%` or `3`, as written. */
export function formatMaxUnhealthy(m: MaxUnhealthy): string {
  return 'count' in m ? String(m.count) : `${m.percent}%`;
}

function httpUrl(v: unknown, schemes: readonly string[]): string | undefined {
  if (typeof v !== 'string') return undefined;
  try {
    const u = new URL(v);
    return schemes.includes(u.protocol) && u.hostname !== '' ? u.href : undefined;
  } catch {
    return undefined;
  }
}

/** Validates a provider's `probe` block at `at` (`providers[0].probe`); undefined is the default. */
export function parseProbeSettings(
  v: unknown,
  at: string,
): { settings: ProbeSettings; problems: string[] } {
  if (v === undefined) return { settings: DEFAULT_PROBE_SETTINGS, problems: [] };
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    return {
      settings: DEFAULT_PROBE_SETTINGS,
      problems: [`${at}: must be a mapping (url, getUrl, enabled, socks5, maxUnhealthy)`],
    };
  }
  const o = v as Record<string, unknown>;
  const problems: string[] = [];
  for (const k of Object.keys(o)) {
    if (!['enabled', 'url', 'getUrl', 'socks5', 'maxUnhealthy'].includes(k)) {
      problems.push(`${at}.${k}: unknown field (url, getUrl, enabled, socks5, maxUnhealthy)`);
    }
  }
  if (o.socks5 !== undefined && typeof o.socks5 !== 'boolean') {
    problems.push(`${at}.socks5: must be true or false`);
  }
  if (o.enabled !== undefined && typeof o.enabled !== 'boolean') {
    problems.push(`${at}.enabled: must be true or false`);
  }
  const enabled = o.enabled !== false;
  const url = o.url === undefined ? undefined : httpUrl(o.url, ['http:', 'https:']);
  if (o.url !== undefined && url === undefined) {
    problems.push(`${at}.url: must be an http: or https: URL`);
  }
  const getUrl = o.getUrl === undefined ? undefined : httpUrl(o.getUrl, ['http:']);
  if (o.getUrl !== undefined && getUrl === undefined) {
    problems.push(`${at}.getUrl: must be an http: URL`);
  }
  if (o.getUrl !== undefined && o.url === undefined) {
    problems.push(`${at}.getUrl: needs url (the target the tunnel reaches)`);
  }
  if (!enabled && (o.url !== undefined || o.getUrl !== undefined)) {
    problems.push(`${at}.enabled: false probes nothing; leave url and getUrl out`);
  }
  let maxUnhealthy = DEFAULT_PROBE_SETTINGS.maxUnhealthy;
  if (o.maxUnhealthy !== undefined) {
    const m = parseMaxUnhealthy(o.maxUnhealthy);
    if (m === undefined) {
      problems.push(
        `${at}.maxUnhealthy: must be a count (3) or a percentage (40%) from 0% to 100%`,
      );
    } else maxUnhealthy = m;
  }
  return {
    settings: {
      enabled,
      ...(url === undefined ? {} : { url }),
      ...(getUrl === undefined ? {} : { getUrl }),
      ...(o.socks5 === true ? { socks5: true } : {}),
      maxUnhealthy,
    },
    problems,
  };
}

/**
 * The target of a provider's own `url`: the tunnel reaches `url`; the GET
 * asks for `getUrl`, else `url` itself when it is `http:`, else the same
 * URL over `http:` (port 80).
 */
export function settingsTarget(s: ProbeSettings): ProbeTargetSpec | undefined {
  if (s.url === undefined) return undefined;
  const connect = new URL(s.url);
  let get: URL;
  if (s.getUrl !== undefined) get = new URL(s.getUrl);
  else if (connect.protocol === 'http:') get = connect;
  else {
    get = new URL(connect);
    get.protocol = 'http:';
    get.port = '';
  }
  return { get, connect };
}

/** Two settings are the same. */
export function sameProbeSettings(a: ProbeSettings, b: ProbeSettings): boolean {
  return (
    a.enabled === b.enabled &&
    a.url === b.url &&
    a.getUrl === b.getUrl &&
    formatMaxUnhealthy(a.maxUnhealthy) === formatMaxUnhealthy(b.maxUnhealthy)
  );
}
