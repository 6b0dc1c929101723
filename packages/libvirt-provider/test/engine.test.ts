// Peer: the in-memory libvirt model behind the engine (connections, dials, adoption, listing, addresses, logs and spans).
import { rmSync, writeFileSync } from 'node:fs';
import { DomainState } from '@proxy-op/libvirt-rpc';
import { createLogSink, createSpanRecorder, leakedIn } from '@proxy-op/providertest';
import { afterEach, describe, expect, it } from 'vitest';
import { libvirtProviderModule } from '../src/module.js';
import {
  createModelFixture,
  idParts,
  type ModelFixture,
  newPrivateKey,
} from './support/fixture.js';
import { otherFlavour, testFlavour } from './support/flavours.js';

const module = libvirtProviderModule(testFlavour);
const fixtures: ModelFixture[] = [];

afterEach(async () => {
  for (const fx of fixtures.splice(0)) await fx.cleanup?.();
});

async function fixture(flavour = testFlavour, config: Record<string, unknown> = {}) {
  const logs = createLogSink();
  const spans = createSpanRecorder();
  const fx = await createModelFixture(
    flavour === testFlavour ? module : libvirtProviderModule(flavour),
    flavour,
    { logger: logs.logger, tracer: spans.tracer },
    { config },
  );
  fixtures.push(fx);
  return { fx, logs, spans, provider: fx.provider };
}

let n = 0;
function request(patch: Record<string, unknown> = {}) {
  n++;
  return {
    name: `proxy-eng-${n}`,
    namespace: 'default',
    uid: `uid-eng-${n}`,
    port: 3128,
    cloudInit: new TextEncoder().encode('#cloud-config\n# ENGINE-CLOUDINIT-SENTINEL\n'),
    placement: { zone: 'kvm-a', machineType: 'small', image: 'tiny' },
    ...patch,
  };
}

/**
 * A Create of `req` cancelled while the model holds its call `method` (the one `match`
 * picks); the held call is then released, so the daemon carries it out after its caller
 * gave up, as a real in-flight call would be.
 */
async function cancelledAt(
  fx: ModelFixture,
  provider: Awaited<ReturnType<typeof fixture>>['provider'],
  req: ReturnType<typeof request>,
  method: string,
  match?: (a: Record<string, unknown>) => boolean,
): Promise<void> {
  const held = fx.model.holdNext(method, match);
  const ac = new AbortController();
  const first = provider.create(req, { signal: ac.signal });
  first.catch(() => {});
  await held.reached;
  ac.abort();
  expect(await first.catch((e: unknown) => e)).toMatchObject({ errorClass: 'Transient' });
  held.release();
}

