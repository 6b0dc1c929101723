import { request } from 'node:http';
import type { Socket } from 'node:net';

const authHeader = (v: string | undefined) =>
  v === undefined ? {} : { headers: { 'proxy-authorization': v } };

/**
 * Opens a CONNECT tunnel to `target` (`host:port`) through a forward proxy.
 * Resolves with the proxy's status and, on 200, the tunnel's socket (any
 * bytes that arrived with the answer are put back on it). A refusal (403,
 * 407, ...) resolves too, with the status; only a failed connection
 * rejects. `localAddress` picks the client's source address, to test
 * `allowedSources` from another loopback address; `proxyAuthorization` is
 * sent as the `Proxy-Authorization` header.
 */
export function openTunnel(
  proxy: { address: string; port: number },
  target: string,
  opts: { localAddress?: string | undefined; proxyAuthorization?: string | undefined } = {},
): Promise<{ status: number; socket: Socket }> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: proxy.address,
      port: proxy.port,
      method: 'CONNECT',
      path: target,
      agent: false,
      ...(opts.localAddress === undefined ? {} : { localAddress: opts.localAddress }),
      ...authHeader(opts.proxyAuthorization),
    });
    req.on('connect', (res, socket, head) => {
      if (head.length > 0) socket.unshift(head);
      resolve({ status: res.statusCode ?? 0, socket });
    });
    req.on('response', (res) => {
      res.resume();
      resolve({ status: res.statusCode ?? 0, socket: res.socket });
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * Sends one plain-HTTP request through a forward proxy (the absolute URI as
 * the request target) on a connection of its own, and resolves with the
 * status and the body as text. `localAddress` picks the client's source
 * address, to test `allowedSources` from another loopback address;
 * `proxyAuthorization` is sent as the `Proxy-Authorization` header.
 */
export function requestThroughProxy(
  proxy: { address: string; port: number },
  url: string,
  opts: {
    method?: string;
    body?: string;
    localAddress?: string | undefined;
    proxyAuthorization?: string | undefined;
  } = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: proxy.address,
      port: proxy.port,
      method: opts.method ?? 'GET',
      path: url,
      agent: false,
      ...(opts.localAddress === undefined ? {} : { localAddress: opts.localAddress }),
      ...authHeader(opts.proxyAuthorization),
    });
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        body += d;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

/**
 * Sends `GET path` (with `Connection: close`) in plain HTTP over the socket
 * of an open tunnel and resolves with the body of the answer, its head
 * left out.
 */
export function getOverTunnel(socket: Socket, host: string, path = '/'): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => {
      text += d;
    });
    socket.on('end', () => resolve(text.slice(text.indexOf('\r\n\r\n') + 4)));
    socket.on('error', reject);
    socket.write(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
  });
}
