/**
 * The TLS a probe speaks inside a CONNECT tunnel to an `https:` target:
 * checked against Node's list of trusted certificates or a given `ca`, or
 * pinned by fingerprint, or not at all; one secure context per trusted set,
 * made once (making one loads the whole trusted list, which would cost more
 * than the handshake).
 *
 * @module
 */
import type { Socket } from 'node:net';
import { connect, createSecureContext, type SecureContext, type TLSSocket } from 'node:tls';
import { StepFailure } from './http.js';
import { bare, type ProbeTls } from './types.js';

const contexts = new Map<unknown, SecureContext>();

function contextFor(ca: ProbeTls['ca']): SecureContext {
  let c = contexts.get(ca);
  if (c === undefined) {
    c = createSecureContext(
      ca === undefined ? {} : { ca: ca as string | Buffer | Array<string | Buffer> },
    );
    if (contexts.size >= 64) contexts.clear();
    contexts.set(ca, c);
  }
  return c;
}

const normalPin = (f: string) => f.replace(/:/g, '').toUpperCase();

/**
 * Starts TLS over the open tunnel `raw` to the target `url`: the socket at
 * once (to close it whatever happens), and `ready` once the handshake and
 * its checks passed (rejected with the reason, in words, otherwise).
 */
export function tlsInTunnel(
  raw: Socket,
  url: URL,
  tls: ProbeTls,
): { socket: TLSSocket; ready: Promise<TLSSocket> } {
  const host = bare(url.hostname);
  const pin = tls.fingerprint256;
  const servername = tls.servername ?? (/^[\d.]+$|:/.test(host) ? undefined : host);
  const socket = connect({
    socket: raw,
    host,
    ...(servername === undefined ? {} : { servername }),
    secureContext: contextFor(tls.ca),
    rejectUnauthorized: pin === undefined && tls.verify !== false,
  });
  socket.on('error', () => {});
  const ready = new Promise<TLSSocket>((resolve, reject) => {
    socket.once('secureConnect', () => {
      if (pin !== undefined) {
        const seen = socket.getPeerCertificate().fingerprint256 ?? '';
        if (normalPin(seen) !== normalPin(pin)) {
          reject(new StepFailure(`the target's certificate (${seen}) is not the one pinned`));
          return;
        }
      }
      resolve(socket);
    });
    socket.once('error', (err) =>
      reject(new StepFailure(`TLS inside the tunnel failed: ${err.message}`)),
    );
    socket.once('close', () =>
      reject(new StepFailure('the tunnel closed during the TLS handshake')),
    );
  });
  return { socket, ready };
}
