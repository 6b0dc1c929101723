/**
 * A pool's demand as its gateway reports it on `/metrics` (the Prometheus
 * text format): the requests and tunnels in flight through its upstreams
 * and those it holds while the pool has none. Read over loopback (the
 * standalone operator's own gateway process) with the gateway's credential.
 *
 * @module
 */
import { request } from 'node:http';
import type { Demand } from './autoscale.js';

/** The demand in a gateway's metrics text; undefined when the text has no gateway figures. */
export function parseDemand(text: string): Demand | undefined {
  let inFlight = 0;
  let waiting: number | undefined;
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m =
      /^(proxy_op_gateway_upstream_in_flight|proxy_op_gateway_waiting)(?:\{[^}]*\})? (\S+)$/.exec(
        line,
      );
    if (m === null) continue;
    const v = Number(m[2]);
    if (!Number.isFinite(v) || v < 0) return undefined;
    if (m[1] === 'proxy_op_gateway_waiting') waiting = v;
    else inFlight += v;
  }
  return waiting === undefined ? undefined : { inFlight, waiting };
}

/**
 * Reads the demand from the gateway at `url` (`http://host:port`), with
 * `authorization` (a `Basic …` value) when it asks for one; undefined when
 * it cannot be read within `timeoutMs`. The credential goes to the gateway
 * only, and no error carries it.
 */
export function readDemand(
  url: string,
  authorization: string | undefined,
  timeoutMs: number,
): Promise<Demand | undefined> {
  return new Promise((resolve) => {
    const u = new URL('/metrics', url);
    const req = request(
      {
        host: u.hostname.replace(/^\[|\]$/g, ''),
        port: u.port,
        path: '/metrics',
        agent: false,
        timeout: timeoutMs,
        headers: authorization === undefined ? {} : { 'proxy-authorization': authorization },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          if (text.length < 1 << 20) text += d;
        });
        res.on('end', () => resolve(res.statusCode === 200 ? parseDemand(text) : undefined));
        res.on('error', () => resolve(undefined));
      },
    );
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(undefined));
    req.end();
  });
}
