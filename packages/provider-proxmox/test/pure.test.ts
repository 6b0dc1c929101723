// Peer: none; pure functions (IDs, VMIDs, marks, disks, state mapping, config, classify).
import { ConfigError, profileProblems, validateConfig } from '@proxy-op/contract';
import { describe, expect, it } from 'vitest';
import { readAnswer } from '../src/answers.js';
import { classify } from '../src/classify.js';
import { configSchema } from '../src/config.js';
import { bootDisk, cloudInitDrives, diskSizeBytes, rewriteNet0 } from '../src/disk.js';
import { ApiError } from '../src/errors.js';
import { parseId } from '../src/id.js';
import { formatDescription, parseDescription } from '../src/mark.js';
import { profile, providerModule } from '../src/module.js';
import { API_METHODS } from '../src/seam.js';
import {
  agentErrorState,
  agentState,
  firstRoutableIPv4,
  mapStatus,
  NO_AGENT_REASON,
  withoutAgent,
} from '../src/state.js';
import { fnv1a64, vmidFor } from '../src/vmid.js';
import { CLASSIFY_CASES } from './support/fixture.js';

describe('IDs', () => {
  it('parseId: accepts exactly vms/<vmid>/<name>', () => {
    expect(parseId('vms/100123/proxy-a')).toEqual({ vmid: 100123, name: 'proxy-a' });
    expect(parseId('vms/999999999/x')).toEqual({ vmid: 999999999, name: 'x' });
    const bad = [
      '',
      'vms',
      'vms/100',
      'vms/100/',
      'vms//x',
      'vms/99/x',
      'vms/0100/x',
      'vms/1000000000/x',
      'vms/12a/x',
      'VMS/100/x',
      'vms/100/x/y',
      '/vms/100/x',
      'vms/100/x/',
      '../../etc/passwd',
    ];
    for (const id of bad) expect(parseId(id), id).toBeUndefined();
  });
});

describe('VMIDs', () => {
  it('fnv1a64: matches the published test vectors', () => {
    expect(fnv1a64('')).toBe(0xcbf29ce484222325n);
    expect(fnv1a64('a')).toBe(0xaf63dc4c8601ec8cn);
    expect(fnv1a64('foobar')).toBe(0x85944171f73967e8n);
  });

  it('vmidFor: deterministic, inside the range, stepping forward and wrapping', () => {
    const range = { min: 100_000, max: 199_999 };
    const uid = '6c1d5f0e-2b7a-4c0e-9d43-1f0a5e2b9c11';
    const v0 = vmidFor(uid, 0, range);
    expect(vmidFor(uid, 0, range)).toBe(v0);
    expect(v0).toBe(100_000 + Number(fnv1a64(uid) % 100_000n));
    expect(v0).toBeGreaterThanOrEqual(range.min);
    expect(v0).toBeLessThanOrEqual(range.max);
    expect(vmidFor(uid, 1, range)).toBe(v0 === range.max ? range.min : v0 + 1);
    const small = { min: 100, max: 101 };
    expect(new Set([0, 1, 2, 3].map((a) => vmidFor(uid, a, small)))).toEqual(new Set([100, 101]));
  });
});

describe('marks', () => {
  it('the description mark round-trips and tolerates CRLF, blanks and admin lines', () => {
    const mark = {
      uid: 'u-1',
      createdAt: new Date('2026-09-23T10:00:00Z'),
      installation: 'inst-a',
    };
    const text = formatDescription(mark);
    expect(text).toBe(
      'proxy-operator-managed=true\nproxy-operator-uid=u-1\nproxy-operator-created-at=2026-09-23T10:00:00Z\nproxy-operator-installation=inst-a\n',
    );
    expect(parseDescription(text)).toEqual(mark);
    expect(parseDescription(`note: hi\r\n\r\n${text.replaceAll('\n', '\r\n')}`)).toEqual(mark);
    expect(parseDescription('proxy-operator-managed=yes\nproxy-operator-uid=u')).toBeUndefined();
    expect(parseDescription(undefined)).toBeUndefined();
    const old = parseDescription(
      'proxy-operator-managed=true\nproxy-operator-created-at=garbage\n',
    );
    expect(old).toEqual({ uid: '', createdAt: new Date(0), installation: 'default' });
  });
});

