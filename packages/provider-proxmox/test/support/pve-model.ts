// In-memory model of the parts of a Proxmox VE 9 cluster the provider uses.
// Both test doubles sit on it (through the API table in pve-api.ts): the
// HTTPS fake (https-fake.ts) and the seam fake (fake-api.ts), so each
// behaviour is written once. What it does, and the texts it answers with,
// follow the PVE sources (qemu-server, pve-manager, pve-storage, pve-common,
// pve-http-server) and the spec's recorded answers (test/fixtures/pve/).
//
// Time is real: a clone takes about two seconds unless a test asks for
// speed (`timing`), the listing's names and states come from pvestatd's last
// round (every ten seconds), and a guest agent answers some time after its
// VM started. The model moves on whenever it is asked something (`tick`).
import { randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { createGate, type Gate, type HarnessGate } from '@proxy-op/providertest';
import { GuestAgentFailure, GuestAgentModel } from '@proxy-op/testkit';
import { type CapturedAnswer, render } from './answers.js';

/**
 * A failure as Proxmox answers it: the status, the message (with its
 * newline, as the API sends it, trimmed here) and, for a 400, the field
 * errors. `answer` is the kept answer it was made from, sent as it is.
 */
export class PveError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly errors?: Readonly<Record<string, string>>,
    readonly answer?: CapturedAnswer,
    /** Whether the API's message ends in a newline (a `die` text does; a few built ones do not). */
    readonly newline = true,
  ) {
    super(message);
  }
}

/** The kept answer `name` (test/fixtures/pve) as a failure, for these values. */
export function answerError(name: string, vars: Record<string, string | number> = {}): PveError {
  const a = render(name, vars);
  let message = a.reason;
  let errors: Record<string, string> | undefined;
  if (a.body.startsWith('{')) {
    const body = JSON.parse(a.body) as { message?: string; errors?: Record<string, string> };
    message = (body.message ?? a.reason).replace(/\n$/, '');
    errors = body.errors;
  }
  return new PveError(a.status, message, errors, a);
}

/** A 400 `Parameter verification failed.` with these field errors. */
export function paramError(errors: Record<string, string>): PveError {
  return new PveError(400, 'Parameter verification failed.', errors);
}

/** The task types the model runs. */
export type TaskType =
  | 'qmclone'
  | 'imgcopy'
  | 'resize'
  | 'qmstart'
  | 'qmstop'
  | 'qmdestroy'
  | 'imgdel';

/** How long things take. */
export interface Timing {
  /** How long each kind of task runs, in ms. */
  readonly tasks: Readonly<Record<TaskType, number>>;
  /** From a VM's start until its guest agent answers (cloud-init installs it), in ms. */
  readonly agentBootMs: number;
  /** pvestatd's round: how old the listing's name, status and template may be, in ms. */
  readonly statsIntervalMs: number;
  /** How long pveproxy holds a 401, in ms. */
  readonly authFailureDelayMs: number;
  /** How long the API takes over any request, in ms. */
  readonly requestMs: number;
  /** How long a task or config write waits for a VM's lock file before it gives up, in ms. */
  readonly lockTimeoutMs: number;
}

/**
 * A real host's pace: a full clone of a small template in about two
 * seconds (F16), other tasks within a second or two, the guest agent about
 * 45 seconds after the start (F21), pvestatd every 10 s, a 401 after 3 s
 * (pve-http-server), a lock file waited on for 10 s (pve-guest-common).
 */
export const REALISTIC_TIMING: Timing = Object.freeze({
  tasks: Object.freeze({
    qmclone: 2_000,
    imgcopy: 400,
    resize: 600,
    qmstart: 1_200,
    qmstop: 800,
    qmdestroy: 1_000,
    imgdel: 200,
  }),
  agentBootMs: 45_000,
  statsIntervalMs: 10_000,
  authFailureDelayMs: 3_000,
  requestMs: 10,
  lockTimeoutMs: 10_000,
});

/** Tasks of `ms`, no boot time, no request time, no 401 delay: for tests that need speed. */
export function fastTiming(ms = 0): Partial<Timing> {
  return {
    tasks: {
      qmclone: ms,
      imgcopy: ms,
      resize: ms,
      qmstart: ms,
      qmstop: ms,
      qmdestroy: ms,
      imgdel: ms,
    },
    agentBootMs: 0,
    authFailureDelayMs: 0,
    requestMs: 0,
  };
}

/** pvestatd's last report on a VM: where the listing's name, status and template come from. */
interface Stats {
  readonly name: string;
  readonly status: string;
  readonly template: number;
  readonly maxmem: number;
  readonly maxcpu: number;
  readonly maxdisk: number;
  readonly uptime: number;
}

/** A VM (or a container, type `lxc`, which the provider must leave alone). */
export class ModelVm {
  vmid: number;
  node: string;
  type: 'qemu' | 'lxc';
  /** The config file: `name`, `description`, `lock`, `template`, disks... */
  config: Record<string, string>;
  /** Changes written while the VM ran that wait for its next start (null deletes). */
  pending: Record<string, string | null> = {};
  /** Whether its QEMU process runs. */
  status: 'running' | 'stopped' = 'stopped';
  /** QEMU's own state: `running`, `paused`, `prelaunch`, ... (`stopped` when not running). */
  qmpstatus = 'stopped';
  /** When QEMU was started. */
  startedAt = 0;
  /** QEMU was started with the guest agent's channel (the config's agent enabled then). */
  agentChannel = false;
  /** The agent service inside the guest: `up` once booted, or `down` (not installed, crashed). */
  guestAgent: 'up' | 'down' = 'up';
  /** What the agent reports: an IPv4 on eth0, or none yet. */
  guestNet: 'ip' | 'no-ipv4' = 'ip';
  /** The IPv4 the agent reports. */
  ip: string;
  /** The guest's agent and files (a clone's guest starts without files of its own). */
  readonly guest = new GuestAgentModel();
  /** pvestatd's last report; none for a VM it has not seen yet. */
  stats: Stats | undefined;

  constructor(init: {
    vmid: number;
    node: string;
    type?: 'qemu' | 'lxc' | undefined;
    config: Record<string, string>;
  }) {
    this.vmid = init.vmid;
    this.node = init.node;
    this.type = init.type ?? 'qemu';
    this.config = init.config;
    this.ip = `10.4.${Math.floor(init.vmid / 250) % 250}.${(init.vmid % 250) + 2}`;
  }

  /** The config's name. */
  get name(): string | undefined {
    return this.config.name;
  }
  set name(v: string | undefined) {
    if (v === undefined) delete this.config.name;
    else this.config.name = v;
  }
  /** The config's lock (`clone`, `backup`, `suspended`, `destroyed`...). */
  get lock(): string | undefined {
    return this.config.lock;
  }
  set lock(v: string | undefined) {
    if (v === undefined) delete this.config.lock;
    else this.config.lock = v;
  }
  get template(): boolean {
    return this.config.template === '1';
  }
}

export interface ModelTask {
  readonly upid: string;
  readonly node: string;
  readonly type: TaskType;
  readonly vmid: number | undefined;
  readonly submittedAt: number;
  /** The VM whose lock file the task takes (none for storage tasks). */
  readonly lockVmid: number | undefined;
  readonly duration: number;
  state: 'waiting' | 'running' | 'stopped';
  startedAt: number;
  held: boolean;
  exitstatus?: string;
  /** Runs once the task holds its lock. */
  begin: () => void;
  /** Runs at the end; returns the exit status (a thrown error's message fails it). */
  finish: () => string;
}

