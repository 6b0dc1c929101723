// A TCP relay on loopback that a test can freeze or cut, to lose an SSH
// connection in the middle of a call.
import { once } from 'node:events';
import { createServer, type Socket, connect as tcpConnect } from 'node:net';

export interface Relay {
  readonly port: number;
  /** Destroys every relayed connection. */
  cut(): void;
  /** Stops forwarding in both directions without closing anything. */
  freeze(): void;
  close(): Promise<void>;
}

export async function relay(port: number): Promise<Relay> {
  const sockets = new Set<Socket>();
  const pairs: [Socket, Socket][] = [];
  const srv = createServer((inbound) => {
    const outbound = tcpConnect(port, '127.0.0.1');
    sockets.add(inbound).add(outbound);
    pairs.push([inbound, outbound]);
    inbound.pipe(outbound).pipe(inbound);
    inbound.on('error', () => outbound.destroy());
    outbound.on('error', () => inbound.destroy());
  });
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const addr = srv.address();
  if (addr === null || typeof addr === 'string') throw new Error('no address');
  return {
    port: addr.port,
    cut: () => {
      for (const s of sockets) s.destroy();
    },
    freeze: () => {
      for (const [a, b] of pairs) {
        a.unpipe(b);
        b.unpipe(a);
        a.pause();
        b.pause();
      }
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      srv.close();
      await once(srv, 'close');
    },
  };
}