describe('disks and NICs', () => {
  it('bootDisk: table', () => {
    const rows: [Record<string, string>, string | undefined][] = [
      [{ boot: 'order=scsi0', scsi0: 'local-lvm:vm-1-disk-0,size=3G' }, 'scsi0'],
      [{ boot: 'order=scsi0;ide2', scsi0: 'a,size=3G', ide2: 'iso,media=cdrom' }, 'scsi0'],
      [{ boot: 'order=ide2;virtio1', ide2: 'x,media=cdrom', virtio1: 'a,size=1G' }, 'virtio1'],
      [{ boot: 'order=net0;scsi1', scsi1: 'a,size=1G', net0: 'virtio' }, 'scsi1'],
      [{ bootdisk: 'sata0', sata0: 'a,size=1G' }, 'sata0'],
      [{ virtio0: 'a,size=1G', ide0: 'b,size=1G' }, 'virtio0'],
      [{ ide2: 'x,media=cdrom' }, undefined],
      [{}, undefined],
    ];
    for (const [config, want] of rows) expect(bootDisk(config), JSON.stringify(config)).toBe(want);
    expect(diskSizeBytes('local-lvm:vm-1-disk-0,size=3G')).toBe(3 * 2 ** 30);
    expect(diskSizeBytes('a,size=512M,ssd=1')).toBe(512 * 2 ** 20);
    expect(diskSizeBytes('a,ssd=1')).toBeUndefined();
    expect(
      cloudInitDrives({ ide2: 'local-lvm:vm-9000-cloudinit,media=cdrom', scsi0: 'a' }),
    ).toEqual(['ide2']);
  });

  it('rewriteNet0: replaces or appends bridge and tag, keeping the rest in order', () => {
    const net0 = 'virtio=BC:24:11:AA:BB:CC,bridge=vmbr0,firewall=1';
    expect(rewriteNet0(net0, { vlanTag: 4 })).toBe(`${net0},tag=4`);
    expect(rewriteNet0(`${net0},tag=7`, { vlanTag: 4, bridge: 'vmbr1' })).toBe(
      'virtio=BC:24:11:AA:BB:CC,bridge=vmbr1,firewall=1,tag=4',
    );
    expect(rewriteNet0(net0, {})).toBe(net0);
  });
});

describe('state mapping', () => {
  it('mapStatus: table', () => {
    const rows: [string, string | undefined, string][] = [
      ['running', 'running', 'agent'],
      ['running', undefined, 'agent'],
      ['running', 'prelaunch', 'Provisioning'],
      ['running', 'paused', 'Stopped'],
      ['running', 'suspended', 'Stopped'],
      ['running', 'io-error', 'Stopped'],
      ['stopped', 'stopped', 'Stopped'],
      ['something-new', undefined, 'Stopped'],
    ];
    for (const [status, qmp, want] of rows)
      expect(mapStatus(status, qmp), `${status}/${qmp}`).toBe(want);
  });

  it('firstRoutableIPv4: skips loopback, link-local, unspecified and IPv6', () => {
    const a = (ip: string, t = 'ipv4') => ({ 'ip-address-type': t, 'ip-address': ip });
    expect(
      firstRoutableIPv4([
        { name: 'lo', 'ip-addresses': [a('127.0.0.1')] },
        { name: 'eth0', 'ip-addresses': [a('fe80::1', 'ipv6'), a('169.254.3.4'), a('0.0.0.0')] },
        { name: 'eth1', 'ip-addresses': [a('192.168.4.20'), a('192.168.4.21')] },
      ]),
    ).toBe('192.168.4.20');
    expect(firstRoutableIPv4([{ name: 'eth0' }])).toBeUndefined();
  });

  it('agentState: Running with the first routable IPv4, Provisioning without one', () => {
    const a = (ip: string) => ({ 'ip-address-type': 'ipv4', 'ip-address': ip });
    expect(agentState([{ name: 'eth0', 'ip-addresses': [a('192.168.4.20')] }])).toEqual({
      state: 'Running',
      ip: '192.168.4.20',
    });
    expect(agentState([{ name: 'lo', 'ip-addresses': [a('127.0.0.1')] }])).toEqual({
      state: 'Provisioning',
    });
  });

  it('agentErrorState: agent not running is Provisioning, not configured is Stopped, else none', () => {
    expect(agentErrorState(new ApiError(500, 'QEMU guest agent is not running'))).toBe(
      'Provisioning',
    );
    expect(agentErrorState(new ApiError(500, 'No QEMU guest agent configured'))).toBe('Stopped');
    expect(agentErrorState(new ApiError(500, 'something else entirely'))).toBeUndefined();
    expect(agentErrorState(new ApiError(403, 'QEMU guest agent is not running'))).toBeUndefined();
    expect(agentErrorState(new Error('QEMU guest agent is not running'))).toBeUndefined();
  });

  it('withoutAgent: no agent key, the agent off, or QEMU without its channel, each its own reason', () => {
    const st = (agent?: number) => ({ status: 'running', qmpstatus: 'running', agent });
    expect(withoutAgent({ agent: '1' }, st(1))).toBeUndefined();
    expect(withoutAgent({ agent: 'enabled=1,fstrim_cloned_disks=1' }, st(1))).toBeUndefined();
    // The key missing is not the agent off: qemu-server answers the two apart.
    expect(withoutAgent({}, st(1))).toBe(NO_AGENT_REASON.noKey);
    expect(withoutAgent({}, st())).toBe(NO_AGENT_REASON.noKey);
    expect(withoutAgent({ agent: '0' }, st(1))).toBe(NO_AGENT_REASON.off);
    expect(withoutAgent({ agent: '0' }, st())).toBe(NO_AGENT_REASON.off);
    expect(withoutAgent({ agent: 'enabled=0,fstrim_cloned_disks=1' }, st(1))).toBe(
      NO_AGENT_REASON.off,
    );
    expect(withoutAgent({ agent: '1' }, st())).toBe(NO_AGENT_REASON.afterStart);
    expect(new Set(Object.values(NO_AGENT_REASON)).size).toBe(4);
  });
});