/**
 * How an answer is made unreadable (`injectMalformed`): `data` null, the
 * wrong container (`{}` where a list belongs, `[]` where an object does),
 * a 200 that is not JSON, or a body without `data`.
 */
export type MalformedKind = 'null-data' | 'wrong-shape' | 'not-json' | 'no-data';

const MALFORMED_KINDS: readonly MalformedKind[] = [
  'null-data',
  'wrong-shape',
  'not-json',
  'no-data',
];

/**
 * Hostile answers the HTTPS fake can give instead of the real one, the
 * request having been carried out: a reverse proxy's HTML 502, a body cut
 * short, a body dripped slower than any timeout.
 */
export type HostileKind = 'html-502' | 'truncated' | 'slow-loris';

/** What a call learns when it reaches the server. */
export interface Ticket {
  /** Set when this call's answer is to be unreadable. */
  readonly malformed: MalformedKind | undefined;
  /** Set when this call's answer is to be hostile (HTTPS only). */
  readonly hostile: HostileKind | undefined;
}

export interface StorageModel {
  /** `dir` keeps files (ISOs); `lvmthin` keeps VM disks. */
  type: 'dir' | 'lvmthin';
  active: number;
  content: string;
  avail: number;
  total: number;
  shared: number;
}

/** The disk volumes a VM config names (not CD-ROMs, not `none`), with `unusedN`. */
export function diskVolumes(config: Readonly<Record<string, string>>): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(config)) {
    if (!/^(scsi|virtio|sata|ide|efidisk|tpmstate|unused)\d+$/.test(k)) continue;
    if (/(^|,)media=cdrom(,|$)/.test(v)) continue;
    const volid = v.split(',')[0] ?? '';
    if (/^[^:]+:.+/.test(volid)) out.push(volid);
  }
  return out;
}

const DRIVE_RE = /^(scsi|virtio|sata|ide)\d+$/;

/** A MAC address with Proxmox's default prefix. */
function randomMac(): string {
  const b = randomBytes(3);
  return `BC:24:11:${[...b].map((x) => x.toString(16).toUpperCase().padStart(2, '0')).join(':')}`;
}

const NIC_MODELS = [
  'e1000',
  'e1000e',
  'rtl8139',
  'virtio',
  'vmxnet3',
  'ne2k_pci',
  'pcnet',
  'i82551',
  'i82557b',
  'i82559er',
  'ne2k_isa',
];

/**
 * Reads and writes a NIC the way qemu-server does: the model and MAC first
 * (a MAC made up when there is none), then the other options sorted.
 * Throws a message for a value it cannot read.
 */
export function normaliseNet(value: string, keepMac?: string): string {
  const opts: Record<string, string> = {};
  let model: string | undefined;
  let mac: string | undefined;
  for (const part of value.split(',')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const k = eq < 0 ? part : part.slice(0, eq);
    const v = eq < 0 ? undefined : part.slice(eq + 1);
    if (NIC_MODELS.includes(k)) {
      model = k;
      if (v !== undefined) mac = v;
    } else if (k === 'model' && v !== undefined) model = v;
    else if (k === 'macaddr' && v !== undefined) mac = v;
    else if (
      [
        'bridge',
        'firewall',
        'link_down',
        'mtu',
        'queues',
        'rate',
        'tag',
        'trunks',
        'host-tunnel',
      ].includes(k) &&
      v !== undefined
    ) {
      opts[k] = v;
    } else
      throw new Error(
        `invalid format - format error\n${k}: property is not defined in schema and the schema does not allow additional properties\n`,
      );
  }
  if (model === undefined)
    throw new Error(
      'invalid format - format error\nmodel: property is missing and it is not optional\n',
    );
  if (
    opts.tag !== undefined &&
    (!/^\d+$/.test(opts.tag) || Number(opts.tag) < 1 || Number(opts.tag) > 4094)
  ) {
    throw new Error(
      `invalid format - format error\ntag: value must have a maximum value of 4094\n`,
    );
  }
  const m = mac ?? keepMac ?? randomMac();
  const rest = Object.keys(opts)
    .sort()
    .map((k) => `${k}=${opts[k]}`);
  return [`${model}=${m}`, ...rest].join(',');
}

let pid = 0x3a000;

/** The model. Endpoints are called by pve-api.ts with checked parameters. */
export class PveModel {
  readonly vms = new Map<number, ModelVm>();
  readonly tasks = new Map<string, ModelTask>();
  /** ISO files by `node/storage/filename`. */
  readonly isos = new Map<string, Uint8Array>();
  /** Disk volumes (`storage:vm-<vmid>-disk-<n>`), the VMID that owns each and its size in bytes. */
  readonly volumes = new Map<string, { owner: number; size: number }>();
  /** Storages by `node/storage`. */
  readonly storages = new Map<string, StorageModel>();
  /** Backup jobs by id: the VMIDs each names. A destroy with `purge=1` takes a VMID out. */
  readonly backupJobs = new Map<string, Set<number>>();
  readonly nodes: string[];
  /** Calls by endpoint name, in order. */
  readonly calls: string[] = [];
  /** Requests as sent: `METHOD /api2/json/path?query`, in order. */
  readonly requests: string[] = [];
  timing: Timing;
  /** The token line the API accepts (`user@realm!id=secret`). */
  acceptedToken: string;
  /** When set, a rejected token is echoed in the 401 body (a careless proxy in front). */
  echoRejectedToken = false;
  /** Endpoint name to the privilege path a 403 names (`/storage/x, Datastore.Allocate`). */
  readonly forbidden = new Map<string, string>();
  /** Nodes pveproxy cannot reach (595). */
  readonly unreachableNodes = new Set<string>();
  /** Nodes whose connection from pveproxy breaks mid-request (596). */
  readonly brokenNodes = new Set<string>();
  /** Extra delay for requests about a node, in ms. */
  readonly nodeDelay = new Map<string, number>();
  /** Next exit status per task type, e.g. `qmstart` -> `WARNINGS: 1`. */
  readonly nextExit = new Map<string, string>();
  #gates: { after: number; g: HarnessGate }[] = [];
  #callGates: { call: string; g: HarnessGate }[] = [];
  #malformed = 0;
  #pendingMalformed = false;
  #pendingHostile: { kind: HostileKind; call: string | undefined } | undefined;
  #statsAt = Date.now();
  #taskHolds: { match: (t: ModelTask) => boolean; g: HarnessGate }[] = [];

  constructor(opts: {
    nodes?: string[] | undefined;
    token: string;
    timing?: Partial<Timing> | undefined;
  }) {
    this.nodes = opts.nodes ?? ['pv1-1'];
    this.timing = { ...REALISTIC_TIMING, ...opts.timing };
    this.acceptedToken = opts.token;
    for (const n of this.nodes) {
      this.storages.set(`${n}/proxy-seeds`, {
        type: 'dir',
        active: 1,
        content: 'iso',
        avail: 40 * 2 ** 30,
        total: 50 * 2 ** 30,
        shared: 0,
      });
      this.storages.set(`${n}/local-lvm`, {
        type: 'lvmthin',
        active: 1,
        content: 'images,rootdir',
        avail: 400 * 2 ** 30,
        total: 500 * 2 ** 30,
        shared: 0,
      });
    }
  }

  /** Changes the timing (tasks already submitted keep theirs). */
  setTiming(t: Partial<Timing>): void {
    this.timing = { ...this.timing, ...t };
  }

  // ------------------------------------------------------------ controls

  /** Blocks calls after `skip` more calls, until released. */
  blockCalls(skip: number): Gate {
    const g = createGate();
    this.#gates.push({ after: this.calls.length + skip, g });
    return g;
  }

