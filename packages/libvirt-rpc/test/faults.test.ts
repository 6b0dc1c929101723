// Peer: a real libvirtd (Debian libvirt-daemon) that the tests stop, resume and kill.
import { type Libvirtd, startLibvirtd } from '@proxy-op/libvirt-harness';
import { describeWithPeers } from '@proxy-op/testkit';
import * as vitest from 'vitest';
import { connect, RpcError, unixDialer } from '../src/index.js';
import { createDirPool, DAEMON_PEERS, endless, volXml } from './support/real.js';

const { afterAll, beforeAll, expect, it } = vitest;

describeWithPeers(vitest, 'a real libvirtd that stops answering or dies', DAEMON_PEERS, () => {
  let daemon: Libvirtd;

  beforeAll(async () => {
    daemon = await startLibvirtd();
  });

  afterAll(async () => {
    daemon?.kill('SIGCONT');
    await daemon?.stop();
  });

  it('detects a frozen daemon with keepalive and fails the pending calls', async () => {
    const c = await connect({
      dialer: unixDialer(daemon.socket),
      uri: 'test:///default',
      keepalive: { intervalMs: 200, count: 5 },
    });
    // The last packet from the daemon comes after `before`, so the
    // connection may not be declared dead before `before` + 1 s.
    const before = Date.now();
    expect(await c.connectGetHostname()).toBeTruthy();
    daemon.kill('SIGSTOP');
    try {
      const err = await c.connectGetHostname().catch((e: unknown) => e);
      expect(RpcError.isInstance(err) && err.code).toBe('ERR_RPC_KEEPALIVE');
      expect(Date.now() - before).toBeGreaterThanOrEqual(1000);
      expect(c.rpc.isOpen).toBe(false);
    } finally {
      daemon.kill('SIGCONT');
    }
    // The daemon itself is fine: a new connection works.
    const again = await connect({ dialer: unixDialer(daemon.socket), uri: 'test:///default' });
    expect(await again.connectGetHostname()).toBeTruthy();
    await again.close();
  });

  it('fails every pending call at once when the daemon is killed mid-call, uploads included', async () => {
    const pool = `po-fault-${process.pid}`;
    await createDirPool(daemon, pool);
    const q = await connect({
      dialer: unixDialer(daemon.socket),
      uri: 'qemu:///system',
      keepalive: false,
    });
    const p = await q.storagePoolLookupByName(pool);
    const vol = await q.storageVolCreateXml(p, volXml('fault.img', 1 << 30));
    const counter = { n: 0 };
    const upload = q.storageVolUpload(vol, endless(Buffer.alloc(256 * 1024, 1), counter));
    upload.catch(() => {});
    while (counter.n < 20) await new Promise((r) => setTimeout(r, 5));

    daemon.kill('SIGSTOP');
    // Whether each call settled in the turn of the event loop in which the
    // first one did: "at once", whatever the load on the machine.
    let turnEnded = false;
    let first = true;
    const settle = () => {
      if (first) setImmediate(() => (turnEnded = true));
      first = false;
      return !turnEnded;
    };
    const calls = Array.from({ length: 10 }, () =>
      q.connectGetLibVersion().then(
        (): { ok: boolean; inTurn: boolean; e?: unknown } => ({ ok: true, inTurn: settle() }),
        (e: unknown) => ({ ok: false, inTurn: settle(), e }),
      ),
    );
    await new Promise((r) => setTimeout(r, 100));
    expect(q.rpc.pendingCount).toBe(11); // ten calls and the upload, none answered
    daemon.kill('SIGKILL');
    await daemon.exited;

    const results = await Promise.all(calls);
    const uploadErr = await upload.catch((e: unknown) => e);
    expect(
      results.every((r) => !r.ok && RpcError.isInstance(r.e) && r.e.code === 'ERR_RPC_CLOSED'),
    ).toBe(true);
    expect(results.every((r) => r.inTurn)).toBe(true);
    expect(RpcError.isInstance(uploadErr) && uploadErr.code).toBe('ERR_RPC_CLOSED');
    const readsAfter = counter.n;
    await new Promise((r) => setTimeout(r, 50));
    expect(counter.n).toBe(readsAfter);
    expect(q.rpc.pendingCount).toBe(0);
    await expect(q.connectGetLibVersion()).rejects.toMatchObject({ code: 'ERR_RPC_CLOSED' });
  });
});
