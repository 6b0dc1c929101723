// Peer: the in-memory libvirt model of @proxy-op/libvirt-provider's tests (held to a real libvirtd by its seam contract): the original kvm's domains, kvm and kvm2 side by side on one host, and the original's known gaps, each closed.
import { createProvider, type Provider } from '@proxy-op/contract';
import { DomainState } from '@proxy-op/libvirt-rpc';
import * as kvm2 from '@proxy-op/provider-kvm2';
import { createLogSink, createSpanRecorder, leakedIn } from '@proxy-op/providertest';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createModelFixture,
  FAST_BUDGETS,
  type ModelFixture,
  newPrivateKey,
} from '../../libvirt-provider/test/support/fixture.js';
import { hostKeyBlob, type ModelPool } from '../../libvirt-provider/test/support/model.js';
import { metadataOf } from '../../libvirt-provider/test/support/model-xml.js';
import { METADATA_URI } from '../src/metadata.js';
import { flavour, providerModule } from '../src/module.js';
import { type OriginalFields, originalElement, plantOriginal } from './support/original.js';

const fixtures: ModelFixture[] = [];
const providers: Provider[] = [];

afterEach(async () => {
  for (const p of providers.splice(0)) await p.close?.();
  for (const fx of fixtures.splice(0)) await fx.cleanup?.();
});

async function fixture() {
  const logs = createLogSink();
  const spans = createSpanRecorder();
  const fx = await createModelFixture(
    providerModule,
    flavour,
    { logger: logs.logger, tracer: spans.tracer },
    { plantMark: plantOriginal, name: 'kvm-home' },
  );
  fixtures.push(fx);
  return { fx, logs, spans, kvm: fx.provider };
}

/** kvm2 on the same hosts, key and known_hosts: an admin running both providers. */
async function kvm2On(fx: ModelFixture): Promise<Provider> {
  const p = await createProvider(kvm2.providerModule, 'kvm2-home', fx.config, {
    transport: fx.model.transport(),
    budgets: FAST_BUDGETS,
  });
  providers.push(p);
  return p;
}

let n = 0;
function request(patch: Record<string, unknown> = {}) {
  n++;
  return {
    name: `proxy-kvm-${n}`,
    namespace: 'default',
    uid: `uid-kvm-${n}`,
    port: 3128,
    cloudInit: new TextEncoder().encode('#cloud-config\n# KVM-CLOUDINIT-SENTINEL\n'),
    placement: { zone: 'kvm-a', machineType: 'small', image: 'tiny' },
    ...patch,
  };
}

const pool = (fx: ModelFixture, host = 'kvm-a'): ModelPool =>
  fx.model.host(host).pools.get('default') as ModelPool;

/**
 * A running domain with its overlay and seed, defined as the original kvm
 * defined it: its element (prefixed, namespace declared) in the domain XML,
 * stored by the model the way libvirt stores it.
 */
function plantOriginalDomain(fx: ModelFixture, name: string, fields: OriginalFields): string {
  const p = pool(fx);
  for (const vol of [`${name}.qcow2`, `${name}-seed.iso`]) {
    p.volumes.set(vol, {
      name: vol,
      path: `${p.dir}/${vol}`,
      format: vol.endsWith('.qcow2') ? 'qcow2' : 'raw',
      capacity: 1024 ** 3,
      data: Buffer.alloc(0),
    });
  }
  const xml = `<domain type="kvm"><name>${name}</name><metadata>${originalElement(fields)}</metadata></domain>`;
  fx.model.plantDomain(fx.model.host('kvm-a'), {
    name,
    metadata: [...metadataOf(xml)],
    state: DomainState.RUNNING,
    reason: 1,
    agentIp: '10.20.30.40',
  });
  return `hosts/kvm-a/domains/${name}`;
}

