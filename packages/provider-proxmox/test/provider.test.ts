// Peer: the seam fake (FakeApi over the in-memory PVE model), no HTTP.
import { rmSync, writeFileSync } from 'node:fs';
import { errorClassOf, type Provider } from '@proxy-op/contract';
import { createLogSink, createSpanRecorder } from '@proxy-op/providertest';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiError } from '../src/errors.js';
import { formatId } from '../src/id.js';
import { API_METHODS, decorateApi } from '../src/seam.js';
import { NO_AGENT_REASON } from '../src/state.js';
import { vmidFor } from '../src/vmid.js';
import {
  createProxmoxFixture,
  errorOfAnswer,
  type FixtureOptions,
  idOf,
  type ProxmoxFixture,
  TEMPLATE_VMID,
  vmOf,
} from './support/fixture.js';
import { fastTiming } from './support/pve-model.js';

const RANGE = { min: 100_000, max: 199_999 };
/** The calls of Create for a new VM, with tasks that end by their first status poll. */
const CREATE_CALLS = [
  'clusterResources',
  'vmConfig',
  'clone',
  'taskStatus',
  'uploadIso',
  'taskStatus',
  'setVmConfig',
  'start',
  'taskStatus',
  'vmStatus',
];
const fixtures: ProxmoxFixture[] = [];
afterEach(async () => {
  for (const f of fixtures.splice(0)) await f.cleanup?.();
});

async function setup(opts: FixtureOptions = {}) {
  const logs = createLogSink();
  const spans = createSpanRecorder();
  // Speed asked for explicitly: tasks end by their first status poll, the
  // guest agent answers as soon as the VM runs. Tests of timing pass their own.
  const fx = await createProxmoxFixture(
    { logger: logs.logger, tracer: spans.tracer },
    { peer: 'seam', nodes: ['pv1-1'], timing: fastTiming(), ...opts },
  );
  fixtures.push(fx);
  return { ...fx, logs, spans, p: fx.provider, m: fx.model };
}

let n = 0;
function request(patch: Record<string, unknown> = {}) {
  n++;
  return {
    name: `proxy-unit-${n}`,
    namespace: 'default',
    uid: `6c1d5f0e-2b7a-4c0e-9d43-${String(n).padStart(12, '0')}`,
    port: 3128,
    cloudInit: new TextEncoder().encode('#cloud-config\nruncmd: [echo hi]\n'),
    placement: { machineType: 'small', image: 'debian-13' },
    ...patch,
  };
}

async function failure(p: Promise<unknown>): Promise<Error & { errorClass?: string }> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a rejection');
}