describe('connections', () => {
  it('builds without a call, then keeps one pooled connection per host and redials a dead one', async () => {
    const { fx, provider } = await fixture();
    expect(fx.model.calls).toEqual([]);
    const id = await provider.create(request());
    await provider.get(id);
    await provider.listByTag();
    const dials = () => fx.model.calls.filter((c) => c.method === 'dial').map((c) => c.host);
    // kvm-a: the pooled connection and the image upload's own; kvm-b: pooled, for the listing.
    expect(dials()).toEqual(['kvm-a', 'kvm-a', 'kvm-b']);
    fx.model.dropConnections('kvm-a');
    await provider.get(id);
    expect(dials()).toEqual(['kvm-a', 'kvm-a', 'kvm-b', 'kvm-a']);
  });

  it('does not keep a failed dial: the next call dials again', async () => {
    const { fx, provider } = await fixture();
    const id = await provider.create(request());
    fx.model.dropConnections();
    fx.model.host('kvm-a').reachable = false;
    expect(await provider.get(id).catch((e: unknown) => e)).toMatchObject({
      errorClass: 'Transient',
    });
    fx.model.host('kvm-a').reachable = true;
    expect((await provider.get(id)).id).toBe(id);
  });

  it('reads the SSH material on every dial and says what to fix, never the key', async () => {
    const { fx, provider, logs } = await fixture();
    const id = await provider.create(request());
    const key = fx.harness.credentialSentinel as string;
    fx.model.dropConnections();
    rmSync(fx.keyFile);
    const missing = await provider.get(id).catch((e: unknown) => e);
    expect(missing).toMatchObject({ errorClass: 'Transient' });
    expect((missing as Error).message).toBe(
      `cannot read testvirt.sshKeyFile ${fx.keyFile} (ENOENT): mount the SSH key Secret there or fix the path`,
    );
    writeFileSync(fx.keyFile, 'not a key at all\n');
    const garbage = await provider.get(id).catch((e: unknown) => e);
    expect(garbage).toMatchObject({ errorClass: 'Permanent' });
    expect((garbage as Error).message).toContain('does not hold a private key');
    const other = newPrivateKey();
    writeFileSync(fx.keyFile, other);
    const refused = await provider.get(id).catch((e: unknown) => e);
    expect(refused).toMatchObject({ errorClass: 'Permanent' });
    expect((refused as Error).message).toBe(
      `proxyop@kvm-a.model.test:22 (host kvm-a) refused the key in testvirt.sshKeyFile ${fx.keyFile}: add its public key to the authorized_keys of proxyop on the host, or fix hosts[].user`,
    );
    writeFileSync(fx.keyFile, key);
    fx.model.host('kvm-a').hostKey = Buffer.from(fx.model.host('kvm-a').hostKey).fill(1, 19);
    const hostKey = await provider.get(id).catch((e: unknown) => e);
    expect(hostKey).toMatchObject({ errorClass: 'Permanent' });
    expect((hostKey as Error).message).toBe(
      `the SSH host key of kvm-a.model.test:22 (host kvm-a) is not accepted by testvirt.knownHostsFile ${fx.knownHostsFile}: check the host's key fingerprint, then add it (ssh-keyscan -p 22 kvm-a.model.test), or fix the host's address`,
    );
    for (const k of [key, other]) expect(leakedIn(logs.text(), k)).toBeUndefined();
    expect(
      logs.lines.filter((l) => l.msg === 'libvirt host connect failed').map((l) => l.fields.stage),
    ).toEqual(['credentials', 'credentials', 'auth', 'hostkey']);
  });

  it('warns at build time about an insecure host-key policy and hosts without a bridge', async () => {
    const logs = createLogSink();
    const fx = await createModelFixture(
      module,
      testFlavour,
      { logger: logs.logger, tracer: createSpanRecorder().tracer },
      {
        config: {
          knownHostsFile: undefined,
          insecureIgnoreHostKey: true,
          hosts: [{ name: 'kvm-a', address: 'kvm-a.model.test', user: 'proxyop' }],
        },
        hosts: ['kvm-a'],
      },
    );
    fixtures.push(fx);
    expect(logs.lines.filter((l) => l.level === 'warn').map((l) => l.msg)).toEqual([
      'testvirt accepts any SSH host key (insecureIgnoreHostKey): use it for tests only',
      'testvirt host kvm-a has no bridge: its guests get QEMU user networking, reachable from that host only',
    ]);
    expect(fx.model.calls).toEqual([]);
    // Any host key is accepted then.
    fx.model.host('kvm-a').hostKey = Buffer.alloc(51, 3);
    expect(await fx.provider.create(request())).toBe(`hosts/kvm-a/domains/proxy-eng-${n}`);
  });
});

