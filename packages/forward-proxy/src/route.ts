/**
 * Where a request head goes once it has been read: the health check, a
 * CONNECT tunnel, a forward to the origin its absolute URI names, or a
 * refusal of the proxy's own. Nothing here looks at who sent it (the
 * allowed sources are the connection's business).
 *
 * @module
 */
import type { RequestHead } from './http1.js';
import { targetForLog } from './log-target.js';
import { type HttpTarget, parseHttpTarget } from './target.js';

/** Why a request that parsed is still not forwarded. */
export type RouteRefusal = 'origin-form' | 'not-a-url' | 'not-http' | 'expectation';

/** What is done with a request. */
export type Route =
  | { readonly kind: 'health' }
  /** The parents' metrics; a proxy without parents refuses it as any origin-form request. */
  | { readonly kind: 'metrics' }
  /** The ban endpoint (a gateway's, with its admin credential). */
  | { readonly kind: 'bans' }
  | { readonly kind: 'tunnel' }
  | { readonly kind: 'forward'; readonly target: HttpTarget }
  | {
      readonly kind: 'refuse';
      readonly reason: RouteRefusal;
      readonly status: number;
      /** The answer's body, for the client. */
      readonly text: string;
      /** The target for the access log. */
      readonly logTarget: string;
    };

/** Decides where `head` goes. */
export function routeRequest(head: RequestHead): Route {
  if (head.method === 'CONNECT') return TUNNEL;
  const url = head.target;
  if (url.startsWith('/')) {
    const get = head.method === 'GET' || head.method === 'HEAD';
    if (url === '/healthz' && get) return HEALTH;
    if (url === '/metrics' && get) return METRICS;
    if (url === '/bans' || url.startsWith('/bans?')) return BANS;
    return refuse(
      'origin-form',
      400,
      'a proxy request needs an absolute URI (http://host/path)',
      url,
    );
  }
  const target = parseHttpTarget(url);
  if (target === 'not-a-url') return refuse('not-a-url', 400, 'the request URI is not a URL', url);
  if (target === 'not-http') {
    return refuse('not-http', 400, 'only http:// URIs are forwarded; use CONNECT for TLS', url);
  }
  if (!head.expectContinue && head.fields.lower.includes('expect')) {
    return {
      kind: 'refuse',
      reason: 'expectation',
      status: 417,
      text: 'only Expect: 100-continue is understood\n',
      logTarget: target.logTarget,
    };
  }
  return { kind: 'forward', target };
}

const TUNNEL: Route = { kind: 'tunnel' };
const HEALTH: Route = { kind: 'health' };
const METRICS: Route = { kind: 'metrics' };
const BANS: Route = { kind: 'bans' };

function refuse(reason: RouteRefusal, status: number, text: string, url: string): Route {
  return {
    kind: 'refuse',
    reason,
    status,
    text: `${text}\n`,
    logTarget: targetForLog(url).slice(0, 200),
  };
}
