/**
 * The gateway's ban endpoint, for what it cannot see inside a tunnel: a
 * client (or `proxy-op ban`) reports that a target banned an upstream, and
 * the upstream is kept from that host as a rule match would keep it.
 *
 * `POST /bans?upstream=NAME&host=HOST&for=DURATION` (origin-form, no body)
 * reports one; `GET /bans` lists the quarantines in force as JSON. Both
 * need an allowed source and the gateway's admin credential in
 * `Authorization: Basic` (`admin.passwordFile`), never a client's or an
 * upstream's; without an admin password file the endpoint is off (`403`).
 *
 * @module
 */
import type { ProxyAuth } from './auth.js';
import { now as clock } from './clock.js';
import type { RequestHead } from './http1.js';
import type { ParentSet } from './parents.js';
import { sourceKey } from './sources.js';

/** An answer of the endpoint. */
export interface LocalAnswer {
  readonly status: number;
  readonly type: string;
  readonly text: string;
  /** Header lines to add, each ending in CRLF. */
  readonly fields: string;
}

/** The longest quarantine a report may ask for, in ms (a day). */
export const MAX_REPORT_MS = 86_400_000;
const NAME = /^[A-Za-z0-9._~:-]{1,253}$/;
const HOST = /^[A-Za-z0-9.-]{1,253}$/;
const DURATION = /^([0-9]{1,6})(s|m|h)$/;
const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000 } as const;

const plain = (status: number, text: string, fields = ''): LocalAnswer => ({
  status,
  type: 'text/plain',
  text: `${text}\n`,
  fields,
});

/**
 * Answers a request to `/bans` from `source` (`allowed`: its source may use
 * the proxy): checks the admin credential, then records or lists.
 */
export async function banEndpoint(
  parents: ParentSet | undefined,
  admin: ProxyAuth | undefined,
  head: RequestHead,
  source: string,
  allowed: boolean,
): Promise<LocalAnswer> {
  if (!allowed) return plain(403, 'this source may not use the proxy');
  if (parents === undefined) return plain(404, 'this proxy has no upstreams to ban');
  if (admin === undefined) {
    return plain(403, 'the ban endpoint is off: give the gateway an admin password file');
  }
  const at = head.fields.lower.indexOf('authorization');
  const outcome = await admin.check(at < 0 ? undefined : head.fields.values[at], sourceKey(source));
  if (outcome.kind !== 'user') {
    const r = admin.refusal(outcome.kind === 'bad-parameter' ? { kind: 'refused' } : outcome);
    if (r.status !== 407) return plain(r.status, r.text.trimEnd(), r.fields);
    return plain(
      401,
      'the ban endpoint needs the admin credential (Basic)',
      `WWW-Authenticate: ${admin.challenge}\r\n`,
    );
  }
  const now = clock();
  if (head.method === 'GET') {
    const quarantined = parents.bans.inForce(now).map((q) => ({
      upstream: q.upstream,
      host: q.host,
      leftSeconds: Math.ceil(q.leftMs / 1000),
    }));
    return json({ quarantined });
  }
  if (head.method !== 'POST') return plain(405, 'use GET or POST', 'Allow: GET, POST\r\n');
  const f = head.framing;
  if (f.kind !== 'none' && !(f.kind === 'length' && f.length === 0)) {
    return plain(400, 'give the ban in the query (upstream, host, for), with no body');
  }
  const q = new URL(head.target, 'http://gateway').searchParams;
  const upstream = q.get('upstream') ?? '';
  const host = (q.get('host') ?? '').toLowerCase();
  const d = DURATION.exec(q.get('for') ?? '');
  const ms = d === null ? Number.NaN : Number(d[1]) * UNIT_MS[d[2] as 's' | 'm' | 'h'];
  if (!NAME.test(upstream))
    return plain(400, 'upstream: give the upstream the answer named (X-Proxy-Op-Upstream)');
  if (!HOST.test(host)) return plain(400, 'host: give the target host name (shop.example.com)');
  if (!(ms >= 1_000 && ms <= MAX_REPORT_MS))
    return plain(400, 'for: give a duration from 1s to 24h (30s, 10m, 2h)');
  parents.bans.quarantine(upstream, host, ms, now, 'report');
  return json({ upstream, host, seconds: ms / 1000 });
}

const json = (v: unknown): LocalAnswer => ({
  status: 200,
  type: 'application/json',
  text: `${JSON.stringify(v)}\n`,
  fields: '',
});