describe('operations', () => {
  it('answers Get and Delete for a host no longer in the config with a clear Permanent error', async () => {
    const { fx, provider } = await fixture();
    const id = await provider.create(request());
    const config = {
      ...fx.config,
      hosts: (fx.config.hosts as { name: string }[]).filter((h) => h.name !== 'kvm-a'),
    };
    const later = await fx.another(config);
    try {
      const del = await later.delete(id).catch((e: unknown) => e);
      expect(del).toMatchObject({ errorClass: 'Permanent' });
      expect((del as Error).message).toBe(
        `host kvm-a of ${id} is not in testvirt.hosts: add it back so the domain can be deleted, or remove the domain and its volumes on that host by hand`,
      );
      expect(await later.get(id).catch((e: unknown) => e)).toMatchObject({
        errorClass: 'Permanent',
      });
      expect(fx.model.domains()).toHaveLength(1);
    } finally {
      await later.close?.();
    }
  });

  it('starts an adopted domain that is shut off, and refuses a paused one', async () => {
    const { fx, provider } = await fixture();
    const req = request();
    const id = await provider.create(req);
    const d = fx.model.domain('kvm-a', req.name);
    d.state = DomainState.SHUTOFF;
    d.reason = 1;
    expect(await provider.create(req)).toBe(id);
    expect(d.state).toBe(DomainState.RUNNING);
    d.state = DomainState.PAUSED;
    const paused = await provider.create(req).catch((e: unknown) => e);
    expect(paused).toMatchObject({ errorClass: 'Permanent' });
    expect((paused as Error).message).toContain(
      'is paused; resume it on the host (virsh resume) or delete it',
    );
  });

  it('adopts its own domain when another attempt defined it between the lookup and the define', async () => {
    const { fx, provider } = await fixture();
    const req = request();
    const held = fx.model.holdNext('domainDefineXml');
    const creating = provider.create(req);
    await held.reached;
    // Another attempt (a second operator process, say) got there first, marking it for this Proxy.
    const first = await fx.another();
    try {
      const other = first.create(req);
      held.release();
      const [a, b] = await Promise.all([creating, other]);
      expect(a).toBe(b);
      expect(fx.model.domains()).toHaveLength(1);
    } finally {
      await first.close?.();
    }
  });

  it('makes the overlay again when the one an earlier attempt left goes while it is looked at', async () => {
    const { fx, provider } = await fixture();
    const req = request();
    const overlay = `${req.name}.qcow2`;
    // An attempt cut off after its overlay, at its seed: the overlay stays behind.
    await cancelledAt(
      fx,
      provider,
      req,
      'storageVolCreateXml',
      (a) => a.name === `${req.name}-seed.iso`,
    );
    expect(fx.model.volumes().map((v) => v.name)).toContain(overlay);
    // The retry finds it, and it is gone (that attempt's daemon-side work, say) when it reads it.
    const reading = fx.model.holdNext(
      'storageVolGetXmlDesc',
      (a) => (a.vol as { name?: string } | undefined)?.name === overlay,
    );
    const retry = provider.create(req);
    await reading.reached;
    for (const pool of fx.model.host('kvm-a').pools.values()) pool.volumes.delete(overlay);
    reading.release();
    await retry;
    expect(fx.model.volumes().filter((v) => v.name === overlay)).toHaveLength(1);
    expect(fx.model.domains()).toHaveLength(1);
  });

  it('waits for an overlay the daemon is still building for a cancelled attempt, instead of giving up', async () => {
    const { fx, provider } = await fixture();
    // qemu-img on a loaded host: the overlay is listed, and unreadable, for this long.
    fx.model.host('kvm-a').buildMs = 400;
    const req = request();
    const overlay = `${req.name}.qcow2`;
    await cancelledAt(fx, provider, req, 'storageVolCreateXml', (a) => a.name === overlay);
    // The retry finds the overlay while its file is not there yet and waits; it then reads the
    // half-written header (capacity 0), which does not match: it deletes that overlay once the
    // daemon lets it (still being allocated until then) and makes its own.
    await provider.create(req);
    expect(fx.model.volumes().filter((v) => v.name === overlay)).toHaveLength(1);
    const on = (method: string) =>
      fx.model.calls.filter((c) => c.method === method && c.target === overlay).length;
    expect(on('storageVolGetXmlDesc')).toBeGreaterThan(1);
    expect(on('storageVolDelete'), 'a delete refused while the build went on').toBeGreaterThan(1);
    expect(fx.model.domains()).toHaveLength(1);
  });

  it('waits out a start that a cancelled attempt left under way, instead of refusing a paused domain', async () => {
    const { fx, provider } = await fixture();
    fx.model.host('kvm-a').startMs = 300;
    const req = request();
    await cancelledAt(fx, provider, req, 'domainCreate');
    // The daemon starts the domain now (paused, starting up) while the retry looks at it.
    await new Promise((r) => setTimeout(r, 50));
    expect(fx.model.domain('kvm-a', req.name)).toMatchObject({
      state: DomainState.PAUSED,
      reason: 11,
    });
    expect((await provider.get(`hosts/kvm-a/domains/${req.name}`)).state).toBe('Provisioning');
    await provider.create(req);
    expect(fx.model.domain('kvm-a', req.name).state).toBe(DomainState.RUNNING);
    expect(fx.model.calls.filter((c) => c.method === 'domainCreate')).toHaveLength(1);
  });

  it('lists marks only: one listing and one metadata read per domain, unreadable ones skipped', async () => {
    const { fx, provider, logs } = await fixture();
    const id = await provider.create(request());
    const bad = fx.model.plantDomain(fx.model.host('kvm-b'), {
      name: 'proxy-unreadable',
      metadata: [[testFlavour.metadata.uri, '<something-else/>']],
      state: DomainState.RUNNING,
      reason: 1,
    });
    fx.model.plantDomain(fx.model.host('kvm-b'), {
      name: 'Not_A_Label',
      metadata: [
        [
          testFlavour.metadata.uri,
          '<instance proxy-operator-managed="true" proxy-operator-uid="x"/>',
        ],
      ],
      state: DomainState.RUNNING,
      reason: 1,
    });
    const before = fx.model.calls.length;
    const listed = await provider.listByTag();
    expect(listed.map((i) => i.id)).toEqual([id]);
    expect(listed[0]?.state).toBeUndefined();
    const methods = new Set(fx.model.calls.slice(before).map((c) => c.method));
    expect([...methods].sort()).toEqual(['connectListAllDomains', 'dial', 'domainGetMetadata']);
    const skipped = logs.lines
      .filter((l) => (l.msg ?? '').includes('skipped'))
      .map((l) => l.fields.domain);
    expect(skipped).toEqual([bad.name, 'Not_A_Label']);
  });

  it('reports the host as the zone, with the region and country its config names, from Get and ListByTag alike', async () => {
    const host = (name: string, more: Record<string, unknown> = {}) => ({
      name,
      address: `${name}.model.test`,
      user: 'proxyop',
      bridge: 'br0',
      ...more,
    });
    const { fx, provider } = await fixture(testFlavour, {
      hosts: [host('kvm-a', { region: 'fra-dc2', country: 'DE' }), host('kvm-b')],
    });
    const a = await provider.create(request());
    const b = await provider.create(
      request({ placement: { zone: 'kvm-b', machineType: 'small', image: 'tiny' } }),
    );
    fx.model.domain('kvm-a', idParts(a).name).agentIp = '192.0.2.45';
    const where = {
      [a]: { region: 'fra-dc2', zone: 'kvm-a', country: 'DE' },
      [b]: { zone: 'kvm-b' },
    };
    for (const id of [a, b]) expect((await provider.get(id)).location, id).toEqual(where[id]);
    expect((await provider.get(a)).state).toBe('Running');
    const listed = await provider.listByTag();
    expect(Object.fromEntries(listed.map((i) => [i.id, i.location]))).toEqual(where);
  });

  it('asks the address sources in the flavour order, skipping the ones that fail', async () => {
    for (const flavour of [testFlavour, otherFlavour]) {
      const { fx, provider } = await fixture(flavour);
      const id = await provider.create(request());
      const before = fx.model.calls.length;
      expect((await provider.get(id)).state).toBe('Provisioning');
      const asked = fx.model.calls
        .slice(before)
        .filter((c) => c.method === 'domainInterfaceAddresses');
      const names = ['lease', 'agent', 'arp'];
      expect(
        asked.map((c) => names[c.source ?? -1]),
        flavour.type,
      ).toEqual([...flavour.addressSources]);
      fx.model.domain('kvm-a', `proxy-eng-${n}`).agentIp = '192.0.2.44';
      expect(await provider.get(id)).toMatchObject({ state: 'Running', ip: '192.0.2.44' });
    }
  });
});