describe('a domain the original kvm made', () => {
  it('is listed, read, adopted for its own UID only, and deleted with its volumes by kvm', async () => {
    const { fx, kvm } = await fixture();
    const id = plantOriginalDomain(fx, 'proxy-orig', {
      managed: 'true',
      uid: 'uid-orig',
      createdAt: '2025-06-01T12:00:00.123456789+02:00',
    });
    const createdAt = new Date('2025-06-01T10:00:00.123Z');
    const location = { zone: 'kvm-a' };
    expect(await kvm.listByTag()).toEqual([
      { id, uid: 'uid-orig', createdAt, installation: 'default', location },
    ]);
    expect(await kvm.listByTag({ installation: 'blue' })).toEqual([]);
    expect(await kvm.get(id)).toEqual({
      id,
      uid: 'uid-orig',
      createdAt,
      installation: 'default',
      state: 'Running',
      ip: '10.20.30.40',
      location,
    });
    const base = { ...request(), name: 'proxy-orig' };
    const foreign = await kvm.create({ ...base, uid: 'uid-other' }).catch((e: unknown) => e);
    expect(foreign).toMatchObject({ errorClass: 'Permanent' });
    expect((foreign as Error).message).toContain('it belongs to UID uid-orig, not uid-other');
    const before = fx.model.calls.length;
    expect(await kvm.create({ ...base, uid: 'uid-orig' })).toBe(id);
    // Adopted as it is: nothing downloaded, made or defined.
    expect(
      fx.model.calls
        .slice(before)
        .filter((c) => /Upload|CreateXml|DefineXml|domainCreate/.test(c.method)),
    ).toEqual([]);
    await kvm.delete(id, { uid: 'uid-orig', installation: 'default' });
    expect(fx.model.domains()).toEqual([]);
    expect(fx.model.volumes().filter((v) => v.name.startsWith('proxy-orig'))).toEqual([]);
  });

  it('is invisible to kvm2 on the same host: not listed, not found, never adopted, left alone', async () => {
    const { fx, kvm } = await fixture();
    const id = plantOriginalDomain(fx, 'proxy-orig', { managed: 'true', uid: 'uid-orig' });
    const other = await kvm2On(fx);
    expect(await other.listByTag()).toEqual([]);
    expect(await other.get(id).catch((e: { errorClass: string }) => e.errorClass)).toBe('NotFound');
    const adopt = await other
      .create({ ...request(), name: 'proxy-orig', uid: 'uid-orig' })
      .catch((e: unknown) => e);
    expect(adopt).toMatchObject({ errorClass: 'Permanent' });
    expect((adopt as Error).message).toContain('carries no proxy-op ownership mark');
    await other.delete(id);
    expect(fx.model.domains().map((d) => d.name)).toEqual(['proxy-orig']);
    expect(pool(fx).volumes.has('proxy-orig.qcow2')).toBe(true);
    expect((await kvm.listByTag()).map((i) => i.id)).toEqual([id]);
  });
});

describe('a domain kvm2 made', () => {
  it('is invisible to kvm on the same host: not listed, not found, never adopted, left alone', async () => {
    const { fx, kvm } = await fixture();
    const other = await kvm2On(fx);
    const req = request();
    const id = await other.create(req);
    expect(await kvm.listByTag()).toEqual([]);
    expect(await kvm.get(id).catch((e: { errorClass: string }) => e.errorClass)).toBe('NotFound');
    const adopt = await kvm.create(req).catch((e: unknown) => e);
    expect(adopt).toMatchObject({ errorClass: 'Permanent' });
    expect((adopt as Error).message).toContain('carries no proxy-op ownership mark');
    await kvm.delete(id);
    expect(fx.model.domains().map((d) => d.name)).toEqual([req.name]);
    expect((await other.listByTag()).map((i) => i.id)).toEqual([id]);
    // And the other way: kvm's own domain is invisible to kvm2.
    const mine = await kvm.create(request());
    expect((await other.listByTag()).map((i) => i.id)).toEqual([id]);
    expect((await kvm.listByTag()).map((i) => i.id)).toEqual([mine]);
    expect(fx.model.domain('kvm-a', mine.split('/')[3] as string).metadata.has(METADATA_URI)).toBe(
      true,
    );
  });
});

