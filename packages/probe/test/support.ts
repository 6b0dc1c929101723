// Test support (not a test file): wire-level fake proxies on loopback that misbehave on purpose,
// each counting the connections it holds, and a real Squid with the locked-down configuration of
// @proxy-op/squid-config, optionally behind Basic auth (Squid's own basic_ncsa_auth).
import { execFile } from 'node:child_process';
import { type AddressInfo, createServer, type Server, type Socket } from 'node:net';
import { promisify } from 'node:util';
import { renderSquidConfig } from '@proxy-op/squid-config';
import { freePort, type RunningSquid, startSquid } from '@proxy-op/testkit';

/** A raw TCP server standing in for a proxy, with its connection counts. */
export interface FakeProxy {
  readonly host: string;
  readonly port: number;
  /** Connections open now. */
  open(): number;
  /** The most connections open at once so far. */
  readonly peak: number;
  /** Connections accepted so far. */
  readonly accepted: number;
  /** The bytes each connection sent, in order. */
  readonly received: string[];
  close(): Promise<void>;
}

/** Starts a fake proxy on `host`; `onConnection` gets each socket and what it sends. */
export async function fakeProxy(
  onConnection: (socket: Socket, request: () => string) => void,
  host = '127.0.0.1',
): Promise<FakeProxy> {
  let open = 0;
  let peak = 0;
  let accepted = 0;
  const received: string[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    accepted++;
    sockets.add(socket);
    // Counted once the events already queued have run, so a connection its client closed
    // before opening this one (its FIN came first) is no longer counted.
    let counted = false;
    let gone = false;
    const leave = () => {
      if (gone) return;
      gone = true;
      if (counted) open--;
    };
    setImmediate(() => {
      if (gone) return;
      counted = true;
      open++;
      peak = Math.max(peak, open);
    });
    const i = received.push('') - 1;
    socket.on('data', (d: Buffer) => {
      received[i] += d.toString('latin1');
    });
    socket.on('error', () => {});
    socket.on('end', leave);
    socket.on('close', () => {
      leave();
      sockets.delete(socket);
    });
    onConnection(socket, () => received[i] ?? '');
  });
  await new Promise<void>((r) => server.listen(0, host, r));
  const { port } = server.address() as AddressInfo;
  return {
    host,
    port,
    open: () => open,
    get peak() {
      return peak;
    },
    get accepted() {
      return accepted;
    },
    received,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

/** Calls `fn` once the request head has arrived on `socket`. */
export function onHead(socket: Socket, fn: (head: string) => void): void {
  let buf = '';
  const onData = (d: Buffer) => {
    buf += d.toString('latin1');
    const end = buf.indexOf('\r\n\r\n');
    if (end < 0) return;
    socket.off('data', onData);
    fn(buf.slice(0, end));
  };
  socket.on('data', onData);
}

/** Waits until `fn` is true (polling), for at most `ms`. */
export async function until(fn: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!fn()) {
    if (Date.now() > deadline) throw new Error('the condition did not come true');
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A Basic user of {@link startRealSquid}. */
export interface SquidUser {
  readonly username: string;
  readonly password: string;
}

/**
 * A real Squid on `host` with the generated configuration: the allowed
 * sources, CONNECT to `connectPorts` only; with `user`, every request must
 * carry that user's Basic credential (checked by `basic_ncsa_auth` against
 * an htpasswd file made with `openssl passwd -apr1`).
 */
export async function startRealSquid(opts: {
  readonly host: string;
  readonly allowedSources: readonly string[];
  readonly connectPorts: readonly number[];
  readonly user?: SquidUser | undefined;
}): Promise<RunningSquid & { readonly port: number }> {
  const port = await freePort(opts.host);
  let htpasswd: string | undefined;
  if (opts.user !== undefined) {
    const { stdout } = await promisify(execFile)('openssl', [
      'passwd',
      '-apr1',
      opts.user.password,
    ]);
    htpasswd = `${opts.user.username}:${stdout.trim()}\n`;
  }
  const squid = await startSquid({
    host: opts.host,
    port,
    files: htpasswd === undefined ? {} : { passwd: htpasswd },
    config: (dir) => {
      const base = renderSquidConfig({
        port,
        allowedSources: opts.allowedSources,
        // The targets are on loopback, which the default destination policy refuses.
        egress: { allow: ['127.0.0.0/8'], connectPorts: opts.connectPorts },
        listenAddress: opts.host,
        paths: { accessLog: `${dir}/access.log`, cacheLog: `${dir}/cache.log` },
      });
      if (htpasswd === undefined) return base;
      // Basic auth in front of the allowed sources, as the credentials of a Proxy will be.
      return base
        .replace(
          /^(http_port .*)$/m,
          `$1\nauth_param basic program /usr/lib/squid/basic_ncsa_auth ${dir}/passwd\nauth_param basic realm proxy-op\nacl proxy_op_users proxy_auth REQUIRED`,
        )
        .replace(
          'http_access allow proxy_op_allowed',
          'http_access allow proxy_op_allowed proxy_op_users',
        );
    },
  });
  return Object.assign(squid, { port });
}