describe('logs and spans', () => {
  it('logs outcomes and calls at debug, XML and addresses at trace, never cloud-init or the key', async () => {
    const { fx, provider, logs } = await fixture();
    const id = await provider.create(request());
    fx.model.domain('kvm-a', `proxy-eng-${n}`).agentIp = '192.0.2.45';
    await provider.get(id);
    await provider.delete(id);
    const at = (level: string) => logs.lines.filter((l) => l.level === level).map((l) => l.msg);
    expect(at('debug')).toEqual(
      expect.arrayContaining([
        'libvirt host connected',
        'testvirt call',
        'testvirt image cached',
        'testvirt domain ensured running',
        'testvirt domain fetched',
        'testvirt domain deleted',
        'provider create succeeded',
      ]),
    );
    expect(at('trace')).toEqual(
      expect.arrayContaining([
        'testvirt create resolved',
        'testvirt domain xml',
        'testvirt addresses read',
      ]),
    );
    const call = logs.lines.find(
      (l) => l.msg === 'testvirt call' && l.fields.call === 'domainDefineXml',
    );
    expect(call?.fields).toMatchObject({ host: 'kvm-a', domain: `proxy-eng-${n}` });
    expect(logs.text()).not.toContain('ENGINE-CLOUDINIT-SENTINEL');
    expect(leakedIn(logs.text(), fx.harness.credentialSentinel as string)).toBeUndefined();
    expect(at('info')).toEqual([]);
  });

  it('makes a dial span, a download span and one span per libvirt call under the operation', async () => {
    const { provider, spans } = await fixture();
    await provider.create(request());
    const all = spans.spans();
    const op = all.find((s) => s.name === 'provider.create');
    const under = all
      .filter((s) => s.parentSpanContext?.spanId === op?.spanContext().spanId)
      .map((s) => s.name);
    expect(under).toEqual(
      expect.arrayContaining([
        'testvirt.dial',
        'testvirt.domainLookupByName',
        'testvirt.download',
        'testvirt.domainDefineXml',
        'testvirt.domainCreate',
      ]),
    );
    const download = all.find((s) => s.name === 'testvirt.download');
    const inDownload = all.filter(
      (s) => s.parentSpanContext?.spanId === download?.spanContext().spanId,
    );
    expect(inDownload.map((s) => s.name)).toEqual(
      expect.arrayContaining(['testvirt.dial', 'testvirt.storageVolUpload']),
    );
    expect(download?.attributes).toMatchObject({
      'testvirt.sha256_configured': true,
      'testvirt.image': 'tiny',
    });
    const dial = all.find((s) => s.name === 'testvirt.dial');
    expect(dial?.attributes).toMatchObject({
      'testvirt.host': 'kvm-a',
      'testvirt.user': 'proxyop',
    });
  });
});