describe('Create', () => {
  it('Create: repeat returns the same ID and creates nothing', async () => {
    const { p, m } = await setup();
    const req = request();
    const id = await p.create(req);
    const before = m.guests().length;
    const calls = m.calls.length;
    expect(await p.create(req)).toBe(id);
    expect(m.guests().length).toBe(before);
    expect(m.calls.slice(calls)).not.toContain('clone');
    expect(id).toBe(formatId({ vmid: vmidFor(req.uid, 0, RANGE), name: req.name }));
  });

  it('Create: returns only when the VM is running', async () => {
    const { p, m } = await setup();
    m.setTiming(fastTiming(20));
    const id = await p.create(request());
    const vm = vmOf(m, id);
    expect(vm.status).toBe('running');
    expect(vm.qmpstatus).toBe('running');
    expect((await p.get(id)).state).toBe('Running');
  });

  it('Create: writes the mark with the installation line in the clone call', async () => {
    const { p, m } = await setup();
    const req = request({ installation: 'inst-a' });
    const vm = vmOf(m, await p.create(req));
    expect(vm.config.description).toContain(`proxy-operator-uid=${req.uid}`);
    expect(vm.config.description).toContain('proxy-operator-installation=inst-a');
    expect(vm.config.description).toContain('proxy-operator-managed=true');
    expect(vm.config.tags).toBe('proxy_operator');
    expect(vm.config.ide2).toBe(`proxy-seeds:iso/${req.name}-seed.iso,media=cdrom`);
    expect(vm.config.agent).toBe('1');
  });

  it('Create: resumes a mid-clone VM at its deterministic VMID', async () => {
    const { p, m } = await setup();
    const req = request();
    // A crash after the clone was submitted: the clone task still runs.
    const held = m.holdNextTask('qmclone');
    const ac = new AbortController();
    const first = p.create(req, { signal: ac.signal });
    first.catch(() => {});
    await held.reached;
    ac.abort();
    expect(errorClassOf(await failure(first))).toBe('Transient');
    const vmid = vmidFor(req.uid, 0, RANGE);
    expect(m.vms.get(vmid)?.name).toBeUndefined();
    expect(m.vms.get(vmid)?.lock).toBe('clone');
    const retry = p.create(req);
    setTimeout(() => held.release(), 50);
    expect(await retry).toBe(formatId({ vmid, name: req.name }));
    expect(m.guests()).toHaveLength(1);
    expect(m.calls.filter((c) => c === 'clone')).toHaveLength(1);
  });

  it('Create: inspects a taken VMID before probing past it', async () => {
    const { p, m } = await setup();
    const req = request();
    const v0 = vmidFor(req.uid, 0, RANGE);
    m.addVm({ vmid: v0, name: 'someone-elses-vm', config: { description: 'hand made' } });
    const id = await p.create(req);
    expect(idOf(id).vmid).toBe(vmidFor(req.uid, 1, RANGE));
    expect(m.vms.get(v0)?.name).toBe('someone-elses-vm');

    // Ours at attempt 0 (stopped after its clone) is adopted and started, not cloned again.
    const ours = request();
    const { m: m2, p: p2 } = await setup();
    const vmid = vmidFor(ours.uid, 0, RANGE);
    const first = await p2.create(ours);
    vmOf(m2, first).status = 'stopped';
    vmOf(m2, first).qmpstatus = 'stopped';
    const clones = m2.calls.filter((c) => c === 'clone').length;
    expect(await p2.create(ours)).toBe(formatId({ vmid, name: ours.name }));
    expect(m2.calls.filter((c) => c === 'clone').length).toBe(clones);
    expect(vmOf(m2, first).status).toBe('running');
  });

  it('Create: runs the ownership check when the clone finds the VMID taken', async () => {
    const { p, m, api } = await setup();
    const req = request();
    const v0 = vmidFor(req.uid, 0, RANGE);
    // Another Create took the VMID between our listing and our clone.
    const original = api!.clone.bind(api);
    let raced = false;
    api!.clone = async (r, signal) => {
      if (!raced) {
        raced = true;
        m.addVm({ vmid: r.newid, name: 'proxy-other', config: { description: 'x' } });
      }
      return original(r, signal);
    };
    const id = await p.create(req);
    expect(idOf(id).vmid).toBe(vmidFor(req.uid, 1, RANGE));
    expect(m.vms.get(v0)?.name).toBe('proxy-other');
  });

  it('Create: refuses a template with a cloud-init drive as Permanent', async () => {
    const { p, m } = await setup();
    (m.vms.get(TEMPLATE_VMID) as { config: Record<string, string> }).config.ide2 =
      'local-lvm:vm-9001-cloudinit,media=cdrom';
    const err = await failure(p.create(request()));
    expect(errorClassOf(err)).toBe('Permanent');
    expect(err.message).toContain('cloud-init drive');
    expect(m.calls).not.toContain('clone');
  });

  it('Create: refuses a VM that is not a template, before any clone', async () => {
    const { p, m } = await setup();
    const tpl = m.vms.get(TEMPLATE_VMID)!;
    delete tpl.config.template;
    const err = await failure(p.create(request()));
    expect(errorClassOf(err)).toBe('Permanent');
    expect(err.message).toContain('not a template');
    expect(m.calls).not.toContain('clone');
  });

  it('Create: refuses two VMs with the requested name, naming both VMIDs', async () => {
    const { p, m } = await setup();
    const req = request();
    m.addVm({ vmid: 700, name: req.name });
    m.addVm({ vmid: 701, name: req.name });
    const err = await failure(p.create(req));
    expect(errorClassOf(err)).toBe('Permanent');
    expect(err.message).toContain('700');
    expect(err.message).toContain('701');
  });

  it('Create: refuses our own hibernated VM as Permanent', async () => {
    const { p, m } = await setup();
    const req = request();
    const id = await p.create(req);
    const vm = vmOf(m, id);
    vm.status = 'stopped';
    vm.qmpstatus = 'stopped';
    vm.lock = 'suspended';
    const err = await failure(p.create(req));
    expect(errorClassOf(err)).toBe('Permanent');
    expect(err.message).toContain('hibernated');
  });

  it('Create: uploads the seed over the old one without a delete', async () => {
    const { p, m } = await setup();
    const req = request();
    const id = await p.create(req);
    const key = `pv1-1/proxy-seeds/${req.name}-seed.iso`;
    m.isos.set(key, new Uint8Array([1, 2, 3]));
    const vm = vmOf(m, id);
    vm.status = 'stopped';
    vm.qmpstatus = 'stopped';
    const before = m.calls.length;
    await p.create(req);
    const calls = m.calls.slice(before);
    expect(calls).toContain('uploadIso');
    expect(calls).not.toContain('deleteVolume');
    expect(m.isos.get(key)?.byteLength).toBeGreaterThan(3);
  });

  it('Create: waits for the resize task', async () => {
    const { p, m } = await setup();
    m.setTiming(fastTiming(30));
    const id = await p.create(request({ placement: { machineType: 'large', image: 'debian-13' } }));
    expect(vmOf(m, id).config.scsi0).toContain('size=8G');
    const i = m.calls.indexOf('resize');
    expect(i).toBeGreaterThan(0);
    expect(m.calls.indexOf('start')).toBeGreaterThan(i);
    expect(m.calls.slice(i + 1, m.calls.indexOf('start'))).toContain('taskStatus');
  });

  it('Create: skips the resize when the disk is not smaller', async () => {
    const { p, m } = await setup();
    m.vms.get(TEMPLATE_VMID)!.config.scsi0 = 'local-lvm:base-9001-disk-0,size=16G';
    await p.create(request({ placement: { machineType: 'large', image: 'debian-13' } }));
    expect(m.calls).not.toContain('resize');
  });

  it('Create: a refused shrink in the resize task is Transient with its text', async () => {
    const { p, m } = await setup();
    m.nextExit.set('resize', 'shrinking disks is not supported');
    const err = await failure(
      p.create(request({ placement: { machineType: 'large', image: 'debian-13' } })),
    );
    expect(errorClassOf(err)).toBe('Transient');
    expect(err.message).toContain('shrinking disks is not supported');
  });

  it("Create: appends the VLAN tag to the clone's net0, keeping the clone's own MAC and the options", async () => {
    const { p, m } = await setup({ config: { vlanTag: 4 } });
    const vms = [vmOf(m, await p.create(request())), vmOf(m, await p.create(request()))];
    const macs = vms.map((vm) => /^virtio=([0-9A-F:]{17}),/.exec(vm.config.net0 ?? '')?.[1]);
    for (const [i, vm] of vms.entries()) {
      expect(vm.config.net0).toBe(`virtio=${macs[i]},bridge=vmbr0,firewall=1,tag=4`);
    }
    // A clone gets a MAC of its own: writing the template's back would give every VM the same one.
    expect(macs[0]).not.toBe('BC:24:11:00:00:01');
    expect(macs[1]).not.toBe(macs[0]);
  });

  it('Create: counts a task ending in WARNINGS as success', async () => {
    const { p, m, logs } = await setup();
    m.nextExit.set('qmstart', 'WARNINGS: 1');
    const id = await p.create(request());
    expect((await p.get(id)).state).toBe('Running');
    expect(logs.lines.some((l) => l.msg === 'proxmox task finished with warnings')).toBe(true);
  });

  it('Create: a failed task is Transient carrying its exit status', async () => {
    const { p, m } = await setup();
    m.nextExit.set('qmstart', 'start failed: QEMU exited with code 1');
    const err = await failure(p.create(request()));
    expect(errorClassOf(err)).toBe('Transient');
    expect(err.message).toContain('QEMU exited with code 1');
  });

  it('Create: a VM vanishing mid-create is Transient, never NotFound', async () => {
    const { p, api } = await setup();
    api!.failNext.set(
      'setVmConfig',
      new ApiError(500, "Configuration file 'nodes/pv1-1/qemu-server/100001.conf' does not exist"),
    );
    expect(errorClassOf(await failure(p.create(request())))).toBe('Transient');
  });

  it('Create: a start that an earlier, cut-off attempt left running is not a failure', async () => {
    const { p, m } = await setup();
    m.setTiming(fastTiming(60));
    const req = request();
    const held = m.holdNextTask('qmstart');
    const ac = new AbortController();
    const first = p.create(req, { signal: ac.signal });
    first.catch(() => {});
    await held.reached;
    ac.abort();
    expect(errorClassOf(await failure(first))).toBe('Transient');
    // The retry finds the VM stopped and starts it again; the first start ends meanwhile.
    const retry = p.create(req);
    setTimeout(() => held.release(), 10);
    const id = await retry;
    expect(m.calls.filter((c) => c === 'start')).toHaveLength(2);
    expect(m.guests()).toHaveLength(1);
    expect(vmOf(m, id).status).toBe('running');
  });

  it('Create: every step cut off on our side but carried out by the server, then retried, makes one VM', async () => {
    const { p, m } = await setup();
    for (const step of ['clone', 'uploadIso', 'setVmConfig', 'start']) {
      const req = request();
      const before = m.calls.length;
      // Hold the step's call at the server, give up on it, then let the server carry it out.
      const skip = CREATE_CALLS.indexOf(step);
      const gate = m.blockCalls(skip);
      const ac = new AbortController();
      const first = p.create(req, { signal: ac.signal });
      first.catch(() => {});
      await gate.reached;
      expect(m.calls[m.calls.length - 1], step).toBe(step);
      ac.abort();
      expect(errorClassOf(await failure(first)), step).toBe('Transient');
      gate.release();
      const id = await p.create(req);
      expect(
        m.guests().filter((v) => v.name === req.name),
        step,
      ).toHaveLength(1);
      expect(m.calls.slice(before).filter((c) => c === 'clone').length, step).toBe(1);
      await p.delete(id);
      expect(m.guests(), step).toHaveLength(0);
      expect(m.secondaryCount(), step).toBe(0);
    }
  });

  it('Create: the placement zone must name a configured node', async () => {
    const { p, m } = await setup({ nodes: ['pv1-1', 'pv1-2'] });
    const err = await failure(
      p.create(request({ placement: { machineType: 'small', image: 'debian-13' } })),
    );
    expect(errorClassOf(err)).toBe('Permanent');
    expect(err.message).toContain('placement.zone');
    expect(m.calls).toEqual([]);
    // A clone to the second node goes through the template's node with a
    // target, which Proxmox refuses while the template's disks are local.
    const onPv12 = { zone: 'pv1-2', machineType: 'small', image: 'debian-13' };
    const local = await failure(p.create(request({ placement: onPv12 })));
    expect(errorClassOf(local)).toBe('Transient');
    expect(local.message).toContain("can't clone VM to node 'pv1-2' (VM uses local storage)");
    for (const n of ['pv1-1', 'pv1-2']) m.storages.get(`${n}/local-lvm`)!.shared = 1;
    const id = await p.create(request({ placement: onPv12 }));
    expect(vmOf(m, id).node).toBe('pv1-2');
    expect(m.requests.find((r) => r.startsWith('POST') && r.endsWith('/clone'))).toBe(
      `POST /api2/json/nodes/pv1-1/qemu/${TEMPLATE_VMID}/clone`,
    );
  });
});

