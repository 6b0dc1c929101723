/**
 * Transports: a dialer returns a connected Duplex that carries libvirt RPC.
 *
 * @module
 */
import { connect as netConnect } from 'node:net';
import type { Duplex } from 'node:stream';
import { RpcError } from './errors.js';

/** Opens a transport to a libvirt daemon; honours `signal` while connecting. */
export type Dialer = (opts: { signal?: AbortSignal | undefined }) => Promise<Duplex>;

/** The system daemon's read-write socket on most distributions. */
export const DEFAULT_SOCKET = '/var/run/libvirt/libvirt-sock';

/** Dials libvirtd's unix socket at `path` (default {@link DEFAULT_SOCKET}). */
export function unixDialer(path: string = DEFAULT_SOCKET): Dialer {
  return ({ signal }) =>
    new Promise<Duplex>((resolve, reject) => {
      if (signal?.aborted) {
        reject(new RpcError('ERR_RPC_ABORTED', `dial ${path}: aborted`, { cause: signal.reason }));
        return;
      }
      const sock = netConnect({ path });
      const onAbort = () => {
        sock.destroy();
        reject(new RpcError('ERR_RPC_ABORTED', `dial ${path}: aborted`, { cause: signal?.reason }));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      sock.once('connect', () => {
        signal?.removeEventListener('abort', onAbort);
        sock.setNoDelay?.(true);
        resolve(sock);
      });
      sock.once('error', (err) => {
        signal?.removeEventListener('abort', onAbort);
        reject(new RpcError('ERR_RPC_CLOSED', `dial ${path}: ${err.message}`, { cause: err }));
      });
    });
}

/**
 * A dialer from any Duplex: `open` is called once per dial and returns a
 * connected stream (a TLS socket, a child process's stdio, a test pair).
 */
export function duplexDialer(open: () => Duplex | Promise<Duplex>): Dialer {
  return async ({ signal }) => {
    if (signal?.aborted) {
      throw new RpcError('ERR_RPC_ABORTED', 'dial: aborted', { cause: signal.reason });
    }
    return open();
  };
}
