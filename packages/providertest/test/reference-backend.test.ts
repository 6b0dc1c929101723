// Peer: the reference provider over its in-memory backend, driven through its harness as the
// conformance suite drives it, and the backend's seam called directly: the zone a VM is placed
// in, an instance running again after the backend took it back, the addresses of many starts,
// and the refusals a real backend makes that the reference provider never provokes on its own
// (a name taken, a seed volume missing, a call in the wrong state, under a lock, for a VM that
// is not there, or from a caller that has left).
import { isIPv4 } from 'node:net';
import { trace } from '@opentelemetry/api';
import type { CreateRequest, Provider } from '@proxy-op/contract';
import { describe, expect, it } from 'vitest';
import type { BackendHarness } from '../src/index.js';
import { BackendError, MemoryBackend, type MemorySeam } from '../src/reference/backend.js';
import { createReferenceFixture } from '../src/reference/fixture.js';
import { MEMORY_REGION } from '../src/reference/provider.js';
import { ipv6RangeProblem } from '../src/sections/where.js';
import { createLogSink } from '../src/telemetry.js';

const fixture = () =>
  createReferenceFixture({
    logger: createLogSink().logger,
    tracer: trace.getTracer('reference-backend-test'),
  });

let n = 0;
/** A fresh valid request on `harness`'s base placement, as the suite makes them. */
function request(harness: BackendHarness, patch: Partial<CreateRequest> = {}): CreateRequest {
  n++;
  return {
    ...harness.baseRequest,
    name: `ref-backend-${n}`,
    uid: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
    cloudInit: new TextEncoder().encode('#cloud-config\n'),
    ...patch,
  };
}

/** The harness hook `name`, which the reference harness has. */
function hook<K extends keyof BackendHarness>(
  harness: BackendHarness,
  name: K,
): NonNullable<BackendHarness[K]> {
  const fn = harness[name];
  if (fn === undefined) throw new Error(`the reference harness has no ${String(name)}`);
  return fn as NonNullable<BackendHarness[K]>;
}

/** The error class `p` rejects with. */
const rejection = (p: Promise<unknown>) =>
  p.then(
    () => 'resolved',
    (err: unknown) => (err as { errorClass?: unknown }).errorClass,
  );

describe('the zone a VM is placed in', () => {
  it('Get and ListByTag report the zone the request named', async () => {
    const { provider, harness } = await fixture();
    const id = await provider.create(
      request(harness, { placement: { ...harness.baseRequest.placement, zone: 'zone-b' } }),
    );
    const want = { region: MEMORY_REGION, country: 'DE', zone: 'zone-b' };
    expect((await provider.get(id)).location).toEqual(want);
    const listed = (await provider.listByTag()).filter((i) => i.id === id);
    expect(listed.map((i) => i.location)).toEqual([want]);
  });

  it('with one zone configured, a request that leaves the zone out or empty is placed in it', async () => {
    const { harness } = await fixture();
    const provider: Provider = await hook(harness, 'withZones')(['zone-b']);
    const { zone: _named, ...placement } = harness.baseRequest.placement;
    for (const zone of [undefined, '']) {
      const id = await provider.create(
        request(harness, { placement: zone === undefined ? placement : { ...placement, zone } }),
      );
      expect((await provider.get(id)).location?.zone, `zone ${JSON.stringify(zone)}`).toBe(
        'zone-b',
      );
    }
  });
});

describe('an instance the backend took back', () => {
  it('reads Running again once the backend runs it again', async () => {
    const { provider, harness } = await fixture();
    const id = await provider.create(request(harness));
    await hook(harness, 'preempt')(id);
    expect((await provider.get(id)).state).toBe('Preempted');
    await harness.setRunning(id, '10.20.30.41');
    const got = await provider.get(id);
    expect([got.state, got.ip]).toEqual(['Running', '10.20.30.41']);
    const listed = (await provider.listByTag()).filter((i) => i.id === id);
    expect(listed.map((i) => i.state)).toEqual(['Running']);
  });
});

describe('addresses', () => {
  it('every started VM gets its own IPv4 address and a well-formed IPv6 range', async () => {
    const { provider, harness } = await fixture();
    const ips = new Set<string>();
    const ranges = new Set<string>();
    for (let i = 0; i < 20; i++) {
      const got = await provider.get(await provider.create(request(harness)));
      expect(got.state).toBe('Running');
      expect(isIPv4(got.ip ?? ''), `the address ${got.ip}`).toBe(true);
      expect(ipv6RangeProblem(got.ipv6Range)).toBeUndefined();
      ips.add(got.ip ?? '');
      ranges.add(got.ipv6Range ?? '');
    }
    expect([ips.size, ranges.size]).toEqual([20, 20]);
  });
});