  /** Holds the next call of `call` (a seam method's name) once it has reached the server, until released. */
  blockNext(call: string): Gate {
    const g = createGate();
    this.#callGates.push({ call, g });
    return g;
  }

  /** Makes the next call's answer unreadable, a different way each time (see {@link MalformedKind}). */
  malformNext(): void {
    this.#pendingMalformed = true;
  }

  /**
   * Makes the next call's answer (of `call`, when given) hostile: the HTTPS
   * fake sends it instead of the real one, the request carried out.
   */
  hostileNext(kind: HostileKind, call?: string): void {
    this.#pendingHostile = { kind, call };
  }

  /**
   * Counts a call that reached the server and waits at any gate that holds
   * it. The server carries a call out once it has reached it, whether or
   * not its client is still waiting.
   */
  async enter(call: string, request: string): Promise<Ticket> {
    const index = this.calls.length;
    this.calls.push(call);
    this.requests.push(request);
    let malformed: MalformedKind | undefined;
    if (this.#pendingMalformed) {
      this.#pendingMalformed = false;
      malformed = MALFORMED_KINDS[this.#malformed++ % MALFORMED_KINDS.length];
    }
    let hostile: HostileKind | undefined;
    const h = this.#pendingHostile;
    if (h !== undefined && (h.call === undefined || h.call === call)) {
      hostile = h.kind;
      this.#pendingHostile = undefined;
    }
    for (const { after, g } of this.#gates) {
      if (index >= after) {
        g.reach();
        await g.released;
      }
    }
    const held = this.#callGates.find((h) => h.call === call);
    if (held !== undefined) {
      this.#callGates.splice(this.#callGates.indexOf(held), 1);
      held.g.reach();
      await held.g.released;
    }
    if (this.timing.requestMs > 0) await delay(this.timing.requestMs);
    return { malformed, hostile };
  }

  /** Holds the next task of `type` (for `vmid`, if given) running until released. */
  holdNextTask(type: TaskType, vmid?: number): Gate {
    const g = createGate();
    this.#taskHolds.push({
      match: (t) => t.type === type && (vmid === undefined || t.vmid === vmid),
      g,
    });
    return g;
  }

  /**
   * Adds a VM directly, as if it had existed for a while (a template, a
   * hand-made VM, a planted one): pvestatd has reported it.
   */
  addVm(init: {
    vmid: number;
    node?: string;
    type?: 'qemu' | 'lxc';
    name?: string | undefined;
    config?: Record<string, string>;
    status?: 'running' | 'stopped';
    qmpstatus?: string;
    lock?: string;
    template?: boolean;
  }): ModelVm {
    const config = { ...init.config };
    if (init.name !== undefined && config.name === undefined) config.name = init.name;
    if (init.template === true) config.template = '1';
    if (init.lock !== undefined) config.lock = init.lock;
    const vm = new ModelVm({
      vmid: init.vmid,
      node: init.node ?? (this.nodes[0] as string),
      type: init.type,
      config,
    });
    if (init.status === 'running') {
      vm.status = 'running';
      vm.qmpstatus = init.qmpstatus ?? 'running';
      vm.startedAt = Date.now() - this.timing.agentBootMs - 60_000;
      vm.agentChannel = agentEnabled(config.agent);
    }
    this.vms.set(vm.vmid, vm);
    for (const volid of diskVolumes(config)) {
      if (!this.volumes.has(volid))
        this.volumes.set(volid, { owner: vm.vmid, size: driveSize(config, volid) });
    }
    vm.stats = this.#statsOf(vm);
    return vm;
  }

  /** Adds a template VM the way an admin prepares one. */
  addTemplate(vmid: number, config: Record<string, string> = {}): ModelVm {
    return this.addVm({
      vmid,
      name: `tpl-${vmid}`,
      template: true,
      config: {
        boot: 'order=scsi0',
        scsi0: `local-lvm:base-${vmid}-disk-0,size=3G`,
        net0: 'virtio=BC:24:11:00:00:01,bridge=vmbr0,firewall=1',
        agent: '1',
        cores: '1',
        memory: '1024',
        ostype: 'l26',
        scsihw: 'virtio-scsi-single',
        ...config,
      },
    });
  }

  /**
   * A disk of `vmid` that its config does not name (left by an earlier VM at
   * that VMID, or by an interrupted disk move): only a destroy with
   * `destroy-unreferenced-disks=1` removes it.
   */
  addOrphanDisk(vmid: number, node?: string): string {
    const at = node ?? this.vms.get(vmid)?.node ?? (this.nodes[0] as string);
    void at;
    const volid = this.#freeVolid('local-lvm', vmid);
    this.volumes.set(volid, { owner: vmid, size: 2 ** 30 });
    return volid;
  }

  /**
   * Clones the template onto `newid` at once, as a Create's clone step
   * leaves it: named, marked by `description`, unlocked, stopped, with its
   * own disks, not yet configured or started; pvestatd has not seen it.
   */
  cloneNow(template: number, newid: number, name: string, description: string): ModelVm {
    const tpl = this.vms.get(template);
    if (tpl === undefined) throw new Error(`no template ${template}`);
    const upid = this.clone(tpl.node, template, { newid, name, description, full: true });
    const t = this.tasks.get(upid) as ModelTask;
    if (t.state === 'running') this.#finishTask(t);
    return this.vms.get(newid) as ModelVm;
  }

  /** Removes a VM and the disks it owns, as if destroyed outside any task. */
  removeVm(vmid: number): void {
    this.vms.delete(vmid);
    for (const [volid, v] of this.volumes) if (v.owner === vmid) this.volumes.delete(volid);
  }

  /** Secondary resources: seed ISOs, disks no template owns, and VMIDs left in backup jobs. */
  secondaryCount(): number {
    this.tick();
    let disks = 0;
    for (const v of this.volumes.values()) if (this.vms.get(v.owner)?.template !== true) disks++;
    let jobRefs = 0;
    for (const ids of this.backupJobs.values())
      for (const id of ids) if (!this.vms.has(id)) jobRefs++;
    return this.isos.size + disks + jobRefs;
  }

  /** The guest VMs (not templates), after letting time pass. */
  guests(): ModelVm[] {
    this.tick();
    return [...this.vms.values()].filter((v) => !v.template);
  }

  /** The VM with `name` in its config (qemu, not a template), if any. */
  byName(name: string): ModelVm | undefined {
    this.tick();
    return [...this.vms.values()].find((v) => v.name === name && !v.template);
  }

  /** The VM at `vmid`, after letting time pass. */
  vm(vmid: number): ModelVm | undefined {
    this.tick();
    return this.vms.get(vmid);
  }

  /**
   * Copies this cluster (VMs, disks, ISOs, storages, backup jobs; not tasks,
   * controls or calls) into `target`, replacing what it had: a state several
   * tests start from.
   */
  copyInto(target: PveModel): void {
    this.tick();
    target.vms.clear();
    for (const vm of this.vms.values()) {
      const c = new ModelVm({
        vmid: vm.vmid,
        node: vm.node,
        type: vm.type,
        config: { ...vm.config },
      });
      c.pending = { ...vm.pending };
      c.status = vm.status;
      c.qmpstatus = vm.qmpstatus;
      c.startedAt = vm.startedAt;
      c.agentChannel = vm.agentChannel;
      c.guestAgent = vm.guestAgent;
      c.guestNet = vm.guestNet;
      c.ip = vm.ip;
      c.stats = vm.stats === undefined ? undefined : { ...vm.stats };
      target.vms.set(c.vmid, c);
    }
    target.volumes.clear();
    for (const [k, v] of this.volumes) target.volumes.set(k, { ...v });
    target.isos.clear();
    for (const [k, v] of this.isos) target.isos.set(k, v.slice());
    target.storages.clear();
    for (const [k, v] of this.storages) target.storages.set(k, { ...v });
    target.backupJobs.clear();
    for (const [k, v] of this.backupJobs) target.backupJobs.set(k, new Set(v));
  }

  /** Lets pvestatd report every VM now. */
  refreshStats(): void {
    for (const vm of this.vms.values()) vm.stats = this.#statsOf(vm);
    this.#statsAt = Date.now();
  }

  /** Waits until no task runs or waits (held tasks aside), at most `ms`. */
  async settle(ms = 30_000): Promise<void> {
    const end = Date.now() + ms;
    for (;;) {
      this.tick();
      if (![...this.tasks.values()].some((t) => t.state !== 'stopped' && !t.held)) return;
      if (Date.now() > end) throw new Error('tasks still running');
      await delay(10);
    }
  }

  // ------------------------------------------------------------ tasks

  /** Moves time on: starts tasks whose lock is free, ends tasks whose time has come. */
  tick(): void {
    const now = Date.now();
    for (let changed = true; changed; ) {
      changed = false;
      for (const t of this.tasks.values()) {
        if (t.state === 'running' && !t.held && t.startedAt + t.duration <= now) {
          this.#finishTask(t);
          changed = true;
        }
      }
      for (const t of this.tasks.values()) {
        if (t.state !== 'waiting') continue;
        const free = this.#lockFreeAt(t);
        if (free === undefined) {
          if (now - t.submittedAt >= this.timing.lockTimeoutMs) {
            t.state = 'stopped';
            t.exitstatus = `can't lock file '/var/lock/qemu-server/lock-${t.lockVmid}.conf' - got timeout`;
            changed = true;
          }
          continue;
        }
        if (free - t.submittedAt >= this.timing.lockTimeoutMs) {
          t.state = 'stopped';
          t.exitstatus = `can't lock file '/var/lock/qemu-server/lock-${t.lockVmid}.conf' - got timeout`;
          changed = true;
          continue;
        }
        if (free <= now) {
          this.#startTask(t, free);
          changed = true;
        }
      }
    }
  }

  /** When the lock file `t` needs is free: now-ish, a running task's end, or undefined while held. */
  #lockFreeAt(t: ModelTask): number | undefined {
    if (t.lockVmid === undefined) return t.submittedAt;
    let free = t.submittedAt;
    for (const o of this.tasks.values()) {
      if (o === t || o.lockVmid !== t.lockVmid) continue;
      if (o.state === 'waiting' && o.submittedAt < t.submittedAt) return undefined;
      if (o.state !== 'running') continue;
      if (o.held) return undefined;
      free = Math.max(free, o.startedAt + o.duration);
    }
    return free;
  }

  #startTask(t: ModelTask, at: number): void {
    t.state = 'running';
    t.startedAt = at;
    try {
      t.begin();
    } catch (err) {
      t.state = 'stopped';
      t.exitstatus = err instanceof Error ? err.message : 'error';
      return;
    }
    const hold = this.#taskHolds.find((h) => h.match(t));
    if (hold !== undefined) {
      this.#taskHolds.splice(this.#taskHolds.indexOf(hold), 1);
      t.held = true;
      hold.g.reach();
      void hold.g.released.then(() => {
        t.held = false;
        t.startedAt = Date.now() - t.duration;
        this.tick();
      });
    }
  }

  #finishTask(t: ModelTask): void {
    t.state = 'stopped';
    try {
      t.exitstatus = t.finish();
    } catch (err) {
      t.exitstatus = err instanceof Error ? err.message : 'error';
    }
  }

  /** Whether a task holds `vmid`'s lock file now. */
  #lockHeld(vmid: number): boolean {
    this.tick();
    return [...this.tasks.values()].some((t) => t.lockVmid === vmid && t.state === 'running');
  }

  /** Waits for `vmid`'s lock file as a synchronous API call does; throws the timeout. */
  async #waitLock(vmid: number): Promise<void> {
    const end = Date.now() + this.timing.lockTimeoutMs;
    while (this.#lockHeld(vmid)) {
      if (Date.now() >= end) {
        throw new PveError(
          500,
          `can't lock file '/var/lock/qemu-server/lock-${vmid}.conf' - got timeout`,
        );
      }
      await delay(10);
    }
  }

  #task(
    node: string,
    type: TaskType,
    id: string,
    user: string,
    opts: { vmid?: number; lock?: boolean; begin?: () => void; finish: () => string },
  ): string {
    pid += 0x11;
    const hex = (n: number) => n.toString(16).toUpperCase().padStart(8, '0');
    const now = Date.now();
    const upid = `UPID:${node}:${hex(pid)}:${hex(pid * 7 + 0x1b3c4d5)}:${hex(Math.floor(now / 1000))}:${type}:${id}:${user}:`;
    let finish = opts.finish;
    const exit = this.nextExit.get(type);
    if (exit !== undefined) {
      this.nextExit.delete(type);
      // Warnings come from a task that did its work; any other exit status from one that did not.
      finish = /^WARNINGS: \d+$/.test(exit)
        ? () => {
            const r = opts.finish();
            return r === 'OK' ? exit : r;
          }
        : () => exit;
    }
    const t: ModelTask = {
      upid,
      node,
      type,
      vmid: opts.vmid,
      submittedAt: now,
      lockVmid: opts.lock === false ? undefined : opts.vmid,
      duration: this.timing.tasks[type],
      state: 'waiting',
      startedAt: 0,
      held: false,
      begin: opts.begin ?? (() => {}),
      finish,
    };
    this.tasks.set(upid, t);
    this.tick();
    return upid;
  }

  // ------------------------------------------------------------ checks

  /** Checks the token line; throws the 401 Proxmox gives. */
  authenticate(line: string | undefined): void {
    if (line === this.acceptedToken) return;
    if (line === undefined) throw answerError('error-401-no-ticket');
    if (this.echoRejectedToken) {
      // A careless proxy in front of pveproxy that puts the credential in its 401 body.
      throw new PveError(401, `authentication failure for token ${line}`);
    }
    throw answerError('error-401-token');
  }

  /** The user a task is run as: the token's id. */
  userOf(line: string | undefined): string {
    return (line ?? '').split('=')[0] || 'root@pam';
  }

  /** The checks every request about a node goes through: privileges, reachability. */
  check(call: string, node?: string): void {
    this.tick();
    const privilege = this.forbidden.get(call);
    if (privilege !== undefined) {
      throw new PveError(403, `Permission check failed (${privilege})`);
    }
    if (node !== undefined) {
      if (!this.nodes.includes(node)) throw answerError('error-500-no-such-node', { node });
      if (this.unreachableNodes.has(node)) throw answerError('error-595', { node });
      if (this.brokenNodes.has(node)) throw answerError('error-596', { node });
    }
  }

  #vm(node: string, vmid: number): ModelVm {
    const vm = this.vms.get(vmid);
    if (vm === undefined || vm.node !== node || vm.type !== 'qemu') {
      throw answerError('error-500-does-not-exist', { node, vmid });
    }
    return vm;
  }

  #taskVm(node: string, vmid: number): ModelVm {
    const vm = this.vms.get(vmid);
    if (vm === undefined || vm.node !== node || vm.type !== 'qemu') {
      throw new Error(`Configuration file 'nodes/${node}/qemu-server/${vmid}.conf' does not exist`);
    }
    return vm;
  }

  #statsOf(vm: ModelVm): Stats {
    const disk = bootSize(vm.config);
    return {
      name: vm.config.name ?? `VM ${vm.vmid}`,
      status: vm.status === 'running' ? vm.qmpstatus : 'stopped',
      template: vm.template ? 1 : 0,
      maxmem: Number(/\d+/.exec(vm.config.memory ?? '512')?.[0] ?? 512) * 2 ** 20,
      maxcpu: Number(vm.config.cores ?? '1') * Number(vm.config.sockets ?? '1'),
      maxdisk: disk,
      uptime: vm.status === 'running' ? Math.floor((Date.now() - vm.startedAt) / 1000) : 0,
    };
  }

  #freeVolid(storage: string, vmid: number): string {
    for (let n = 0; ; n++) {
      const volid = `${storage}:vm-${vmid}-disk-${n}`;
      if (!this.volumes.has(volid)) return volid;
    }
  }

  // ------------------------------------------------------------ endpoints

  version(): Record<string, unknown> {
    this.check('version');
    return { release: '9.2', repoid: '49318c671b82f31e', version: '9.2.20' };
  }

  nodeStatus(node: string): Record<string, unknown> {
    this.check('nodeStatus', node);
    return {
      kversion: 'Linux 7.0.14-17-pve #1 SMP PREEMPT_DYNAMIC PMX 7.0.14-17',
      pveversion: 'pve-manager/9.2.20/49318c671b82f31e',
      uptime: 123456,
    };
  }

  storageStatus(node: string, storage: string): Record<string, unknown> {
    this.check('storageStatus', node);
    const s = this.storages.get(`${node}/${storage}`);
    if (s === undefined) throw answerError('error-400-no-such-storage', { node, storage });
    return {
      active: s.active,
      avail: s.avail,
      content: s.content,
      enabled: 1,
      shared: s.shared,
      total: s.total,
      type: s.type,
      used: s.total - s.avail,
    };
  }

  /** `GET /nodes/{node}/storage`: the node's storages, those with `content` when given. */
  storageList(node: string, content: string | undefined): Record<string, unknown>[] {
    this.check('storageList', node);
    const out: Record<string, unknown>[] = [];
    for (const [key, st] of this.storages) {
      const [n, storage] = key.split('/') as [string, string];
      if (n !== node) continue;
      if (content !== undefined && !st.content.split(',').includes(content)) continue;
      out.push({
        storage,
        type: st.type,
        content: st.content,
        active: st.active,
        enabled: 1,
        shared: st.shared,
        avail: st.avail,
        total: st.total,
        used: st.total - st.avail,
      });
    }
    return out;
  }

  /** `GET /nodes/{node}/storage/{storage}/content`: its ISOs and disks, of `vmid` when given. */
  storageContent(
    node: string,
    storage: string,
    content: string | undefined,
    vmid: number | undefined,
  ): Record<string, unknown>[] {
    this.check('storageContent', node);
    if (!this.storages.has(`${node}/${storage}`)) {
      throw answerError('error-400-no-such-storage', { node, storage });
    }
    const out: Record<string, unknown>[] = [];
    if ((content === undefined || content === 'iso') && vmid === undefined) {
      for (const [key, data] of this.isos) {
        const [n, s, file] = key.split('/') as [string, string, string];
        if (n === node && s === storage) {
          out.push({
            volid: `${storage}:iso/${file}`,
            content: 'iso',
            format: 'iso',
            size: data.byteLength,
          });
        }
      }
    }
    if (content === undefined || content === 'images') {
      for (const [volid, v] of this.volumes) {
        if (volid.split(':')[0] !== storage || (vmid !== undefined && v.owner !== vmid)) continue;
        out.push({ volid, content: 'images', format: 'raw', size: v.size, vmid: v.owner });
      }
    }
    return out.sort((a, b) => String(a.volid).localeCompare(String(b.volid)));
  }

  /**
   * `GET /cluster/resources`: every guest the cluster knows, with name,
   * status and template from pvestatd's last round (a VM it has not seen
   * yet is `unknown` and nameless; a VM on a node that does not answer is
   * `unknown`), lock and tags from the config as it is now. Without a type,
   * nodes and storages too.
   */
  clusterResources(type: string | undefined): Record<string, unknown>[] {
    this.check('clusterResources');
    if (Date.now() - this.#statsAt >= this.timing.statsIntervalMs) this.refreshStats();
    const out: Record<string, unknown>[] = [];
    if (type === undefined || type === 'vm') {
      for (const vm of [...this.vms.values()].sort((a, b) => a.vmid - b.vmid)) {
        const e: Record<string, unknown> = {
          id: `${vm.type}/${vm.vmid}`,
          vmid: vm.vmid,
          node: vm.node,
          type: vm.type,
          status: 'unknown',
        };
        const s = this.unreachableNodes.has(vm.node) ? undefined : vm.stats;
        if (s !== undefined) {
          Object.assign(e, {
            uptime: s.uptime,
            name: s.name,
            status: s.status,
            template: s.template,
            maxcpu: s.maxcpu,
            cpu: 0,
            maxmem: s.maxmem,
            mem: 0,
            maxdisk: s.maxdisk,
            disk: 0,
            netin: 0,
            netout: 0,
            diskread: 0,
            diskwrite: 0,
          });
        }
        if (vm.config.lock !== undefined) e.lock = vm.config.lock;
        if (vm.config.tags !== undefined) e.tags = vm.config.tags;
        out.push(e);
      }
    }
    if (type === undefined || type === 'node') {
      for (const node of this.nodes) {
        out.push({
          id: `node/${node}`,
          type: 'node',
          node,
          status: this.unreachableNodes.has(node) ? 'offline' : 'online',
          maxcpu: 8,
          maxmem: 32 * 2 ** 30,
          level: '',
        });
      }
    }
    if (type === undefined || type === 'storage') {
      for (const [key, s] of this.storages) {
        const [node, storage] = key.split('/') as [string, string];
        out.push({
          id: `storage/${node}/${storage}`,
          type: 'storage',
          node,
          storage,
          status: 'available',
          content: s.content,
          plugintype: s.type,
          shared: s.shared,
          maxdisk: s.total,
          disk: s.total - s.avail,
        });
      }
    }
    return out;
  }

  /** `GET .../config`: the config with its pending changes applied. */
  vmConfig(node: string, vmid: number): Record<string, string | number> {
    this.check('vmConfig', node);
    const vm = this.#vm(node, vmid);
    const cfg: Record<string, string> = { ...vm.config };
    for (const [k, v] of Object.entries(vm.pending)) {
      if (v === null) delete cfg[k];
      else cfg[k] = v;
    }
    const out: Record<string, string | number> = { ...cfg, digest: digestOf(cfg) };
    // Proxmox sends numbers for integer and boolean options.
    for (const k of ['cores', 'sockets', 'template', 'onboot', 'protection', 'numa', 'balloon']) {
      const v = out[k];
      if (typeof v === 'string' && /^\d+$/.test(v)) out[k] = Number(v);
    }
    return out;
  }

  /**
   * `PUT .../config`: the early lock check, then the lock file, then the
   * write: deletes (`delete`), new values (a NIC normalised, a MAC made
   * for one without), `ide2` added to the boot order. While the VM runs,
   * what cannot be changed live waits as pending.
   */
  async setVmConfig(
    node: string,
    vmid: number,
    params: Record<string, string>,
    deletes: readonly string[],
  ): Promise<null> {
    this.check('setVmConfig', node);
    let vm = this.#vm(node, vmid);
    if (vm.lock !== undefined) throw answerError('error-500-locked', { node, vmid, lock: vm.lock });
    if (deletes.length === 0 && Object.keys(params).length === 0) {
      throw new PveError(500, 'no options specified');
    }
    const values: Record<string, string> = {};
    for (const [k, v] of Object.entries(params)) {
      if (/^net\d+$/.test(k)) {
        values[k] = normaliseNet(v);
      } else values[k] = k === 'tags' ? v.toLowerCase() : v;
    }
    await this.#waitLock(vmid);
    vm = this.#vm(node, vmid);
    if (vm.lock !== undefined) throw answerError('error-500-locked', { node, vmid, lock: vm.lock });
    const live = new Set([
      'name',
      'description',
      'tags',
      'onboot',
      'protection',
      'boot',
      'ide2',
      'net0',
      'net1',
    ]);
    const put = (k: string, v: string | null) => {
      if (vm.status === 'running' && !live.has(k)) {
        vm.pending[k] = v;
      } else if (v === null) delete vm.config[k];
      else vm.config[k] = v;
    };
    for (const k of deletes) {
      if (vm.config[k] === undefined && vm.pending[k] === undefined) continue; // PVE warns and goes on
      put(k, null);
    }
    for (const [k, v] of Object.entries(values)) put(k, v);
    if (values.ide2 !== undefined && vm.config.boot?.startsWith('order=') === true) {
      const order = vm.config.boot.slice('order='.length).split(';');
      if (!order.includes('ide2')) vm.config.boot = `order=${[...order, 'ide2'].join(';')}`;
    }
    return null;
  }

  /**
   * `POST .../clone`: the early checks (the new VMID free, the source not
   * locked, the storage fit for disks), then a task that writes the
   * temporary config (`lock: clone`, no name), copies the disks and writes
   * the whole config, with a new MAC; a clone to another node moves there
   * at the end. A linked clone (`full` off, from a template) keeps its disks
   * on the template's base volumes.
   */
  clone(
    node: string,
    vmid: number,
    p: {
      newid: number;
      name?: string | undefined;
      description?: string | undefined;
      full?: boolean | undefined;
      storage?: string | undefined;
      target?: string | undefined;
    },
    user = 'root@pam',
  ): string {
    this.check('clone', node);
    const target = p.target === undefined || p.target === node ? undefined : p.target;
    if (target !== undefined && !this.nodes.includes(target)) {
      throw new PveError(500, `no such cluster node '${target}'`);
    }
    if (p.storage !== undefined) {
      const s = this.storages.get(`${node}/${p.storage}`);
      if (s === undefined) throw new PveError(500, `storage '${p.storage}' does not exist`);
      if (!s.content.split(',').includes('images')) {
        throw paramError({ storage: `storage '${p.storage}' does not support vm images` });
      }
      if (target !== undefined && s.shared !== 1) {
        throw new PveError(500, `can't clone to non-shared storage '${p.storage}'`);
      }
    }
    const src = this.#vm(node, vmid);
    if (src.lock !== undefined)
      throw answerError('error-500-locked', { node, vmid, lock: src.lock });
    const full = p.full ?? !src.template;
    if (!full && p.storage !== undefined) {
      throw new PveError(500, "parameter 'storage' not allowed for linked clones");
    }
    if (target !== undefined) {
      const local = diskVolumes(src.config).some(
        (v) => this.storages.get(`${node}/${v.split(':')[0]}`)?.shared !== 1,
      );
      if (local)
        throw new PveError(500, `can't clone VM to node '${target}' (VM uses local storage)`);
    }
    const newid = p.newid;
    if (this.vms.has(newid)) throw answerError('error-500-config-exists', { vmid: newid });
    const tplConfig = { ...src.config };
    let vm: ModelVm | undefined;
    const newVolumes: string[] = [];
    return this.#task(node, 'qmclone', String(vmid), user, {
      vmid: newid,
      begin: () => {
        if (this.vms.has(newid))
          throw new Error(`unable to create VM ${newid}: config file already exists`);
        // The temporary config: the VMID is taken, the VM has no name yet.
        vm = new ModelVm({ vmid: newid, node, config: { lock: 'clone' } });
        this.vms.set(newid, vm);
        for (const [k, v] of Object.entries(tplConfig)) {
          if (!DRIVE_RE.test(k) && !/^(efidisk|tpmstate)\d+$/.test(k)) continue;
          if (/(^|,)media=cdrom(,|$)/.test(v)) continue;
          const storage = p.storage ?? (v.split(':')[0] as string);
          const volid = full
            ? this.#freeVolid(storage, newid)
            : `${v.split(',')[0]}/vm-${newid}-disk-0`;
          this.volumes.set(volid, {
            owner: newid,
            size: driveSize(tplConfig, v.split(',')[0] as string),
          });
          newVolumes.push(`${k}=${volid}`);
        }
      },
      finish: () => {
        const cur = this.vms.get(newid);
        if (cur !== vm || vm === undefined) throw new Error(`clone failed: VM ${newid} vanished`);
        const config: Record<string, string> = {};
        for (const [k, v] of Object.entries(tplConfig)) {
          if (['template', 'lock', 'snapshots', 'parent', 'vmstate', 'snaptime'].includes(k))
            continue;
          if (/^unused\d+$/.test(k)) continue;
          config[k] = /^net\d+$/.test(k)
            ? normaliseNet(v.replace(/=([0-9A-Fa-f]{2}:){5}[0-9A-Fa-f]{2}/, ''), randomMac())
            : v;
        }
        for (const nv of newVolumes) {
          const [k, volid] = nv.split('=') as [string, string];
          const opts = (tplConfig[k] ?? '').split(',').slice(1);
          config[k] = [volid, ...opts].join(',');
        }
        config.name = p.name ?? `Copy-of-VM-${tplConfig.name ?? vmid}`;
        if (p.description !== undefined && p.description !== '') config.description = p.description;
        config.smbios1 = `uuid=${crypto.randomUUID()}`;
        vm.config = config;
        if (target !== undefined) vm.node = target;
        return 'OK';
      },
    });
  }

  /** `PUT .../resize`: a task that grows a disk to an absolute size (`8G`) or by `+n`. */
  resize(node: string, vmid: number, disk: string, size: string, user = 'root@pam'): string {
    this.check('resize', node);
    return this.#task(node, 'resize', String(vmid), user, {
      vmid,
      finish: () => {
        const vm = this.#taskVm(node, vmid);
        if (vm.lock !== undefined) return `VM is locked (${vm.lock})`;
        const value = vm.config[disk];
        if (value === undefined) return `disk '${disk}' does not exist`;
        if (/(^|,)media=cdrom(,|$)/.test(value)) return "you can't resize a cdrom";
        const volid = value.split(',')[0] as string;
        const vol = this.volumes.get(volid);
        if (vol === undefined) return `Could not determine current size of volume '${volid}'`;
        const m = /^(\+)?(\d+(?:\.\d+)?)([KMGT])?$/.exec(size);
        if (m === null) return 'internal error';
        const unit = { K: 2 ** 10, M: 2 ** 20, G: 2 ** 30, T: 2 ** 40, '': 1 }[
          m[3] ?? ''
        ] as number;
        let bytes = Math.floor(Number(m[2]) * unit);
        if (m[1] === '+') bytes += vol.size;
        if (bytes < vol.size) return 'shrinking disks is not supported';
        vol.size = bytes;
        vm.config[disk] = [
          volid,
          ...value
            .split(',')
            .slice(1)
            .filter((o) => !o.startsWith('size=')),
          `size=${formatSize(bytes)}`,
        ].join(',');
        return 'OK';
      },
    });
  }

  /**
   * `POST .../status/start`: a task that takes the VM's lock file (waiting
   * behind a clone), refuses a template, a locked VM or one that runs,
   * needs its ISO, then runs it with its pending changes applied.
   */
  start(node: string, vmid: number, user = 'root@pam'): string {
    this.check('start', node);
    return this.#task(node, 'qmstart', String(vmid), user, {
      vmid,
      finish: () => {
        const vm = this.#taskVm(node, vmid);
        if (vm.template) return "you can't start a vm if it's a template";
        if (vm.lock !== undefined && vm.lock !== 'suspended') return `VM is locked (${vm.lock})`;
        if (vm.status === 'running') return `VM ${vmid} already running`;
        for (const [k, v] of Object.entries(vm.pending)) {
          if (v === null) delete vm.config[k];
          else vm.config[k] = v;
        }
        vm.pending = {};
        for (const [k, v] of Object.entries(vm.config)) {
          if (!DRIVE_RE.test(k)) continue;
          const volid = v.split(',')[0] as string;
          const iso = /^([^:]+):iso\/(.+)$/.exec(volid);
          if (iso !== null && !this.isos.has(`${node}/${iso[1]}/${iso[2]}`)) {
            return `volume '${volid}' does not exist`;
          }
          if (iso === null && /^[^:]+:.+/.test(volid) && !this.volumes.has(volid)) {
            return `volume '${volid}' does not exist`;
          }
        }
        vm.lock = undefined;
        vm.status = 'running';
        vm.qmpstatus = 'running';
        vm.startedAt = Date.now();
        vm.agentChannel = agentEnabled(vm.config.agent);
        return 'OK';
      },
    });
  }

  /** `POST .../status/stop`: a task; a VM that does not run is left as it is (OK). */
  stop(node: string, vmid: number, user = 'root@pam'): string {
    this.check('stop', node);
    return this.#task(node, 'qmstop', String(vmid), user, {
      vmid,
      finish: () => {
        const vm = this.vms.get(vmid);
        if (vm === undefined || vm.node !== node) {
          return `unable to find configuration file for VM ${vmid} on node '${node}'`;
        }
        if (vm.status !== 'running') return 'OK';
        if (vm.lock !== undefined) return `VM is locked (${vm.lock})`;
        vm.status = 'stopped';
        vm.qmpstatus = 'stopped';
        vm.agentChannel = false;
        return 'OK';
      },
    });
  }

  /** `GET .../status/current`. */
  vmStatus(node: string, vmid: number): Record<string, unknown> {
    this.check('vmStatus', node);
    const vm = this.#vm(node, vmid);
    const running = vm.status === 'running';
    const out: Record<string, unknown> = {
      vmid,
      name: vm.config.name ?? `VM ${vmid}`,
      status: vm.status,
      qmpstatus: running ? vm.qmpstatus : 'stopped',
      cpus: Number(vm.config.cores ?? '1'),
      maxmem: Number(/\d+/.exec(vm.config.memory ?? '512')?.[0] ?? 512) * 2 ** 20,
      uptime: running ? Math.floor((Date.now() - vm.startedAt) / 1000) : 0,
      ha: { managed: 0 },
    };
    if (running) out.pid = 4000 + (vmid % 1000);
    if (vm.template) out.template = 1;
    if (vm.lock !== undefined) out.lock = vm.lock;
    if (agentEnabled(vm.config.agent)) out.agent = 1;
    return out;
  }

  /**
   * `DELETE /nodes/{node}/qemu/{vmid}`: the early checks (the config is
   * there, the VM does not run), then a task that takes the lock file,
   * checks again, refuses a locked VM (a hibernated one is destroyed), frees
   * the disks the config names (and with `destroy-unreferenced-disks` every
   * other disk of the VMID), leaves `lock: destroyed` for a moment, takes
   * the VMID out of backup jobs with `purge`, and removes the config. The
   * listing keeps the VM until then; a second destroy waits for the first,
   * then finds nothing.
   */
  destroy(
    node: string,
    vmid: number,
    opts: { purge?: boolean | undefined; unreferencedDisks?: boolean | undefined },
    user = 'root@pam',
  ): string {
    this.check('destroy', node);
    const early = (vm: ModelVm) => {
      if (vm.status === 'running') throw answerError('error-500-destroy-running', { node, vmid });
    };
    early(this.#vm(node, vmid));
    return this.#task(node, 'qmdestroy', String(vmid), user, {
      vmid,
      finish: () => {
        const vm = this.#taskVm(node, vmid);
        if (vm.status === 'running') return `VM ${vmid} is running - destroy failed`;
        if (vm.lock !== undefined && vm.lock !== 'suspended') return `VM is locked (${vm.lock})`;
        const referenced = new Set(diskVolumes(vm.config));
        for (const [volid, v] of this.volumes) {
          if (v.owner === vmid && (referenced.has(volid) || opts.unreferencedDisks === true)) {
            this.volumes.delete(volid);
          }
        }
        vm.config = { lock: 'destroyed' };
        if (opts.purge === true) for (const ids of this.backupJobs.values()) ids.delete(vmid);
        this.vms.delete(vmid);
        return 'OK';
      },
    });
  }

  taskStatus(node: string, upid: string): Record<string, unknown> {
    this.check('taskStatus', node);
    const m =
      /^UPID:([a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?):([0-9A-Fa-f]{8}):([0-9A-Fa-f]{8,9}):([0-9A-Fa-f]{8}):([^:\s/]+):([^:\s/]*):([^:\s/]+):$/.exec(
        upid,
      );
    if (m === null) throw paramError({ upid: 'unable to parse worker upid' });
    const t = this.tasks.get(upid);
    if (t === undefined || t.node !== node) throw paramError({ upid: 'no such task' });
    const [user, tokenid] = (m[8] as string).split('!');
    const out: Record<string, unknown> = {
      upid,
      node: m[1],
      pid: Number.parseInt(m[3] as string, 16),
      pstart: Number.parseInt(m[4] as string, 16),
      starttime: Number.parseInt(m[5] as string, 16),
      type: m[6],
      id: m[7],
      user,
      status: t.state === 'stopped' ? 'stopped' : 'running',
    };
    if (tokenid !== undefined) out.tokenid = tokenid;
    if (t.state === 'stopped') out.exitstatus = t.exitstatus;
    return out;
  }

  /**
   * `GET .../agent/network-get-interfaces`, as qemu-server's agent checks
   * go: no `agent` key at all, then a VM that does not run, then an agent
   * that does not answer (disabled when QEMU started, not booted yet, or
   * not running in the guest).
   */
  agentNetworkInterfaces(node: string, vmid: number): { result: unknown[] } {
    this.check('agentNetworkInterfaces', node);
    const vm = this.#agentVm(node, vmid);
    const lo = {
      name: 'lo',
      'hardware-address': '00:00:00:00:00:00',
      'ip-addresses': [
        { 'ip-address-type': 'ipv4', 'ip-address': '127.0.0.1', prefix: 8 },
        { 'ip-address-type': 'ipv6', 'ip-address': '::1', prefix: 128 },
      ],
      statistics: { 'rx-bytes': 0, 'tx-bytes': 0 },
    };
    const mac = (
      /=(([0-9A-Fa-f]{2}:){5}[0-9A-Fa-f]{2})/.exec(vm.config.net0 ?? '')?.[1] ?? 'bc:24:11:00:00:01'
    ).toLowerCase();
    const eth = {
      name: 'eth0',
      'hardware-address': mac,
      'ip-addresses': [
        ...(vm.guestNet === 'ip'
          ? [{ 'ip-address-type': 'ipv4', 'ip-address': vm.ip, prefix: 24 }]
          : []),
        { 'ip-address-type': 'ipv6', 'ip-address': 'fe80::be24:11ff:fe00:1', prefix: 64 },
      ],
    };
    return { result: [lo, eth] };
  }

  /** qemu-server's assert_agent_available, in its order: the VM whose agent answers. */
  #agentVm(node: string, vmid: number): ModelVm {
    const vm = this.#vm(node, vmid);
    if (vm.config.agent === undefined)
      throw answerError('error-500-agent-not-configured', { node, vmid });
    if (vm.status !== 'running') throw answerError('error-500-vm-not-running', { node, vmid });
    const booted = Date.now() >= vm.startedAt + this.timing.agentBootMs;
    if (!vm.agentChannel || !booted || vm.guestAgent !== 'up' || vm.qmpstatus !== 'running') {
      throw answerError('error-500-agent-not-running', { node, vmid });
    }
    return vm;
  }

  /** One agent command, a refusal as agent_cmd's check_agent_error words it. */
  #agent(vm: ModelVm, execute: string, args: Record<string, unknown>): unknown {
    try {
      return vm.guest.run(execute, args);
    } catch (err) {
      if (err instanceof GuestAgentFailure) throw new PveError(500, `Agent error: ${err.desc}`);
      throw err;
    }
  }

  /** `POST .../agent/exec`: the first item is the program, the rest its arguments. */
  agentExec(node: string, vmid: number, command: readonly string[]): { pid: number } {
    this.check('agentExec', node);
    const vm = this.#agentVm(node, vmid);
    if (command.length === 0) throw new PveError(500, 'command or input-data (or both) required');
    const [path, ...arg] = command;
    return this.#agent(vm, 'guest-exec', { path, arg, 'capture-output': true }) as { pid: number };
  }

  /** `GET .../agent/exec-status`: booleans as 1 and 0, stderr and stdout decoded. */
  agentExecStatus(node: string, vmid: number, pid: number): Record<string, unknown> {
    this.check('agentExecStatus', node);
    const vm = this.#agentVm(node, vmid);
    const st = this.#agent(vm, 'guest-exec-status', { pid }) as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(st)) {
      if (typeof v === 'boolean') out[k] = v ? 1 : 0;
      else if ((k === 'err-data' || k === 'out-data') && typeof v === 'string') {
        out[k] = Buffer.from(v, 'base64').toString('utf8');
      } else out[k] = v;
    }
    return out;
  }

  /**
   * `POST .../agent/file-write`: the file opened `wb` (truncated, owner and
   * mode kept), the content written, the handle closed. With `encode` (the
   * default) Perl's encode_base64 takes the decoded text, so a character
   * past U+00FF dies and one from U+0080 goes in as one byte, not UTF-8.
   */
  agentFileWrite(node: string, vmid: number, file: string, content: string, encode: boolean): null {
    this.check('agentFileWrite', node);
    const vm = this.#agentVm(node, vmid);
    let b64 = content;
    if (encode) {
      if ([...content].some((ch) => (ch.codePointAt(0) ?? 0) > 0xff)) {
        throw new PveError(
          500,
          'Wide character in subroutine entry at /usr/share/perl5/PVE/API2/Qemu/Agent.pm line 624.',
        );
      }
      b64 = Buffer.from(content, 'latin1').toString('base64');
    }
    const handle = this.#agent(vm, 'guest-file-open', { path: file, mode: 'wb' });
    this.#agent(vm, 'guest-file-write', { handle, 'buf-b64': b64 });
    this.#agent(vm, 'guest-file-close', { handle });
    return null;
  }

  /**
   * `POST .../storage/{storage}/upload`, after pveproxy has taken the file:
   * the name must end in .iso or .img, the storage must take ISOs; a task
   * then copies it over any file of the same name.
   */
  uploadIso(
    node: string,
    storage: string,
    content: string,
    filename: string,
    data: Uint8Array,
    user = 'root@pam',
  ): string {
    this.check('uploadIso', node);
    const s = this.storages.get(`${node}/${storage}`);
    if (s === undefined) throw new PveError(500, `storage '${storage}' does not exist`);
    const name = filename.replace(/^.*[/\\]/, '').replace(/[^a-zA-Z0-9_.-]/g, '_');
    if (content === 'iso' && !/[^/]+\.(?:iso|img)$/i.test(name)) {
      throw answerError('error-400-upload-name', { node, storage });
    }
    if (!s.content.split(',').includes(content)) {
      throw new PveError(500, `storage '${storage}' does not support '${content}' content`);
    }
    return this.#task(node, 'imgcopy', '', user, {
      lock: false,
      finish: () => {
        this.isos.set(`${node}/${storage}/${name}`, data);
        return 'OK';
      },
    });
  }

  /** `DELETE .../storage/{storage}/content/{volume}`: a task; a missing file is still OK (F13). */
  deleteVolume(
    node: string,
    storage: string | undefined,
    volume: string,
    user = 'root@pam',
  ): string {
    this.check('deleteVolume', node);
    const volid = volume.includes(':') ? volume : `${storage}:${volume}`;
    const sid = volid.split(':')[0] as string;
    if (storage !== undefined && storage !== sid) {
      throw new PveError(500, `volume storage '${sid}' does not match storage '${storage}'`);
    }
    if (!this.storages.has(`${node}/${sid}`))
      throw new PveError(500, `storage '${sid}' does not exist`);
    const file = /^[^:]+:iso\/(.+)$/.exec(volid)?.[1];
    return this.#task(node, 'imgdel', sid, user, {
      lock: false,
      finish: () => {
        if (file !== undefined) this.isos.delete(`${node}/${sid}/${file}`);
        else this.volumes.delete(volid);
        return 'OK';
      },
    });
  }
}