describe('Get', () => {
  it('Get: after Delete is NotFound', async () => {
    const { p } = await setup();
    const id = await p.create(request());
    await p.delete(id);
    expect(errorClassOf(await failure(p.get(id)))).toBe('NotFound');
  });

  it('Get: a malformed ID is Permanent', async () => {
    const { p, m } = await setup();
    for (const bad of ['', 'vms/100/', 'vms/0100/x', 'vms/99/x', 'vm/100/x', 'vms/100/x/y']) {
      expect(errorClassOf(await failure(p.get(bad))), bad).toBe('Permanent');
    }
    expect(m.calls).toEqual([]);
  });

  it('Get: an unknown state is Stopped', async () => {
    const { p, m } = await setup();
    const id = await p.create(request());
    vmOf(m, id).qmpstatus = 'guest-panicked';
    const inst = await p.get(id);
    expect(inst.state).toBe('Stopped');
    expect(inst.ip).toBeUndefined();
  });

  it('Get: running without an IPv4 is Provisioning', async () => {
    const { p, m } = await setup();
    const id = await p.create(request());
    vmOf(m, id).guestNet = 'no-ipv4';
    const inst = await p.get(id);
    expect(inst.state).toBe('Provisioning');
    expect(inst.ip).toBeUndefined();
  });

  it('Get: running with an IPv4 is Running', async () => {
    const { p, m } = await setup();
    const id = await p.create(request());
    vmOf(m, id).ip = '192.168.4.57';
    expect(await p.get(id)).toMatchObject({ state: 'Running', ip: '192.168.4.57' });
  });

  it('Get: reads UID and CreatedAt from the backend', async () => {
    const { p, m } = await setup();
    const req = request();
    const id = await p.create(req);
    const vm = vmOf(m, id);
    vm.config.description = `admin note\r\n\r\nproxy-operator-managed=true\r\nproxy-operator-uid=rewritten\r\nproxy-operator-created-at=2021-02-03T04:05:06Z\r\n`;
    const inst = await p.get(id);
    expect(inst.uid).toBe('rewritten');
    expect(inst.createdAt.toISOString()).toBe('2021-02-03T04:05:06.000Z');
    expect(inst.installation).toBe('default');
  });

  it('Get: during a Delete still returns the instance', async () => {
    const { p, m } = await setup();
    const id = await p.create(request());
    const held = m.holdNextTask('qmdestroy');
    const deleting = p.delete(id);
    await held.reached;
    const inst = await p.get(id);
    expect(inst.id).toBe(id);
    expect(inst.state).toBe('Stopped');
    held.release();
    await deleting;
    expect(errorClassOf(await failure(p.get(id)))).toBe('NotFound');
  });

  it('Get: a locked VM is Transient, never NotFound', async () => {
    const { p, m } = await setup();
    const id = await p.create(request());
    vmOf(m, id).lock = 'backup';
    expect(errorClassOf(await failure(p.get(id)))).toBe('Transient');
  });

  it('Get: a mid-clone nameless entry is Transient', async () => {
    const { p, m } = await setup();
    m.addVm({ vmid: 100_500, lock: 'clone' }).name = undefined;
    expect(errorClassOf(await failure(p.get('vms/100500/proxy-x')))).toBe('Transient');
  });

  it('Get: a VM whose node does not answer is Transient (listed unknown, its config 595)', async () => {
    const { p, m } = await setup();
    const id = await p.create(request());
    m.unreachableNodes.add('pv1-1');
    expect(errorClassOf(await failure(p.get(id)))).toBe('Transient');
  });

  it('Get: a paused VM is Stopped, read from status/current', async () => {
    const { p, m } = await setup();
    const id = await p.create(request());
    const vm = vmOf(m, id);
    vm.qmpstatus = 'paused'; // the listing still says running
    expect((await p.get(id)).state).toBe('Stopped');
    vm.qmpstatus = 'prelaunch';
    expect((await p.get(id)).state).toBe('Provisioning');
  });

  it('Get: a hibernated VM of ours is Stopped; a reused VMID is NotFound', async () => {
    const { p, m } = await setup();
    const id = await p.create(request());
    const vm = vmOf(m, id);
    vm.status = 'stopped';
    vm.lock = 'suspended';
    const before = m.calls.length;
    expect((await p.get(id)).state).toBe('Stopped');
    expect(m.calls.slice(before)).not.toContain('vmStatus');
    vm.config.name = 'someone-else';
    vm.name = 'someone-else';
    expect(errorClassOf(await failure(p.get(id)))).toBe('NotFound');
  });

  it('Get: the agent answers table, as qemu-server answers', async () => {
    const { p, m } = await setup();
    const id = await p.create(request());
    const vm = vmOf(m, id);
    const rows: [string, () => void | Promise<void>, string][] = [
      ['200 with a routable IPv4', () => {}, 'Running'],
      [
        '200 without one',
        () => {
          vm.guestNet = 'no-ipv4';
        },
        'Provisioning',
      ],
      [
        '500 QEMU guest agent is not running',
        () => {
          vm.guestAgent = 'down';
        },
        'Provisioning',
      ],
      [
        'still booting: QEMU guest agent is not running',
        () => {
          vm.guestAgent = 'up';
          m.setTiming({ agentBootMs: 60_000 });
        },
        'Provisioning',
      ],
      [
        'no agent key: No QEMU guest agent configured',
        () => {
          m.setTiming({ agentBootMs: 0 });
          delete vm.config.agent;
        },
        'Stopped',
      ],
      [
        'agent: 0 written while it runs (pending, shown by the config)',
        async () => {
          vm.config.agent = '1';
          await fixtures[fixtures.length - 1]!.api!.setVmConfig({
            node: vm.node,
            vmid: vm.vmid,
            params: { agent: '0' },
          });
        },
        'Stopped',
      ],
    ];
    const got: [string, string][] = [];
    for (const [name, arrange, _want] of rows) {
      await arrange();
      got.push([name, (await p.get(id)).state as string]);
    }
    expect(got).toEqual(rows.map(([name, , want]) => [name, want]));
    // The agent key absent or off, Get decides from the config: no agent call.
    const before = m.calls.length;
    await p.get(id);
    expect(m.calls.slice(before)).not.toContain('agentNetworkInterfaces');
    // VM stopped between the status read and the agent call; anything else.
    const { api } = fixtures[fixtures.length - 1]!;
    vm.pending = {};
    vm.config.agent = '1';
    api!.failNext.set('agentNetworkInterfaces', errorOfAnswer('error-500-vm-not-running'));
    expect(errorClassOf(await failure(p.get(id)))).toBe('Transient');
    api!.failNext.set('agentNetworkInterfaces', new ApiError(500, 'something else entirely'));
    expect(errorClassOf(await failure(p.get(id)))).toBe('Transient');
  });

  it("Get: the agent call's own answers, not running (Provisioning, quiet) and not configured (Stopped, warned)", async () => {
    // Get makes the agent call only when the config and status/current say the agent is on;
    // the VM stopped and its key removed between those reads and the call is the one way to
    // meet "No QEMU guest agent configured" there (qemu-server checks the key first).
    const { p, m, logs, api } = await setup();
    const id = await p.create(request());
    const vm = vmOf(m, id);
    const warnings = () => logs.lines.filter((l) => l.level === 'warn');
    api!.failNext.set('agentNetworkInterfaces', errorOfAnswer('error-500-agent-not-running'));
    expect((await p.get(id)).state).toBe('Provisioning');
    expect(warnings()).toEqual([]);
    api!.failNext.set('agentNetworkInterfaces', errorOfAnswer('error-500-agent-not-configured'));
    expect((await p.get(id)).state).toBe('Stopped');
    expect(warnings().map((l) => [l.msg, l.fields.vmid, l.fields.reason])).toEqual([
      [
        'proxmox vm without guest agent can never report an address',
        vm.vmid,
        NO_AGENT_REASON.keyGone,
      ],
    ]);
    // The agent answering again: Running, and no further warning.
    const got = await p.get(id);
    expect([got.state, got.ip]).toEqual(['Running', vm.ip]);
    expect(warnings()).toHaveLength(1);
  });

  /** A VM of ours, stopped, given `agent: 0` and started again: QEMU runs without the agent's channel. */
  async function startedWithAgentOff() {
    const fx = await setup();
    const { p, m, api } = fx;
    const id = await p.create(request());
    const vm = vmOf(m, id);
    const ref = { node: vm.node, vmid: vm.vmid };
    const power = async (what: 'start' | 'stop') => {
      await api![what](ref);
      await m.settle();
    };
    const restart = async () => {
      await power('stop');
      await power('start');
    };
    await power('stop');
    await api!.setVmConfig({ ...ref, params: { agent: '0' } });
    await power('start');
    return { ...fx, api: api!, id, vm, ref, restart };
  }

  it('Get: a VM started with agent 0 is Stopped; the agent answers it as not running, as qemu-server does', async () => {
    const { p, api, id, ref } = await startedWithAgentOff();
    const err = (await failure(api.agentNetworkInterfaces(ref))) as ApiError;
    expect([err.status, err.apiMessage]).toEqual([500, 'QEMU guest agent is not running']);
    expect((await p.get(id)).state).toBe('Stopped');
  });

  it('Get: a VM started with agent 0 and switched to agent 1 while it runs is Stopped, not Provisioning forever', async () => {
    // The config (pending change applied) says agent 1, but QEMU runs without the agent's
    // channel until the next start: status/current has no agent flag, and the agent call
    // answers "not running" for as long as the VM runs, as for an agent still booting.
    const { p, m, api, logs, id, vm, ref, restart } = await startedWithAgentOff();
    await api.setVmConfig({ ...ref, params: { agent: '1' } });
    expect((await api.vmConfig(ref)).agent).toBe('1');
    expect((await api.vmStatus(ref)).agent).toBeUndefined();
    const err = (await failure(api.agentNetworkInterfaces(ref))) as ApiError;
    expect([err.status, err.apiMessage]).toEqual([500, 'QEMU guest agent is not running']);
    const before = m.calls.length;
    expect((await p.get(id)).state).toBe('Stopped');
    expect(m.calls.slice(before)).not.toContain('agentNetworkInterfaces');
    expect(
      logs.lines.find(
        (l) => l.msg === 'proxmox vm without guest agent can never report an address',
      ),
    ).toMatchObject({
      level: 'warn',
      fields: { vmid: vm.vmid, agent: '1', reason: NO_AGENT_REASON.afterStart },
    });
    // Restarted, it runs with the agent, which answers: Running again.
    await restart();
    expect((await api.vmStatus(ref)).agent).toBe(1);
    expect((await p.get(id)).state).toBe('Running');
  });

  it('Get: a VM of ours cloned but not yet given its seed is Provisioning, not Stopped', async () => {
    const { p, m } = await setup();
    const req = request();
    const vmid = vmidFor(req.uid, 0, RANGE);
    const description = `proxy-operator-managed=true\nproxy-operator-uid=${req.uid}\n`;
    m.cloneNow(TEMPLATE_VMID, vmid, req.name, description);
    const id = formatId({ vmid, name: req.name });
    expect((await p.get(id)).state).toBe('Provisioning');
    // Once Create has attached the seed, a stopped VM is Stopped.
    expect(await p.create(req)).toBe(id);
    const vm = vmOf(m, id);
    vm.status = 'stopped';
    vm.qmpstatus = 'stopped';
    expect((await p.get(id)).state).toBe('Stopped');
  });

  it('Get: a VM at the VMID that lost its mark is NotFound; one of another UID is returned with it', async () => {
    const { p, m } = await setup();
    const id = await p.create(request());
    const vm = vmOf(m, id);
    const mark = vm.config.description ?? '';
    vm.config.description = 'made by hand';
    expect(errorClassOf(await failure(p.get(id)))).toBe('NotFound');
    vm.config.description = mark.replace(/proxy-operator-uid=.*/, 'proxy-operator-uid=other-uid');
    expect((await p.get(id)).uid).toBe('other-uid');
  });

  it('Get: a VM without the installation line counts as the default installation', async () => {
    const { p, m } = await setup();
    const id = await p.create(request());
    const vm = vmOf(m, id);
    vm.config.description = (vm.config.description ?? '').replace(
      /proxy-operator-installation=.*\n/,
      '',
    );
    expect((await p.get(id)).installation).toBe('default');
    expect((await p.listByTag()).map((i) => i.id)).toContain(id);
    expect((await p.listByTag({ installation: 'inst-b' })).map((i) => i.id)).not.toContain(id);
  });

  it('Get: the location is the node the VM is on now, as ListByTag reports it, also after a migration', async () => {
    const { p, m } = await setup({ nodes: ['pv1-1', 'pv1-2'] });
    for (const n of ['pv1-1', 'pv1-2']) m.storages.get(`${n}/local-lvm`)!.shared = 1;
    const id = await p.create(
      request({ placement: { zone: 'pv1-2', machineType: 'small', image: 'debian-13' } }),
    );
    const listedAt = async () => (await p.listByTag()).find((i) => i.id === id)?.location;
    // The node is the zone; the config names no region or country, so none is reported.
    expect(await p.get(id)).toMatchObject({ state: 'Running', location: { zone: 'pv1-2' } });
    expect((await p.get(id)).location).toEqual({ zone: 'pv1-2' });
    expect(await listedAt()).toEqual({ zone: 'pv1-2' });
    // A migration moves the VM's config to the other node: both report where it is as read.
    const vm = vmOf(m, id);
    vm.node = 'pv1-1';
    expect((await p.get(id)).location).toEqual({ zone: 'pv1-1' });
    expect(await listedAt()).toEqual({ zone: 'pv1-1' });
    // Every state is somewhere: a stopped VM and a hibernated one too.
    vm.status = 'stopped';
    vm.qmpstatus = 'stopped';
    expect(await p.get(id)).toMatchObject({ state: 'Stopped', location: { zone: 'pv1-1' } });
    vm.lock = 'suspended';
    expect(await p.get(id)).toMatchObject({ state: 'Stopped', location: { zone: 'pv1-1' } });
  });
});

