// Peer: ssh2's own Server class in process (fault injection), relaying the streamlocal channel to a wire-level fake libvirt.
import { once } from 'node:events';
import { sshKeyPair } from '@proxy-op/testkit';
import ssh2 from 'ssh2';
import { afterEach, describe, expect, it } from 'vitest';
import { connect, procedures, RpcError, xdr } from '../src/index.js';
import { fingerprint, SshDialError, sshDialer } from '../src/ssh.js';
import { FakeServer } from './support/fake-server.js';
import { relay } from './support/relay.js';

const { Server, utils } = ssh2;

interface Harness {
  port: number;
  pin: string;
  clientKey: string;
  socketPaths: string[];
  servers: FakeServer[];
  closed: Promise<unknown>;
  stop(): Promise<void>;
}

const running: Harness[] = [];
afterEach(async () => {
  for (const h of running.splice(0)) await h.stop();
});

/** An SSH server that accepts one client key and serves streamlocal channels with a fake libvirt. */
async function sshServer(opts: { answer: boolean }): Promise<Harness> {
  const host = sshKeyPair();
  const client = sshKeyPair();
  const allowed = utils.parseKey(client.public);
  if (allowed instanceof Error) throw allowed;
  const socketPaths: string[] = [];
  const servers: FakeServer[] = [];
  let markClosed: (v: unknown) => void = () => {};
  const closed = new Promise((r) => {
    markClosed = r;
  });
  const srv = new Server({ hostKeys: [host.private] }, (conn) => {
    conn.on('error', () => {});
    conn.on('close', () => markClosed(true));
    conn.on('authentication', (ctx) => {
      if (
        ctx.method === 'publickey' &&
        ctx.key.algo === allowed.type &&
        Buffer.from(ctx.key.data).equals(allowed.getPublicSSH())
      ) {
        ctx.accept();
      } else {
        ctx.reject(['publickey']);
      }
    });
    conn.on('ready', () => {
      conn.on('openssh.streamlocal', (accept, _reject, info) => {
        socketPaths.push(info.socketPath);
        const channel = accept();
        const fake = new FakeServer(channel);
        servers.push(fake);
        if (!opts.answer) return;
        void (async () => {
          for (;;) {
            const p = await fake.next();
            if (p.header.proc === procedures.connectSupportsFeature.proc) {
              fake.reply(
                p.header,
                xdr.encode(procedures.connectSupportsFeature.ret, { supported: 0 }),
              );
            } else if (p.header.proc === procedures.connectGetHostname.proc) {
              fake.reply(
                p.header,
                xdr.encode(procedures.connectGetHostname.ret, { hostname: 'fake-host' }),
              );
            } else if (p.header.proc !== procedures.connectGetLibVersion.proc) {
              fake.reply(p.header);
            } // CONNECT_GET_LIB_VERSION is never answered
          }
        })();
      });
    });
  });
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const port = (srv.address() as { port: number }).port;
  const hostParsed = utils.parseKey(host.public);
  if (hostParsed instanceof Error) throw hostParsed;
  const h: Harness = {
    port,
    pin: fingerprint(hostParsed.getPublicSSH()),
    clientKey: client.private,
    socketPaths,
    servers,
    closed,
    stop: async () => {
      srv.close();
    },
  };
  running.push(h);
  return h;
}

describe('the SSH dialer against ssh2 Server', () => {
  it('opens a direct-streamlocal channel to the configured socket path and speaks RPC on it', async () => {
    const h = await sshServer({ answer: true });
    const c = await connect({
      dialer: sshDialer({
        host: '127.0.0.1',
        port: h.port,
        username: 'proxyop',
        privateKey: h.clientKey,
        hostKey: { pinned: h.pin },
        socketPath: '/run/libvirt/libvirt-sock',
      }),
      uri: 'qemu:///system',
    });
    expect(await c.connectGetHostname()).toBe('fake-host');
    expect(h.socketPaths).toEqual(['/run/libvirt/libvirt-sock']);
    await c.close();
    await h.closed; // closing the client closes the SSH connection
  });

  it('times out an open the far end never answers, and drops the SSH connection', async () => {
    const h = await sshServer({ answer: false });
    const err = await connect({
      dialer: sshDialer({
        host: '127.0.0.1',
        port: h.port,
        username: 'proxyop',
        privateKey: h.clientKey,
        hostKey: { pinned: h.pin },
      }),
      uri: 'qemu:///system',
      // The deadline covers the SSH handshake too: this leaves it room on a loaded machine.
      timeoutMs: 3000,
    }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'ERR_RPC_TIMEOUT' });
    // What ran out was the open: the channel was up and the open had arrived.
    expect(h.servers.flatMap((f) => f.received.map((p) => p.header.proc))).toEqual([
      procedures.connectOpen.proc,
    ]);
    await h.closed;
  });

  it('detects a silent SSH peer with SSH keepalive and fails pending calls', async () => {
    const h = await sshServer({ answer: true });
    const r = await relay(h.port);
    try {
      const c = await connect({
        dialer: sshDialer({
          host: '127.0.0.1',
          port: r.port,
          username: 'proxyop',
          privateKey: h.clientKey,
          hostKey: { pinned: h.pin },
          // Three silent intervals in a row end it: wide enough that a loaded
          // machine does not end a live connection during the handshake.
          keepaliveIntervalMs: 250,
          keepaliveCountMax: 2,
        }),
        uri: 'qemu:///system',
        keepalive: false,
      });
      const pending = c.connectGetLibVersion().catch((e: unknown) => e); // never answered
      r.freeze();
      const err = await pending;
      expect(RpcError.isInstance(err) && err.code).toBe('ERR_RPC_CLOSED');
      expect(c.rpc.isOpen).toBe(false);
    } finally {
      await r.close();
    }
  });

  it('fails with stage connect when nothing listens', async () => {
    const h = await sshServer({ answer: true });
    await h.stop();
    const err = await sshDialer({
      host: '127.0.0.1',
      port: h.port,
      username: 'proxyop',
      privateKey: h.clientKey,
      hostKey: { pinned: h.pin },
    })({}).catch((e: unknown) => e);
    expect(SshDialError.isInstance(err) && err.stage).toBe('connect');
  });
});