describe('a lock on the VM', () => {
  it('refuses the Delete of a running instance and leaves it running', async () => {
    const { provider, harness } = await fixture();
    const id = await provider.create(request(harness));
    const before = await provider.get(id);
    const unlock = await hook(harness, 'holdLock')(id);
    expect(await rejection(provider.delete(id))).toBe('Transient');
    await unlock();
    const after = await provider.get(id);
    expect([after.state, after.ip]).toEqual(['Running', before.ip]);
  });

  it('refuses the Delete of a stopped instance and leaves it in place', async () => {
    const { provider, harness } = await fixture();
    const id = await provider.create(request(harness));
    await harness.setState(id, 'stopped');
    const unlock = await hook(harness, 'holdLock')(id);
    expect(await rejection(provider.delete(id))).toBe('Transient');
    await unlock();
    expect((await provider.get(id)).state).toBe('Stopped');
    expect(await harness.instanceCount()).toBe(1);
  });

  it('refuses the start of a never-started VM a Create adopts; the retry starts it', async () => {
    const { provider, harness } = await fixture();
    const req = request(harness);
    const id = await harness.plantNeverStarted(req);
    const unlock = await hook(harness, 'holdLock')(id);
    expect(await rejection(provider.create(req))).toBe('Transient');
    await unlock();
    expect((await provider.get(id)).state).toBe('Provisioning');
    expect(await provider.create(req)).toBe(id);
    expect((await provider.get(id)).state).toBe('Running');
  });
});

describe('the seam', () => {
  const TOKEN = 'seam-token';
  const setup = (): { backend: MemoryBackend; seam: MemorySeam } => {
    const backend = new MemoryBackend({ token: TOKEN });
    return { backend, seam: backend.seam(() => TOKEN) };
  };
  const data = new TextEncoder().encode('#cloud-config\n');
  const spec = (seed: string, metadata: Record<string, string> = {}) => ({
    metadata,
    seed,
    zone: 'zone-a',
  });
  const status = (p: Promise<unknown>) =>
    p.then(
      () => 'resolved',
      (err: unknown) => (err instanceof BackendError ? err.status : err),
    );

  it('define refuses a VM without its seed volume, and a name that is taken', async () => {
    const { backend, seam } = setup();
    expect(await status(seam.define('a', spec('a-seed')))).toBe('INVALID');
    expect(backend.vms.has('a')).toBe(false);
    await seam.putSeed('a-seed', data);
    await seam.define('a', spec('a-seed', { owner: 'first' }));
    expect(await status(seam.define('a', spec('a-seed', { owner: 'second' })))).toBe('VM_EXISTS');
    expect(backend.vms.get('a')?.metadata).toEqual({ owner: 'first' });
  });

  it('start, stop and destroy refuse a VM in the wrong state and leave it as it was', async () => {
    const { backend, seam } = setup();
    await seam.putSeed('a-seed', data);
    await seam.define('a', spec('a-seed'));
    expect(await status(seam.stop('a'))).toBe('WRONG_STATE');
    expect(backend.vms.get('a')?.status).toBe('defined');
    await seam.start('a');
    const running = backend.vms.get('a');
    expect(await status(seam.start('a'))).toBe('WRONG_STATE');
    expect(await status(seam.destroy('a'))).toBe('WRONG_STATE');
    expect(backend.vms.get('a')).toEqual(running);
  });

  it('a call for a VM that is not there is NO_SUCH_VM and makes none', async () => {
    const { backend, seam } = setup();
    const calls: [string, () => Promise<unknown>][] = [
      ['start', () => seam.start('ghost')],
      ['stop', () => seam.stop('ghost')],
      ['destroy', () => seam.destroy('ghost')],
      ['putPasswordFile', () => seam.putPasswordFile('ghost', data)],
      ['putEgressPolicy', () => seam.putEgressPolicy('ghost', { allow: ['192.0.2.1'] })],
    ];
    for (const [what, call] of calls) expect(await status(call()), what).toBe('NO_SUCH_VM');
    expect(() => backend.reclaim('ghost')).toThrow(BackendError);
    expect(() => backend.update('ghost', { status: 'running' })).toThrow(BackendError);
    expect(backend.vms.size).toBe(0);
  });

  it('a call whose caller left before it reached the backend is not carried out', async () => {
    const { backend, seam } = setup();
    const reason = new Error('caller left');
    expect(await status(seam.putSeed('early', data, AbortSignal.abort(reason)))).toBe(reason);
    const c = new AbortController();
    const late = seam.putSeed('late', data, c.signal);
    c.abort(reason);
    expect(await status(late)).toBe(reason);
    expect([...backend.seeds.keys()]).toEqual([]);
  });
});