describe('Delete', () => {
  it('Delete: twice succeeds', async () => {
    const { p } = await setup();
    const id = await p.create(request());
    await p.delete(id);
    await p.delete(id);
  });

  it('Delete: a malformed ID is Permanent', async () => {
    const { p, m } = await setup();
    for (const bad of ['', 'vms/x/y', 'vms/100', '../../etc/passwd']) {
      expect(errorClassOf(await failure(p.delete(bad))), bad).toBe('Permanent');
    }
    expect(m.calls).toEqual([]);
  });

  it('Delete: deletes the seed before the destroy, and the seed delete is a task and idempotent', async () => {
    const { p, m } = await setup();
    const req = request();
    const id = await p.create(req);
    expect(m.isos.has(`pv1-1/proxy-seeds/${req.name}-seed.iso`)).toBe(true);
    const before = m.calls.length;
    await p.delete(id);
    const calls = m.calls.slice(before);
    const seed = calls.indexOf('deleteVolume');
    expect(seed).toBeGreaterThan(0);
    expect(calls[seed + 1]).toBe('taskStatus');
    expect(calls.indexOf('destroy')).toBeGreaterThan(seed);
    expect(calls.indexOf('stop')).toBeLessThan(seed);
    expect(m.isos.size).toBe(0);
    expect(m.guests()).toHaveLength(0);
    // Gone: the seed is deleted again on every node, a missing volume is a successful task.
    await p.delete(id);
    expect(m.calls.slice(before).filter((c) => c === 'deleteVolume')).toHaveLength(2);
  });

  it('Delete: with the VM gone, deletes the seed on every node in config order', async () => {
    const { p, m, api } = await setup({ nodes: ['pv1-1', 'pv1-2', 'pv1-3'] });
    const seen: string[] = [];
    const original = api!.deleteVolume.bind(api);
    api!.deleteVolume = (r, s) => {
      seen.push(r.node);
      return original(r, s);
    };
    m.unreachableNodes.add('pv1-2'); // a node that fails is skipped
    await p.delete('vms/100777/proxy-gone');
    expect(seen).toEqual(['pv1-1', 'pv1-2', 'pv1-3']);
    // A missing privilege fails the call, so it is visible.
    m.forbidden.set('deleteVolume', '/storage/proxy-seeds, Datastore.Allocate');
    const err = await failure(p.delete('vms/100777/proxy-gone'));
    expect(errorClassOf(err)).toBe('Permanent');
    expect(err.message).toContain('Datastore.Allocate');
  });

  it('Delete: leaves a VM that is not ours alone', async () => {
    const { p, m } = await setup();
    m.addVm({
      vmid: 100_900,
      name: 'proxy-x',
      status: 'running',
      config: { description: 'hand made' },
    });
    await p.delete('vms/100900/proxy-x');
    expect(m.vms.get(100_900)?.status).toBe('running');
    m.addVm({ vmid: 100_901, name: 'other', status: 'running' });
    await p.delete('vms/100901/proxy-y');
    expect(m.vms.has(100_901)).toBe(true);
  });

  it('Delete: a VM whose mark names another owner is left alone with its seed', async () => {
    const { p, m } = await setup();
    const req = request({ installation: 'inst-a' });
    const id = await p.create(req);
    const seed = `pv1-1/proxy-seeds/${req.name}-seed.iso`;
    for (const owner of [
      { uid: 'someone-else' },
      { installation: 'inst-b' },
      { uid: req.uid, installation: 'default' },
    ]) {
      const before = m.calls.length;
      await p.delete(id, owner);
      expect(m.vms.has(idOf(id).vmid), JSON.stringify(owner)).toBe(true);
      expect(m.isos.has(seed), JSON.stringify(owner)).toBe(true);
      expect(m.calls.slice(before), JSON.stringify(owner)).toEqual([
        'clusterResources',
        'vmConfig',
      ]);
    }
    // The caller's own UID and installation, or none named: deleted.
    await p.delete(id, { uid: req.uid, installation: 'inst-a' });
    expect(m.vms.has(idOf(id).vmid)).toBe(false);
    expect(m.isos.has(seed)).toBe(false);
    expect(m.secondaryCount()).toBe(0);
  });

  it("Delete: a VM with an empty UID in its mark is the caller's, whatever UID they name", async () => {
    const { p, m } = await setup();
    const id = await p.create(request());
    const vm = vmOf(m, id);
    vm.config.description = (vm.config.description ?? '').replace(
      /proxy-operator-uid=.*/,
      'proxy-operator-uid=',
    );
    await p.delete(id, { uid: 'any-uid' });
    expect(m.guests()).toHaveLength(0);
  });

  it('Delete: an unmarked VM at the ID is left alone, and the seed of the name is deleted everywhere', async () => {
    const { p, m } = await setup({ nodes: ['pv1-1', 'pv1-2'] });
    const req = request({ placement: { zone: 'pv1-1', machineType: 'small', image: 'debian-13' } });
    const id = await p.create(req);
    const vm = vmOf(m, id);
    vm.config.description = 'made by hand';
    const before = m.calls.length;
    await p.delete(id, { uid: req.uid });
    expect(m.vms.get(vm.vmid)?.status).toBe('running');
    expect(m.isos.size).toBe(0);
    expect(m.calls.slice(before).filter((c) => c === 'deleteVolume')).toHaveLength(2);
  });

  it('Delete: a locked VM is Transient; a hibernated one of ours is destroyed', async () => {
    const { p, m } = await setup();
    const id = await p.create(request());
    const vm = vmOf(m, id);
    vm.lock = 'backup';
    expect(errorClassOf(await failure(p.delete(id)))).toBe('Transient');
    vm.status = 'stopped';
    vm.lock = 'suspended';
    await p.delete(id);
    expect(m.vms.has(vm.vmid)).toBe(false);
  });

  it('Delete: stops a paused VM before the destroy', async () => {
    const { p, m } = await setup();
    const id = await p.create(request());
    vmOf(m, id).qmpstatus = 'paused';
    await p.delete(id);
    expect(m.calls).toContain('stop');
    expect(m.guests()).toHaveLength(0);
  });
});

