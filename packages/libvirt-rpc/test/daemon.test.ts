// Peer: a real libvirtd (Debian libvirt-daemon) started in a temp dir, with virsh on the same daemon as the oracle.
import { type Libvirtd, startLibvirtd } from '@proxy-op/libvirt-harness';
import { describeWithPeers } from '@proxy-op/testkit';
import * as vitest from 'vitest';
import {
  connect,
  type Dialer,
  DomainState,
  DomainUndefineFlags,
  ErrorCode,
  ErrorDomain,
  InterfaceAddressSource,
  isLibvirtError,
  KEEPALIVE_PROGRAM,
  type LibvirtClient,
  LibvirtError,
  MetadataType,
  StoragePoolState,
  unixDialer,
} from '../src/index.js';
import {
  createDirPool,
  DAEMON_PEERS,
  domainXml,
  endless,
  HAS_C_CLIENT,
  python,
  random,
  readAll,
  sha256,
  volXml,
} from './support/real.js';

const { afterAll, beforeAll, expect, it } = vitest;

describeWithPeers(vitest, 'a real libvirtd over its unix socket', DAEMON_PEERS, () => {
  let daemon: Libvirtd;
  let test: LibvirtClient;
  let qemu: LibvirtClient;
  const pool = `po-rpc-${process.pid}`;

  beforeAll(async () => {
    daemon = await startLibvirtd();
    test = await connect({ dialer: unixDialer(daemon.socket), uri: 'test:///default' });
    qemu = await connect({ dialer: unixDialer(daemon.socket), uri: 'qemu:///system' });
    await createDirPool(daemon, pool);
  });

  afterAll(async () => {
    await test?.close();
    await qemu?.close();
    await daemon?.virsh('qemu:///system', ['pool-destroy', pool]).catch(() => {});
    await daemon?.stop();
  });

  it('reports the same library version and hostname as virsh', async () => {
    const out = await daemon.virsh('test:///default', ['version', '--daemon']);
    const m = /Running against daemon: (\d+)\.(\d+)\.(\d+)/.exec(out);
    expect(m).not.toBeNull();
    const [, a, b, c] = m!;
    expect(await test.connectGetLibVersion()).toBe(
      Number(a) * 1_000_000 + Number(b) * 1000 + Number(c),
    );
    expect(await test.connectGetHostname()).toBe(
      (await daemon.virsh('test:///default', ['hostname'])).trim(),
    );
  });

  it('lists the same domains as virsh list --all', async () => {
    const names = (await test.connectListAllDomains()).map((d) => d.name).sort();
    const oracle = (await daemon.virsh('test:///default', ['list', '--all', '--name']))
      .split('\n')
      .map((s) => s.trim())
      .filter(Boolean)
      .sort();
    expect(names).toEqual(oracle);
    expect(names).toContain('test');
  });

  it('defines, starts, reads and removes a domain, each step checked with virsh', async () => {
    const name = `rpc-dom-${process.pid}`;
    const dom = await test.domainDefineXmlFlags(domainXml(name), 0);
    expect(dom.name).toBe(name);
    expect(dom.id).toBe(-1);
    expect((await daemon.virsh('test:///default', ['domstate', name])).trim()).toBe('shut off');
    expect(await test.domainGetState(dom)).toMatchObject({ state: DomainState.SHUTOFF });

    await test.domainCreate(dom);
    expect((await daemon.virsh('test:///default', ['domstate', name])).trim()).toBe('running');
    const running = await test.domainLookupByName(name);
    expect(running.id).toBeGreaterThan(0);
    expect(Buffer.from(running.uuid).toString('hex')).toBe(
      (await daemon.virsh('test:///default', ['domuuid', name])).trim().replaceAll('-', ''),
    );
    expect(await test.domainGetState(running)).toMatchObject({ state: DomainState.RUNNING });
    expect(await test.domainGetXmlDesc(running)).toBe(
      await daemon.virsh('test:///default', ['dumpxml', name]),
    );

    await test.domainDestroyFlags(running, 0);
    expect((await daemon.virsh('test:///default', ['domstate', name])).trim()).toBe('shut off');
    await test.domainUndefineFlags(dom, DomainUndefineFlags.MANAGED_SAVE);
    const err = await test.domainLookupByName(name).catch((e: unknown) => e);
    expect(isLibvirtError(err, ErrorCode.ERR_NO_DOMAIN)).toBe(true);
    await expect(daemon.virsh('test:///default', ['dominfo', name])).rejects.toThrow(
      /failed to get domain/,
    );
  });

  it('writes metadata virsh reads back, and reads what virsh writes', async () => {
    const dom = await test.domainLookupByName('test');
    const uri = 'https://proxy-op.dev/xmlns/rpc-test';
    await test.domainSetMetadata(
      dom,
      MetadataType.ELEMENT,
      '<instance uid="6c1d5f0e" createdAt="2026-11-29T00:00:00Z"/>',
      'po',
      uri,
    );
    const viaVirsh = await daemon.virsh('test:///default', ['metadata', 'test', uri]);
    expect(viaVirsh).toMatch(/<instance uid="6c1d5f0e" createdAt="2026-11-29T00:00:00Z"\/>/);
    expect(await test.domainGetMetadata(dom, MetadataType.ELEMENT, uri)).toBe(viaVirsh.trim());

    await daemon.virsh('test:///default', ['desc', 'test', '--title', 'from virsh']);
    expect(await test.domainGetMetadata(dom, MetadataType.TITLE, undefined)).toBe('from virsh');

    await test.domainSetMetadata(dom, MetadataType.ELEMENT, undefined, undefined, uri);
    const err = await test
      .domainGetMetadata(dom, MetadataType.ELEMENT, uri)
      .catch((e: unknown) => e);
    expect(isLibvirtError(err, ErrorCode.ERR_NO_DOMAIN_METADATA)).toBe(true);
  });

  it('reads interface addresses like virsh domifaddr', async () => {
    const dom = await test.domainLookupByName('test');
    const ifaces = await test.domainInterfaceAddresses(dom, InterfaceAddressSource.LEASE);
    const oracle = await daemon.virsh('test:///default', ['domifaddr', 'test']);
    expect(ifaces.length).toBeGreaterThan(0);
    for (const i of ifaces) {
      expect(oracle).toContain(i.name);
      for (const a of i.addrs) expect(oracle).toContain(`${a.addr}/${a.prefix}`);
      if (i.hwaddr !== undefined) expect(oracle).toContain(i.hwaddr);
    }
  });

  it.skipIf(!HAS_C_CLIENT)(
    'reports libvirt errors with code, domain, level and message as the C client does',
    async () => {
      const err = await test.domainLookupByName('no-such-domain').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(LibvirtError);
      const e = err as LibvirtError;
      expect(e.code).toBe(ErrorCode.ERR_NO_DOMAIN);
      expect(e.level).toBe(2);
      expect(e.domain).toBeGreaterThan(0);
      // The C client (python3-libvirt) on the same daemon sees the same error.
      const oracle = JSON.parse(
        await python(
          daemon,
          'test:///default',
          [
            'try:',
            "    conn.lookupByName('no-such-domain')",
            'except libvirt.libvirtError as e:',
            '    print(json.dumps([e.get_error_code(), e.get_error_domain(), e.get_error_level(), e.get_error_message()]))',
          ].join('\n'),
        ),
      ) as [number, number, number, string];
      expect([e.code, e.domain, e.level, e.message]).toEqual(oracle);
    },
  );

  it.skipIf(!HAS_C_CLIENT)('has the error code numbers libvirt itself uses', async () => {
    const names = Object.keys(ErrorCode).map((k) => `VIR_${k}`);
    const domains = Object.keys(ErrorDomain).map((k) => `VIR_${k}`);
    const oracle = JSON.parse(
      await python(
        daemon,
        'test:///default',
        `print(json.dumps([[getattr(libvirt, n) for n in ${JSON.stringify(names)}], [getattr(libvirt, n) for n in ${JSON.stringify(domains)}]]))`,
      ),
    ) as [number[], number[]];
    expect(Object.values(ErrorCode)).toEqual(oracle[0]);
    expect(Object.values(ErrorDomain)).toEqual(oracle[1]);
  });

  it('reads a dir pool like virsh pool-info and pool-dumpxml', async () => {
    const p = await qemu.storagePoolLookupByName(pool);
    expect(p.name).toBe(pool);
    await qemu.storagePoolRefresh(p);
    const info = await qemu.storagePoolGetInfo(p);
    expect(info.state).toBe(StoragePoolState.RUNNING);
    const oracle = await daemon.virsh('qemu:///system', ['pool-info', pool, '--bytes']);
    expect(oracle).toMatch(new RegExp(`Capacity:\\s+${info.capacity}\\b`));
    expect(await qemu.storagePoolGetXmlDesc(p)).toBe(
      await daemon.virsh('qemu:///system', ['pool-dumpxml', pool]),
    );
    const err = await qemu.storagePoolLookupByName('no-such-pool').catch((x: unknown) => x);
    expect(isLibvirtError(err, ErrorCode.ERR_NO_STORAGE_POOL)).toBe(true);
  });

  it('creates, uploads, downloads and deletes a volume, cross-checked with virsh', async () => {
    const p = await qemu.storagePoolLookupByName(pool);
    const size = 3 * 1024 * 1024 + 12_345;
    const vol = await qemu.storageVolCreateXml(p, volXml('rpc-vol.img', size));
    expect(vol).toMatchObject({ pool, name: 'rpc-vol.img' });
    const path = await qemu.storageVolGetPath(vol);
    expect(path).toBe(
      (await daemon.virsh('qemu:///system', ['vol-path', 'rpc-vol.img', '--pool', pool])).trim(),
    );
    const info = await qemu.storageVolGetInfo(vol);
    expect(info.capacity).toBe(size);

    const dup = await qemu
      .storageVolCreateXml(p, volXml('rpc-vol.img', size))
      .catch((e: unknown) => e);
    expect(isLibvirtError(dup, ErrorCode.ERR_STORAGE_VOL_EXIST)).toBe(true);

    const data = random(size);
    // Fed in odd-sized chunks to exercise packet splitting.
    const chunks = [data.subarray(0, 1000), data.subarray(1000, 700_001), data.subarray(700_001)];
    await qemu.storageVolUpload(vol, chunks);
    const { readFile } = await import('node:fs/promises');
    expect(sha256(await readFile(path))).toBe(sha256(data));

    const body = await readAll(await qemu.storageVolDownload(vol));
    expect(sha256(body)).toBe(sha256(data));
    const part = await readAll(
      await qemu.storageVolDownload(vol, { offset: 4096, length: 10_000 }),
    );
    expect(part.equals(data.subarray(4096, 14_096))).toBe(true);

    // What virsh uploads, this client downloads.
    const { writeFile } = await import('node:fs/promises');
    const other = random(size);
    const src = `${daemon.dir}/from-virsh.bin`;
    await writeFile(src, other);
    await daemon.virsh('qemu:///system', ['vol-upload', 'rpc-vol.img', src, '--pool', pool]);
    expect(sha256(await readAll(await qemu.storageVolDownload(vol)))).toBe(sha256(other));

    await qemu.storageVolDelete(vol);
    const gone = await qemu.storageVolLookupByName(p, 'rpc-vol.img').catch((e: unknown) => e);
    expect(isLibvirtError(gone, ErrorCode.ERR_NO_STORAGE_VOL)).toBe(true);
    await expect(
      daemon.virsh('qemu:///system', ['vol-info', 'rpc-vol.img', '--pool', pool]),
    ).rejects.toThrow();
  });

  it('lists the volumes of a pool as virsh vol-list does', async () => {
    const p = await qemu.storagePoolLookupByName(pool);
    const made = await qemu.storageVolCreateXml(p, volXml('rpc-listed.img', 4096));
    try {
      const vols = await qemu.storagePoolListAllVolumes(p);
      expect(vols).toContainEqual({ pool, name: 'rpc-listed.img', key: made.key });
      // virsh vol-list: a header, a rule, then one "name  path" line per volume.
      const oracle = [
        ...(await daemon.virsh('qemu:///system', ['vol-list', pool])).matchAll(
          /^\s*(\S+)\s+\/\S*$/gm,
        ),
      ].map((m) => m[1]);
      expect(vols.map((v) => v.name).sort()).toEqual(oracle.sort());
    } finally {
      await qemu.storageVolDelete(made);
    }
  });

  it('reads a qcow2 overlay volume as virsh vol-dumpxml does, backing store included', async () => {
    const p = await qemu.storagePoolLookupByName(pool);
    const base = await qemu.storageVolCreateXml(
      p,
      '<volume><name>rpc-base.qcow2</name><capacity unit="bytes">1048576</capacity><target><format type="qcow2"/></target></volume>',
    );
    const basePath = await qemu.storageVolGetPath(base);
    const overlay = await qemu.storageVolCreateXml(
      p,
      `<volume><name>rpc-overlay.qcow2</name><capacity unit="bytes">2097152</capacity><target><format type="qcow2"/></target><backingStore><path>${basePath}</path><format type="qcow2"/></backingStore></volume>`,
    );
    try {
      const xml = await qemu.storageVolGetXmlDesc(overlay);
      expect(xml).toBe(
        await daemon.virsh('qemu:///system', ['vol-dumpxml', 'rpc-overlay.qcow2', '--pool', pool]),
      );
      expect(xml).toContain(`<path>${basePath}</path>`);
      expect(xml).toMatch(/<capacity unit='bytes'>2097152<\/capacity>/);
      await qemu.storageVolDelete(overlay);
      const gone = await qemu.storageVolGetXmlDesc(overlay).catch((e: unknown) => e);
      expect(isLibvirtError(gone, ErrorCode.ERR_NO_STORAGE_VOL)).toBe(true);
    } finally {
      await qemu.storageVolDelete(overlay).catch(() => {});
      await qemu.storageVolDelete(base);
    }
  });

  it('fails an upload and a download the daemon refuses and keeps the connection usable', async () => {
    const p = await qemu.storagePoolLookupByName(pool);
    const vol = await qemu.storageVolCreateXml(p, volXml('rpc-gone.img', 4096));
    await daemon.virsh('qemu:///system', ['vol-delete', 'rpc-gone.img', '--pool', pool]);
    const err = await qemu.storageVolUpload(vol, [random(4096)]).catch((e: unknown) => e);
    expect(isLibvirtError(err, ErrorCode.ERR_NO_STORAGE_VOL)).toBe(true);
    const down = await qemu.storageVolDownload(vol).catch((e: unknown) => e);
    expect(isLibvirtError(down, ErrorCode.ERR_NO_STORAGE_VOL)).toBe(true);
    expect(await qemu.storagePoolGetInfo(p)).toMatchObject({ state: StoragePoolState.RUNNING });
  });

  it('aborts an upload and a download on the daemon mid-stream and keeps using the connection', async () => {
    const p = await qemu.storagePoolLookupByName(pool);
    const size = 64 * 1024 * 1024;
    const vol = await qemu.storageVolCreateXml(p, volXml('rpc-abort.img', size));
    const ac = new AbortController();
    const counter = { n: 0 };
    const upload = qemu.storageVolUpload(vol, endless(Buffer.alloc(256 * 1024, 3), counter), {
      signal: ac.signal,
    });
    while (counter.n < 8) await new Promise((r) => setTimeout(r, 2));
    ac.abort(new Error('stop'));
    await expect(upload).rejects.toMatchObject({ code: 'ERR_RPC_ABORTED' });

    // The daemon confirmed the abort: the same connection uploads in full.
    const data = random(1024 * 1024);
    await qemu.storageVolUpload(vol, [data], { length: data.length });
    const head = await readAll(await qemu.storageVolDownload(vol, { length: data.length }));
    expect(head.equals(data)).toBe(true);

    const body = await qemu.storageVolDownload(vol, { highWaterMark: 256 * 1024 });
    for await (const _ of body) break; // read one chunk, then give up
    expect(body.destroyed).toBe(true);
    expect(await qemu.storagePoolGetInfo(p)).toMatchObject({ state: StoragePoolState.RUNNING });
    // The daemon confirms the download's abort in its own time.
    await vitest.vi.waitFor(
      () => {
        expect(qemu.rpc.pendingCount).toBe(0);
        expect(qemu.rpc.abandonedCount).toBe(0);
      },
      { timeout: 30_000, interval: 5 },
    );
    await qemu.storageVolDelete(vol);
  });

  it('runs hundreds of concurrent calls on one connection, each with its own answer', async () => {
    const names = ['test', 'no-such-1', 'no-such-2'];
    const results = await Promise.all(
      Array.from({ length: 300 }, (_, i) => {
        const name = names[i % 3]!;
        return test.domainLookupByName(name).then(
          (d) => d.name,
          (e: unknown) => (isLibvirtError(e, ErrorCode.ERR_NO_DOMAIN) ? `missing:${name}` : e),
        );
      }),
    );
    results.forEach((r, i) => {
      const name = names[i % 3]!;
      expect(r).toBe(name === 'test' ? 'test' : `missing:${name}`);
    });
  });

  it('drops a call cancelled while others are in flight; the others and later calls still answer', async () => {
    // The daemon is stopped while the calls go out, so the cancelled call
    // has been sent and its reply is still to come when it is cancelled.
    const ac = new AbortController();
    daemon.kill('SIGSTOP');
    let inflight: Promise<unknown>[];
    try {
      inflight = Array.from({ length: 50 }, (_, i) =>
        i === 25
          ? test.connectGetHostname({ signal: ac.signal }).catch((e: unknown) => e)
          : test.connectGetLibVersion(),
      );
      await new Promise((r) => setImmediate(r)); // the batch is written
      ac.abort();
      expect(test.rpc.abandonedCount).toBe(1);
    } finally {
      daemon.kill('SIGCONT');
    }
    const results = await Promise.all(inflight);
    expect(results[25]).toMatchObject({ code: 'ERR_RPC_ABORTED' });
    const version = results[0];
    for (const [i, r] of results.entries()) if (i !== 25) expect(r).toBe(version);
    // The cancelled call's late reply is dropped by serial, not handed to a later call.
    expect(await test.connectGetHostname()).toBe(
      (await daemon.virsh('test:///default', ['hostname'])).trim(),
    );
    await vitest.vi.waitFor(() => expect(test.rpc.abandonedCount).toBe(0), {
      timeout: 30_000,
      interval: 5,
    });
    expect(test.rpc.isOpen).toBe(true);
  });

  it('drops a call cancelled before it was written without sending it', async () => {
    const ac = new AbortController();
    const calls = Array.from({ length: 10 }, (_, i) =>
      test.connectGetLibVersion(i === 5 ? { signal: ac.signal } : {}).catch((e: unknown) => e),
    );
    ac.abort();
    const results = await Promise.all(calls);
    expect(results[5]).toMatchObject({ code: 'ERR_RPC_ABORTED' });
    for (const [i, r] of results.entries()) if (i !== 5) expect(typeof r).toBe('number');
    expect(test.rpc.abandonedCount).toBe(0);
    expect(test.rpc.pendingCount).toBe(0);
  });

  it('keeps an idle connection alive with keepalive pings the daemon answers', async () => {
    // Counts the daemon's pongs on the wire: 28-byte keepalive packets, procedure 2.
    let pongs = 0;
    let heard!: () => void;
    const threePongs = new Promise<void>((r) => {
      heard = r;
    });
    const dialer: Dialer = async (o) => {
      const io = await unixDialer(daemon.socket)(o);
      let buf = Buffer.alloc(0);
      io.on('data', (chunk: Buffer) => {
        buf = Buffer.concat([buf, chunk]);
        while (buf.length >= 4 && buf.length >= buf.readUInt32BE(0)) {
          const len = buf.readUInt32BE(0);
          if (buf.readUInt32BE(4) === KEEPALIVE_PROGRAM && buf.readInt32BE(12) === 2) pongs++;
          buf = buf.subarray(len);
        }
        if (pongs >= 3) heard();
      });
      return io;
    };
    // A death window (10 s) far beyond any stall of a loaded machine: the
    // test waits for the pongs, not for a clock.
    const c = await connect({
      dialer,
      uri: 'test:///default',
      keepalive: { intervalMs: 50, count: 200 },
    });
    await threePongs;
    expect(c.rpc.isOpen).toBe(true);
    expect(await c.connectGetHostname()).toBeTruthy();
    await c.close();
    expect(c.rpc.isOpen).toBe(false);
  });
});