/** Whether an `agent` value enables the agent (`1`, `enabled=1,...`). */
export function agentEnabled(value: string | undefined): boolean {
  if (value === undefined) return false;
  const first = value.split(',')[0] ?? '';
  const enabled = first.includes('=') ? /(?:^|,)enabled=([^,]*)/.exec(value)?.[1] : first;
  return enabled === '1';
}

function driveSize(config: Readonly<Record<string, string>>, volid: string): number {
  for (const v of Object.values(config)) {
    if (v.split(',')[0] !== volid) continue;
    const m = /(?:^|,)size=(\d+(?:\.\d+)?)([KMGT]?)(?:,|$)/.exec(v);
    if (m === null) break;
    const unit = { '': 1, K: 2 ** 10, M: 2 ** 20, G: 2 ** 30, T: 2 ** 40 }[m[2] as ''] as number;
    return Math.round(Number(m[1]) * unit);
  }
  return 2 ** 30;
}

function bootSize(config: Readonly<Record<string, string>>): number {
  const v = config.scsi0 ?? config.virtio0 ?? config.sata0 ?? config.ide0;
  return v === undefined ? 0 : driveSize(config, v.split(',')[0] as string);
}

/** A size as print_drive writes it: the largest whole unit. */
function formatSize(bytes: number): string {
  for (const [u, n] of [
    ['T', 2 ** 40],
    ['G', 2 ** 30],
    ['M', 2 ** 20],
    ['K', 2 ** 10],
  ] as const) {
    if (bytes % n === 0 && bytes >= n) return `${bytes / n}${u}`;
  }
  return String(bytes);
}

function digestOf(config: Readonly<Record<string, string>>): string {
  let h = 0x811c9dc5;
  for (const ch of JSON.stringify(Object.entries(config).sort())) {
    h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193) >>> 0;
  }
  return `${h.toString(16).padStart(8, '0')}${'0'.repeat(32)}`;
}
