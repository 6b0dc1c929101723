// Peer: the HTTPS fake of the PVE API at a real host's pace (a clone takes
// about two seconds), through the real undici client. A clone, an upload or
// a destroy is cancelled on our side once its request has reached the
// server, which carries it out anyway; the retry must adopt or finish what
// the server did, never do it twice.
import { errorClassOf } from '@proxy-op/contract';
import { describe, type ExpectStatic, it, type TestContext } from 'vitest';
import { vmidFor } from '../src/vmid.js';
import { createProxmoxFixture, vmOf } from './support/fixture.js';
import { REALISTIC_TIMING, type Timing } from './support/pve-model.js';

async function setup(onTestFinished: TestContext['onTestFinished'], timing: Partial<Timing> = {}) {
  // A real host's pace, the guest agent aside (nothing here waits for an address);
  // polls every 100 ms instead of every second.
  const fx = await createProxmoxFixture(
    {},
    {
      nodes: ['pv1-1'],
      timing: { ...REALISTIC_TIMING, agentBootMs: 0, ...timing },
      budgets: { poll: 100, clone: 30_000, destroy: 30_000 },
    },
  );
  onTestFinished(async () => {
    await fx.cleanup?.();
  });
  return { ...fx, p: fx.provider, m: fx.model };
}

let n = 0;
function request() {
  n++;
  return {
    name: `proxy-cut-${n}`,
    namespace: 'default',
    uid: `c0ffee00-0000-4000-8000-${String(n).padStart(12, '0')}`,
    port: 3128,
    cloudInit: new TextEncoder().encode('#cloud-config\n'),
    placement: { machineType: 'small', image: 'debian-13' },
  };
}

/** Starts `op`, cancels it once its `call` has reached the server, lets the server carry the call out. */
async function cancelAt(
  expect: ExpectStatic,
  fx: Awaited<ReturnType<typeof setup>>,
  call: string,
  op: (signal: AbortSignal) => Promise<unknown>,
): Promise<void> {
  const gate = fx.m.blockNext(call);
  const ac = new AbortController();
  const pending = op(ac.signal);
  pending.catch(() => {});
  await gate.reached;
  ac.abort();
  const err = await pending.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(errorClassOf(err), `cancelled at ${call}`).toBe('Transient');
  gate.release();
}

// Each test takes a few seconds of the double's time: they run side by side.
describe.concurrent('a cancelled call the server carries out', () => {
  it('a clone: the retry finds it nameless and locked, waits for it, adopts it', async ({
    expect,
    onTestFinished,
  }) => {
    const fx = await setup(onTestFinished);
    const { p, m } = fx;
    const req = request();
    await cancelAt(expect, fx, 'clone', (signal) => p.create(req, { signal }));
    const t0 = Date.now();
    const id = await p.create(req);
    // The retry waited out the clone the first attempt started.
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1_000);
    expect(m.calls.filter((c) => c === 'clone')).toHaveLength(1);
    expect(m.guests().filter((v) => v.name === req.name)).toHaveLength(1);
    expect(vmOf(m, id).status).toBe('running');
    await p.delete(id);
    expect(m.guests()).toHaveLength(0);
    expect(m.secondaryCount()).toBe(0);
  });

  it("a clone longer than pvestatd's round, listed as VM <vmid> meanwhile: still waited for, and adopted", async ({
    expect,
    onTestFinished,
  }) => {
    const fx = await setup(onTestFinished, { statsIntervalMs: 300 });
    const { p, m } = fx;
    const req = request();
    const vmid = vmidFor(req.uid, 0, { min: 100_000, max: 199_999 });
    await cancelAt(expect, fx, 'clone', (signal) => p.create(req, { signal }));
    // pvestatd's round during the clone reports the VM by its placeholder name.
    await new Promise((r) => setTimeout(r, 400));
    m.refreshStats();
    expect(m.vm(vmid)?.stats?.name).toBe(`VM ${vmid}`);
    expect(m.vm(vmid)?.lock).toBe('clone');
    const id = await p.create(req);
    expect(id).toBe(`vms/${vmid}/${req.name}`);
    expect(m.calls.filter((c) => c === 'clone')).toHaveLength(1);
    expect(m.guests().filter((v) => v.name === req.name)).toHaveLength(1);
  });

  it('an upload: the retry adopts the clone and uploads over the seed, one VM, one seed', async ({
    expect,
    onTestFinished,
  }) => {
    const fx = await setup(onTestFinished);
    const { p, m } = fx;
    const req = request();
    await cancelAt(expect, fx, 'uploadIso', (signal) => p.create(req, { signal }));
    const id = await p.create(req);
    expect(m.calls.filter((c) => c === 'clone')).toHaveLength(1);
    expect(m.calls.filter((c) => c === 'uploadIso')).toHaveLength(2);
    expect(m.guests()).toHaveLength(1);
    expect([...m.isos.keys()]).toEqual([`pv1-1/proxy-seeds/${req.name}-seed.iso`]);
    await p.delete(id);
    expect(m.secondaryCount()).toBe(0);
  });

  it('a destroy: the retry finds the VM still there, destroys it again, and takes the second destroy finding it gone for done', async ({
    expect,
    onTestFinished,
  }) => {
    const fx = await setup(onTestFinished);
    const { p, m } = fx;
    const id = await p.create(request());
    await cancelAt(expect, fx, 'destroy', (signal) => p.delete(id, { signal }));
    // The first destroy runs; the VM is listed with its config until it ends.
    expect(m.guests()).toHaveLength(1);
    await p.delete(id);
    expect(m.calls.filter((c) => c === 'destroy')).toHaveLength(2);
    const tasks = [...m.tasks.values()].filter((t) => t.type === 'qmdestroy');
    expect(tasks.map((t) => t.exitstatus)).toEqual([
      'OK',
      `Configuration file 'nodes/pv1-1/qemu-server/${id.split('/')[1]}.conf' does not exist`,
    ]);
    expect(m.guests()).toHaveLength(0);
    expect(m.secondaryCount()).toBe(0);
    await p.delete(id);
  });

  it('a stop: the retry finds the VM stopping or stopped and finishes the Delete', async ({
    expect,
    onTestFinished,
  }) => {
    const fx = await setup(onTestFinished);
    const { p, m } = fx;
    const id = await p.create(request());
    m.refreshStats(); // pvestatd has seen it running
    await cancelAt(expect, fx, 'stop', (signal) => p.delete(id, { signal }));
    await p.delete(id);
    expect(m.guests()).toHaveLength(0);
    expect(m.secondaryCount()).toBe(0);
  });
});