describe('ListByTag', () => {
  it('ListByTag: excludes unmarked VMs', async () => {
    const { p, m } = await setup();
    const id = await p.create(request());
    m.addVm({ vmid: 100_950, name: 'proxy-hand-made', config: { description: 'hello' } });
    m.addVm({ vmid: 100_951, name: 'web', config: { tags: 'proxy_operator', description: 'x' } });
    expect((await p.listByTag()).map((i) => i.id)).toEqual([id]);
  });

  it('ListByTag: lists a marked VM with an empty UID', async () => {
    const { p, m } = await setup();
    m.addVm({
      vmid: 100_960,
      name: 'renamed',
      config: {
        tags: 'other;proxy_operator',
        description: 'proxy-operator-managed=true\nproxy-operator-uid=\n',
      },
    });
    const list = await p.listByTag();
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({ id: 'vms/100960/renamed', uid: '' });
  });

  it('ListByTag: skips an unreadable candidate and leaves out nameless clones', async () => {
    const { p, m } = await setup({ nodes: ['pv1-1', 'pv1-2'] });
    const id = await p.create(
      request({ placement: { zone: 'pv1-1', machineType: 'small', image: 'debian-13' } }),
    );
    m.addVm({
      vmid: 100_970,
      node: 'pv1-2',
      name: 'proxy-elsewhere',
      config: { description: 'x', tags: 'proxy_operator' },
    });
    m.addVm({ vmid: 100_971, lock: 'clone' }).name = undefined;
    // pv1-2 down: its guests are listed unknown and nameless, with their tags.
    m.unreachableNodes.add('pv1-2');
    const before = m.calls.length;
    expect((await p.listByTag()).map((i) => i.id)).toEqual([id]);
    expect(m.calls.slice(before).filter((c) => c === 'vmConfig')).toHaveLength(2);
  });
});

