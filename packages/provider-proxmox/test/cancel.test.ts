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

const RANGE = { min: 100_000, max: 199_999 };

async function waitFor(check: () => boolean, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not met');
    await new Promise((r) => setTimeout(r, 20));
  }
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
    const vmid = vmidFor(req.uid, 0, RANGE);
    // The clone task runs until released, however slow the machine is.
    const clone = m.holdNextTask('qmclone');
    await cancelAt(expect, fx, 'clone', (signal) => p.create(req, { signal }));
    await clone.reached;
    const start = m.calls.length;
    const retry = p.create(req);
    // The retry waits: it lists the cluster again and again while the clone holds the VMID.
    await waitFor(() => m.calls.slice(start).filter((c) => c === 'clusterResources').length >= 3);
    expect(m.vm(vmid)?.lock).toBe('clone');
    expect(m.vm(vmid)?.name).toBeUndefined();
    expect(m.calls.slice(start)).not.toContain('clone');
    clone.release();
    const id = await retry;
    expect(id).toBe(`vms/${vmid}/${req.name}`);
    expect(m.calls.filter((c) => c === 'clone')).toHaveLength(1);
    expect(m.guests().filter((v) => v.name === req.name)).toHaveLength(1);
    expect(vmOf(m, id).status).toBe('running');
    await p.delete(id);
    expect(m.guests()).toHaveLength(0);
    expect(m.secondaryCount()).toBe(0);
  });

  it("a clone that pvestatd saw mid-way, listed as VM <vmid> for a round after it ends: adopted, not taken for another VM's", async ({
    expect,
    onTestFinished,
  }) => {
    const fx = await setup(onTestFinished);
    const { p, m } = fx;
    const req = request();
    const vmid = vmidFor(req.uid, 0, RANGE);
    const clone = m.holdNextTask('qmclone');
    await cancelAt(expect, fx, 'clone', (signal) => p.create(req, { signal }));
    await clone.reached;
    m.refreshStats(); // pvestatd's round while the clone copies the disks
    clone.release();
    await m.settle();
    // The clone has ended; until pvestatd's next round the listing keeps the placeholder.
    const entry = m.clusterResources('vm').find((e) => e.vmid === vmid);
    expect(entry).toMatchObject({ name: `VM ${vmid}`, status: 'stopped' });
    expect(entry?.lock).toBeUndefined();
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
    // The first destroy's task runs until released, however slow the machine is.
    const first = m.holdNextTask('qmdestroy');
    await cancelAt(expect, fx, 'destroy', (signal) => p.delete(id, { signal }));
    await first.reached;
    // The VM is listed with its config until the destroy ends.
    expect(m.guests()).toHaveLength(1);
    const retry = p.delete(id);
    await waitFor(() => m.calls.filter((c) => c === 'destroy').length === 2);
    first.release();
    await retry;
    // The second destroy finds the VM gone: in its task, when it ran while the first still
    // held the VM, or at once (no task), when the first had ended by the time it was handled.
    // Which of the two depends on scheduling; both must count as done.
    const tasks = [...m.tasks.values()].filter((t) => t.type === 'qmdestroy');
    expect(tasks[0]?.exitstatus).toBe('OK');
    expect(tasks.slice(1).map((t) => t.exitstatus)).toEqual(
      tasks.length > 1
        ? [`Configuration file 'nodes/pv1-1/qemu-server/${id.split('/')[1]}.conf' does not exist`]
        : [],
    );
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
