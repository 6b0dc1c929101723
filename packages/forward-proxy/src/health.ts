/**
 * The proxy's health check from the outside: `GET /healthz`, answered
 * `200 ok` with an `x-proxy-op-instance` header naming the instance, so a
 * caller can tell that its proxy, not some other program, answers on an
 * address.
 *
 * @module
 */
import { request } from 'node:http';

/**
 * GET /healthz on the proxy at `address:port`: true when it answers 200
 * with `name` as its instance, false when it answers otherwise, not at all
 * or not within `timeoutMs`. Rejects when `signal` fires, and when the
 * address cannot be used at all (`EADDRNOTAVAIL`). `localAddress` is the
 * source address to ask from (the system picks one when unset): a
 * supervisor asks from the address the proxy's `healthSources` name.
 */
export function probeHealth(
  name: string,
  address: string,
  port: number,
  timeoutMs: number,
  signal?: AbortSignal,
  localAddress?: string,
): Promise<boolean> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const req = request({
      host: address,
      port,
      path: '/healthz',
      method: 'GET',
      agent: false,
      timeout: timeoutMs,
      signal,
      ...(localAddress === undefined ? {} : { localAddress }),
    });
    req.on('timeout', () => {
      req.destroy();
      resolve(false);
    });
    req.on('error', (err) => {
      if (signal?.aborted) reject(signal.reason);
      else if ((err as NodeJS.ErrnoException).code === 'EADDRNOTAVAIL') reject(err);
      else resolve(false);
    });
    req.on('response', (res) => {
      res.resume();
      resolve(res.statusCode === 200 && res.headers['x-proxy-op-instance'] === name);
    });
    req.end();
  });
}