describe('cancellation and the Checker', () => {
  it('Provider: a cancelled signal returns promptly from every method and the Checker', async () => {
    const { p, m } = await setup();
    const id = await p.create(request());
    const calls: [string, (s: AbortSignal) => Promise<unknown>][] = [
      ['create', (signal) => p.create(request(), { signal })],
      ['get', (signal) => p.get(id, { signal })],
      ['delete', (signal) => p.delete(id, { signal })],
      ['listByTag', (signal) => p.listByTag({ signal })],
      ['check', (signal) => p.check!({ signal })],
    ];
    for (const skip of [0, 1]) {
      for (const [name, call] of calls) {
        if (skip === 1 && name !== 'create' && name !== 'delete') continue;
        const gate = m.blockCalls(skip);
        const ac = new AbortController();
        const pending = call(ac.signal);
        pending.catch(() => {});
        await gate.reached;
        const t0 = Date.now();
        ac.abort();
        const settled = await pending.then(
          (v) => ({ v }),
          (e: unknown) => ({ e }),
        );
        gate.release();
        expect(Date.now() - t0, `${name} after ${skip} calls`).toBeLessThan(500);
        if (name === 'check') {
          expect((settled as { v: { reason: string }[] }).v.map((r) => r.reason)).toEqual([
            'Timeout',
          ]);
        } else expect(errorClassOf((settled as { e: unknown }).e), name).toBe('Transient');
      }
    }
  });

  it('Check: the reasons table', async () => {
    const rows: [string, (f: ProxmoxFixture) => void, string][] = [
      ['ready', () => {}, 'Reachable'],
      [
        'token refused',
        (f) => {
          f.model.acceptedToken = 'a@pve!b=c';
        },
        'Unauthorized',
      ],
      [
        'privilege missing',
        (f) => {
          f.model.forbidden.set('version', '/, Sys.Audit');
        },
        'Forbidden',
      ],
      [
        '595',
        (f) => {
          f.model.unreachableNodes.add('pv1-1');
        },
        'Unreachable',
      ],
      [
        'storage unknown to the cluster',
        (f) => {
          f.model.storages.delete('pv1-1/proxy-seeds');
        },
        'StorageNotFound',
      ],
      [
        'storage inactive',
        (f) => {
          f.model.storages.get('pv1-1/proxy-seeds')!.active = 0;
        },
        'StorageNotFound',
      ],
      [
        'storage without iso content',
        (f) => {
          f.model.storages.get('pv1-1/proxy-seeds')!.content = 'images';
        },
        'StorageNotFound',
      ],
      [
        'template missing',
        (f) => {
          f.model.vms.delete(TEMPLATE_VMID);
        },
        'TemplateNotFound',
      ],
      [
        'token file missing',
        (f) => {
          rmSync(f.tokenFile);
        },
        'CredentialsUnavailable',
      ],
      [
        'token file malformed',
        (f) => {
          writeFileSync(f.tokenFile, 'not a token');
        },
        'CredentialsUnavailable',
      ],
    ];
    for (const [name, arrange, want] of rows) {
      const f = await setup();
      arrange(f);
      const [r] = await f.p.check!();
      expect(r?.reason, name).toBe(want);
      expect(r?.ready, name).toBe(want === 'Reachable');
      expect(r?.details.isoStorage).toBe('proxy-seeds');
      expect(JSON.stringify(r)).not.toContain('SENTINEL');
      if (want === 'Reachable') {
        expect(r?.details).toMatchObject({
          pveVersion: '9.2.20',
          tokenID: 'proxy-operator@pve!op',
          templates: '1/1',
        });
        expect(r?.details.kernel).toContain('pve');
      }
    }
  });

  it('Check: an expired signal returns promptly', async () => {
    const { p } = await setup({ nodes: ['pv1-1', 'pv1-2'] });
    const t0 = Date.now();
    const results = await p.check!({ signal: AbortSignal.abort() });
    expect(Date.now() - t0).toBeLessThan(100);
    expect(results.map((r) => [r.target, r.reason])).toEqual([
      ['pv1-1', 'Timeout'],
      ['pv1-2', 'Timeout'],
    ]);
    // What the config says is there even when nothing was asked.
    for (const r of results) expect(r.details).toMatchObject({ isoStorage: 'proxy-seeds' });
  });

  it('Check: one entry per node in config order', async () => {
    const { p, m } = await setup({ nodes: ['pv1-3', 'pv1-1', 'pv1-2'] });
    m.nodeDelay.set('pv1-3', 40);
    const results = await p.check!();
    expect(results.map((r) => r.target)).toEqual(['pv1-3', 'pv1-1', 'pv1-2']);
    expect(results.every((r) => r.reason === 'Reachable')).toBe(true);
  });
});