describe('answers', () => {
  it('readAnswer: every method refuses null, no data and the wrong container as a TypeError', () => {
    const good: Record<string, unknown> = {
      version: { version: '9.2.20', release: '9.2' },
      nodeStatus: { kversion: 'Linux 7.0.14-17-pve' },
      storageStatus: { active: 1, content: 'iso' },
      clusterResources: [{ type: 'qemu', vmid: 100, node: 'pv1-1', status: 'running' }],
      vmConfig: { name: 'x', cores: 1, agent: 1 },
      vmStatus: { status: 'running', qmpstatus: 'running' },
      taskStatus: { status: 'stopped', exitstatus: 'OK' },
      agentNetworkInterfaces: { result: [{ name: 'lo' }] },
      agentExec: { pid: 1234 },
      agentExecStatus: { exited: 1, exitcode: 0 },
    };
    const upid = 'UPID:pv1-1:00001234:00005678:65000000:qmstart:100:root@pam:';
    for (const method of API_METHODS) {
      const read = readAnswer[method] as (d: unknown) => unknown;
      // Both answer `null` (qemu-server's `returns => { type => 'null' }`).
      if (method === 'setVmConfig' || method === 'agentFileWrite') {
        expect(read(null), method).toBeUndefined();
        continue;
      }
      const value = good[method] ?? upid;
      expect(() => read(value), method).not.toThrow();
      const wrong = Array.isArray(value) ? {} : typeof value === 'object' ? [] : {};
      for (const bad of [null, undefined, wrong]) {
        expect(() => read(bad), `${method}(${JSON.stringify(bad)})`).toThrow(TypeError);
      }
    }
    expect(readAnswer.vmConfig({ name: 'x', cores: 1, agent: 1 })).toEqual({
      name: 'x',
      cores: '1',
      agent: '1',
    });
    expect(() =>
      readAnswer.clusterResources([{ vmid: '100', node: 'pv1-1', type: 'qemu' }]),
    ).toThrow(TypeError);
    expect(() => readAnswer.start('not a upid')).toThrow(TypeError);
    expect(() => readAnswer.agentNetworkInterfaces({})).toThrow(TypeError);
  });
});

describe('config', () => {
  const minimal = {
    url: 'https://192.168.0.8:8006',
    tokenFile: '/etc/proxy-operator/proxmox/token',
    nodes: ['pv1-1'],
    isoStorage: 'proxy-seeds',
    templates: { 'debian-13': { vmid: 9001 } },
    machineTypes: { small: { cores: 1, memoryMiB: 1024 } },
  };

  it('config: fills the defaults', async () => {
    const c = await validateConfig(configSchema, minimal);
    expect(c).toMatchObject({
      insecureSkipTLSVerify: false,
      vmidRange: { min: 100_000, max: 199_999 },
      requestTimeoutSeconds: 30,
      installGuestAgent: true,
    });
    expect(c.caFile).toBeUndefined();
  });

  it('config: every problem names its field path', async () => {
    const bad = {
      url: 'http://pve/api2/json',
      nodes: ['PV1', 'pv1-1', 'pv1-1'],
      isoStorage: '9bad',
      vlanTag: 5000,
      vmidRange: { min: 50, max: 10 },
      templates: { debian: { vmid: 5 } },
      machineTypes: { small: { cores: 0, memoryMiB: 1024, diskGiB: -1 } },
      requestTimeoutSeconds: -1,
      colour: 'blue',
    };
    let err: unknown;
    try {
      await validateConfig(configSchema, bad, 'proxmox');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const problems = (err as ConfigError).problems.join('\n');
    for (const path of [
      'proxmox.url:',
      'proxmox.tokenFile: is required',
      'proxmox.nodes[0]:',
      'proxmox.nodes[2]:',
      'proxmox.isoStorage:',
      'proxmox.vlanTag:',
      'proxmox.vmidRange.min:',
      'proxmox.templates.debian.vmid:',
      'proxmox.machineTypes.small.cores:',
      'proxmox.machineTypes.small.diskGiB:',
      'proxmox.requestTimeoutSeconds:',
      'proxmox.colour: is not a known field',
    ]) {
      expect(problems).toContain(path);
    }
  });

  it('the module exports a valid profile and the proxmox type', () => {
    expect(providerModule.type).toBe('proxmox');
    expect(providerModule.profile).toBe(profile);
    expect(profile.primaryKey).toBe('allocated-id');
    expect(profile.asyncOps).toEqual(['task-handle', 'backend-lock']);
    // An own cluster: not billed per VM, never taking a VM back, no IPv6 ranges.
    expect(profile).toMatchObject({ billing: 'none', preemption: 'never', ipv6Egress: 'none' });
    expect(profileProblems(profile)).toEqual([]);
  });
});

describe('classify', () => {
  it('classify: table', () => {
    for (const c of CLASSIFY_CASES) expect(classify(c.op, c.error), c.name).toBe(c.want);
    expect(classify('get', new Error('never seen'))).toBe('Transient');
  });
});