describe("the original kvm's gaps, closed", () => {
  it('lists an orphaned overlay and seed with an empty UID, and Delete removes them', async () => {
    const { fx, kvm } = await fixture();
    const req = request();
    const id = await kvm.create(req);
    fx.model.host('kvm-a').domains.delete(req.name); // removed by hand: virsh undefine
    const [orphan, ...rest] = await kvm.listByTag();
    expect(rest).toEqual([]);
    expect(orphan).toMatchObject({ id, uid: '', installation: 'default' });
    expect(Math.abs((orphan?.createdAt.getTime() ?? 0) - Date.now())).toBeLessThan(60_000);
    await kvm.delete(id, { uid: '', installation: 'default' });
    expect(fx.model.volumes().filter((v) => v.name.startsWith(req.name))).toEqual([]);
    expect(await kvm.listByTag()).toEqual([]);
  });

  it('answers Get and Delete on a host removed from the config with Permanent, and leaves the domain', async () => {
    const { fx, kvm } = await fixture();
    const id = await kvm.create(request());
    const later = await fx.another({
      ...fx.config,
      hosts: (fx.config.hosts as { name: string }[]).filter((h) => h.name !== 'kvm-a'),
    });
    providers.push(later);
    for (const op of [() => later.get(id), () => later.delete(id)]) {
      const err = await op().catch((e: unknown) => e);
      expect(err).toMatchObject({ errorClass: 'Permanent' });
      expect((err as Error).message).toContain('host kvm-a of hosts/kvm-a/domains/');
      expect((err as Error).message).toContain('is not in kvm.hosts');
    }
    expect(fx.model.domains()).toHaveLength(1);
  });

  it('never answers Create with NotFound when a volume vanishes mid-call; the retry builds it', async () => {
    const { fx, kvm } = await fixture();
    const req = request();
    const held = fx.model.holdNext(
      'storageVolGetPath',
      (a) => (a.vol as { name?: string })?.name === `${req.name}.qcow2`,
    );
    const creating = kvm.create(req);
    await held.reached;
    pool(fx).volumes.delete(`${req.name}.qcow2`); // an admin cleaning up, say
    held.release();
    const err = await creating.catch((e: unknown) => e);
    expect(err).toMatchObject({ errorClass: 'Transient', code: 'PROVIDER_TRANSIENT' });
    const id = await kvm.create(req);
    expect((await kvm.get(id)).uid).toBe(req.uid);
    expect(pool(fx).volumes.has(`${req.name}.qcow2`)).toBe(true);
  });

  it('checks an overlay left behind before reusing it: another backing file or size is replaced', async () => {
    const { fx, kvm } = await fixture();
    const first = await kvm.create(request());
    const image = pool(fx).volumes.get(`${first.split('/')[3]}.qcow2`)?.backingPath as string;
    const req = request();
    pool(fx).volumes.set(`${req.name}.qcow2`, {
      name: `${req.name}.qcow2`,
      path: `${pool(fx).dir}/${req.name}.qcow2`,
      format: 'qcow2',
      capacity: 5,
      data: Buffer.alloc(0),
      backingPath: `${pool(fx).dir}/someone-elses.qcow2`,
      backingFormat: 'qcow2',
    });
    await kvm.create(req);
    expect(pool(fx).volumes.get(`${req.name}.qcow2`)).toMatchObject({
      backingPath: image,
      capacity: 1024 ** 3,
    });
  });

  it('refuses a wrong host key and a refused SSH key as Permanent, saying what to fix', async () => {
    const { fx, kvm, logs } = await fixture();
    const host = fx.model.host('kvm-a');
    const good = host.hostKey;
    host.hostKey = hostKeyBlob();
    const hostKey = await kvm.create(request()).catch((e: unknown) => e);
    expect(hostKey).toMatchObject({ errorClass: 'Permanent' });
    expect((hostKey as Error).message).toContain(
      `is not accepted by kvm.knownHostsFile ${fx.knownHostsFile}`,
    );
    expect((await kvm.check?.())?.[0]?.reason).toBe('Unauthorized');
    host.hostKey = good;
    const key = fx.harness.credentialSentinel as string;
    host.acceptedKeys = new Set([newPrivateKey()]);
    const refused = await kvm.create(request()).catch((e: unknown) => e);
    expect(refused).toMatchObject({ errorClass: 'Permanent' });
    expect((refused as Error).message).toContain(`refused the key in kvm.sshKeyFile ${fx.keyFile}`);
    expect(leakedIn(logs.text(), key)).toBeUndefined();
    expect(fx.model.domains()).toEqual([]);
  });

  it('ends only a cancelled call: the other calls on the host carry on over the same connection', async () => {
    const { fx, kvm } = await fixture();
    const a = await kvm.create(request());
    const b = await kvm.create(request());
    const dials = () => fx.model.calls.filter((c) => c.method === 'dial').length;
    const before = dials();
    const held = fx.model.holdNext(
      'domainGetState',
      (x) => (x.dom as { name?: string })?.name === a.split('/')[3],
    );
    const ac = new AbortController();
    const cancelled = kvm.get(a, { signal: ac.signal });
    cancelled.catch(() => {});
    await held.reached;
    const other = kvm.get(b);
    ac.abort();
    expect(await cancelled.catch((e: { errorClass: string }) => e.errorClass)).toBe('Transient');
    expect((await other).id).toBe(b);
    held.release();
    expect((await kvm.get(a)).id).toBe(a);
    expect(dials()).toBe(before);
    expect(fx.model.host('kvm-a').connections.size).toBe(1);
  });

  it('makes one kvm.<call> span per libvirt call under the operation span', async () => {
    const { kvm, spans } = await fixture();
    const id = await kvm.create(request());
    await kvm.get(id);
    const all = spans.spans();
    const op = all.find((s) => s.name === 'provider.get');
    const under = all
      .filter((s) => s.parentSpanContext?.spanId === op?.spanContext().spanId)
      .map((s) => s.name);
    expect(under).toEqual([
      'kvm.domainLookupByName',
      'kvm.domainGetMetadata',
      'kvm.domainGetState',
      'kvm.domainInterfaceAddresses',
      'kvm.domainInterfaceAddresses',
    ]);
  });

  it('reads the address from the ARP table first, then the guest agent, never DHCP leases', async () => {
    const { fx, kvm } = await fixture();
    const req = request();
    const id = await kvm.create(req);
    fx.model.domain('kvm-a', req.name).agentIp = '192.0.2.7';
    const before = fx.model.calls.length;
    expect(await kvm.get(id)).toMatchObject({ state: 'Running', ip: '192.0.2.7' });
    const sources = fx.model.calls
      .slice(before)
      .filter((c) => c.method === 'domainInterfaceAddresses')
      .map((c) => ['lease', 'agent', 'arp'][c.source ?? -1]);
    expect(sources).toEqual(['arp', 'agent']);
  });

  it('has no quota class: where kvm2 refuses a full pool as QuotaExceeded, kvm goes ahead', async () => {
    const { fx, kvm } = await fixture();
    fx.harness.exhaustCapacity?.();
    const other = await kvm2On(fx);
    const refused = await other.create(request()).catch((e: unknown) => e);
    expect(refused).toMatchObject({ errorClass: 'QuotaExceeded' });
    const id = await kvm.create(request());
    expect((await kvm.get(id)).id).toBe(id);
  });
});