describe('logging', () => {
  it('Logging: silent at info, outcomes and calls at debug, detail at trace, over a lifecycle', async () => {
    const { p, logs } = await setup();
    const sentinel = 'CLOUDINIT-SENTINEL-logging-9c2e';
    const req = request({ cloudInit: new TextEncoder().encode(`#cloud-config\n# ${sentinel}\n`) });
    const id = await p.create(req);
    await p.get(id);
    await p.listByTag();
    await p.check!();
    await p.delete(id);
    const levels = new Set(logs.lines.map((l) => l.level));
    expect(levels.has('info') || levels.has('warn') || levels.has('error')).toBe(false);
    const calls = logs.lines.filter((l) => l.msg === 'proxmox call');
    expect(calls.length).toBeGreaterThan(10);
    expect(calls.every((l) => l.level === 'debug' && typeof l.fields.call === 'string')).toBe(true);
    expect(
      logs.lines.some(
        (l) =>
          l.msg === 'proxmox vm ensured running' &&
          l.fields.cloudInitBytes === req.cloudInit.byteLength,
      ),
    ).toBe(true);
    expect(
      logs.lines.some((l) => l.msg === 'proxmox vm deleted' && l.fields.destroyed === true),
    ).toBe(true);
    expect(logs.lines.some((l) => l.level === 'trace')).toBe(true);
    expect(logs.text()).not.toContain(sentinel);
    expect(logs.text()).not.toContain('SENTINEL-4e1c');
    expect(logs.text()).not.toContain('proxy-operator-uid=');
  });

  it('Logging: every seam method logs exactly one line per call', async () => {
    const { p, m, logs, api } = await setup();
    void p;
    const s = createLogSink();
    const api2 = decorateApi(api!, {
      provider: 'proxmox-home',
      logger: s.logger,
      requestTimeoutMs: 0,
    });
    m.addVm({
      vmid: 100_800,
      name: 'proxy-z',
      status: 'running',
      qmpstatus: 'running',
      config: { scsi0: 'x,size=3G' },
    });
    const ref = { node: 'pv1-1', vmid: 100_800 };
    const args: Record<string, unknown[]> = {
      version: [],
      nodeStatus: [{ node: 'pv1-1' }],
      storageStatus: [{ node: 'pv1-1', storage: 'proxy-seeds' }],
      clusterResources: [],
      vmConfig: [ref],
      setVmConfig: [{ ...ref, params: { cores: '1' } }],
      clone: [
        { node: 'pv1-1', vmid: TEMPLATE_VMID, newid: 100_801, name: 'proxy-w', description: 'd' },
      ],
      resize: [{ ...ref, disk: 'scsi0', size: '4G' }],
      start: [ref],
      stop: [ref],
      vmStatus: [ref],
      destroy: [{ node: 'pv1-1', vmid: 100_801 }],
      taskStatus: [{ node: 'pv1-1', upid: 'UPID:pv1-1:nope' }],
      agentNetworkInterfaces: [ref],
      uploadIso: [
        { node: 'pv1-1', storage: 'proxy-seeds', filename: 'a.iso', data: new Uint8Array(4) },
      ],
      deleteVolume: [{ node: 'pv1-1', storage: 'proxy-seeds', volid: 'proxy-seeds:iso/a.iso' }],
    };
    for (const method of API_METHODS) {
      const before = s.lines.length;
      await (api2[method] as (...a: unknown[]) => Promise<unknown>)(...(args[method] ?? [])).catch(
        () => {},
      );
      const lines = s.lines.slice(before);
      expect(lines, method).toHaveLength(1);
      expect(lines[0]?.fields.call).toBe(method);
    }
    expect(s.text()).not.toContain('"description"');
    void logs;
  });
});

describe('API calls per operation', () => {
  it('counts the calls of Create, a running Get, Delete and a ListByTag over N VMs', async () => {
    const { p, m } = await setup();
    const count = async (fn: () => Promise<unknown>) => {
      const before = m.calls.length;
      await fn();
      return m.calls.slice(before);
    };
    const create = await count(() => p.create(request()));
    const id = formatId({ vmid: m.guests()[0]!.vmid, name: m.guests()[0]!.name! });
    const get = await count(() => p.get(id));
    for (let i = 0; i < 4; i++) await p.create(request());
    const list = await count(() => p.listByTag());
    // Deleting a VM seconds old, before pvestatd has reported it: status/current says whether it runs.
    const second = m.guests()[1]!;
    const young = await count(() => p.delete(formatId({ vmid: second.vmid, name: second.name! })));
    m.refreshStats(); // pvestatd's round: the listing knows the others run
    const del = await count(() => p.delete(id));
    const counts = {
      create: create.length,
      get: get.length,
      list: list.length,
      delete: del.length,
      deleteYoung: young.length,
    };
    console.log(
      'API calls per operation (tasks finish at the first poll):',
      JSON.stringify(counts),
    );
    expect(get).toEqual(['clusterResources', 'vmConfig', 'vmStatus', 'agentNetworkInterfaces']);
    expect(counts.get).toBeLessThanOrEqual(4);
    expect(create).toEqual(CREATE_CALLS);
    expect(counts.list).toBe(1 + 5);
    expect(young.slice(0, 4)).toEqual(['clusterResources', 'vmConfig', 'vmStatus', 'stop']);
    expect(counts.deleteYoung).toBe(counts.delete + 1);
    expect(del).toEqual([
      'clusterResources',
      'vmConfig',
      'stop',
      'taskStatus',
      'deleteVolume',
      'taskStatus',
      'destroy',
      'taskStatus',
    ]);
  });
});

export type { Provider };
