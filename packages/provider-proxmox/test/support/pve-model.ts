// In-memory model of the parts of a Proxmox VE 9 cluster the provider uses.
// Both test doubles sit on it: the HTTPS fake (https-fake.ts) and the seam
// fake (fake-api.ts), so each behaviour is written once. Messages and shapes
// follow what a PVE 9.2 host answers.
import { createGate, type Gate, type HarnessGate } from '@proxy-op/providertest';

/** A failure as Proxmox answers it: status, message and (for a 400) field errors. */
export class PveError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly errors?: Record<string, string>,
    /** Sent as the reason phrase only, no body (a 401). */
    readonly noBody = false,
  ) {
    super(message);
  }
}

export type AgentMode = 'ip' | 'no-ipv4' | 'not-running' | 'not-configured';

export interface ModelVm {
  vmid: number;
  node: string;
  type: 'qemu' | 'lxc';
  /** Absent while a clone is in progress. */
  name?: string | undefined;
  template: boolean;
  /** As /cluster/resources lists it: paused VMs show as running. */
  status: 'running' | 'stopped';
  qmpstatus: string;
  lock?: string | undefined;
  config: Record<string, string>;
  agent: AgentMode;
  ip: string;
  tags?: string | undefined;
  /** Resources report status unknown (the node does not answer). */
  unknown?: boolean;
}

export interface ModelTask {
  upid: string;
  node: string;
  type: string;
  doneAt: number;
  held: boolean;
  done: boolean;
  exitstatus?: string;
  apply: () => string;
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

/** What a call learns when it reaches the server. */
export interface Ticket {
  /** Set when this call's answer is to be unreadable. */
  readonly malformed: MalformedKind | undefined;
}

export interface StorageModel {
  active: number;
  content: string;
  avail: number;
  total: number;
}

let pid = 0x1000;

/** The model. Every endpoint is a method; errors are {@link PveError}s. */
export class PveModel {
  readonly vms = new Map<number, ModelVm>();
  readonly tasks = new Map<string, ModelTask>();
  /** ISO files by `node/storage/filename`. */
  readonly isos = new Map<string, Uint8Array>();
  /** Disk volumes (`storage:vm-<vmid>-disk-<n>`) and the VMID that owns each. */
  readonly volumes = new Map<string, number>();
  /** Storages by `node/storage`. */
  readonly storages = new Map<string, StorageModel>();
  readonly nodes: string[];
  /** Calls by endpoint name, in order. */
  readonly calls: string[] = [];
  /** How long a task runs, in ms; 0 ends it at the first look. */
  taskMs = 0;
  /** The token line the API accepts (`user@realm!id=secret`). */
  acceptedToken: string;
  /** When set, a rejected token is echoed in the 401 body (a careless proxy). */
  echoRejectedToken = false;
  /** Endpoint name to the privilege a 403 names. */
  readonly forbidden = new Map<string, string>();
  /** Nodes pveproxy cannot reach (595). */
  readonly unreachableNodes = new Set<string>();
  /** Nodes whose connection from pveproxy breaks mid-answer (596). */
  readonly brokenNodes = new Set<string>();
  /** Extra delay for requests about a node, in ms. */
  readonly nodeDelay = new Map<string, number>();
  /** Next exit status per task type, e.g. `qmstart` -> `WARNINGS: 1`. */
  readonly nextExit = new Map<string, string>();
  #gates: { after: number; g: HarnessGate }[] = [];
  #malformed = 0;
  #pendingMalformed = false;
  #taskHolds: {
    match: (t: ModelTask, vmid: number | undefined) => boolean;
    vmid?: number;
    g: HarnessGate;
  }[] = [];

  constructor(opts: { nodes?: string[]; token: string; taskMs?: number }) {
    this.nodes = opts.nodes ?? ['pv1-1'];
    this.taskMs = opts.taskMs ?? 0;
    this.acceptedToken = opts.token;
    for (const n of this.nodes) {
      this.storages.set(`${n}/proxy-seeds`, {
        active: 1,
        content: 'iso',
        avail: 40 * 2 ** 30,
        total: 50 * 2 ** 30,
      });
      this.storages.set(`${n}/local-lvm`, {
        active: 1,
        content: 'images,rootdir',
        avail: 400 * 2 ** 30,
        total: 500 * 2 ** 30,
      });
    }
  }

  // ------------------------------------------------------------ controls

  /** Blocks calls after `skip` more calls, until released. */
  blockCalls(skip: number): Gate {
    const g = createGate();
    this.#gates.push({ after: this.calls.length + skip, g });
    return g;
  }

  /** Makes the next call's answer unreadable, a different way each time (see {@link MalformedKind}). */
  malformNext(): void {
    this.#pendingMalformed = true;
  }

  /**
   * Counts a call that reached the server and waits at any gate that holds
   * it. The server carries a held call out once the gate opens, whether or
   * not its client is still waiting.
   */
  async enter(call: string): Promise<Ticket> {
    const index = this.calls.length;
    this.calls.push(call);
    let malformed: MalformedKind | undefined;
    if (this.#pendingMalformed) {
      this.#pendingMalformed = false;
      malformed = MALFORMED_KINDS[this.#malformed++ % MALFORMED_KINDS.length];
    }
    for (const { after, g } of this.#gates) {
      if (index >= after) {
        g.reach();
        await g.released;
      }
    }
    return { malformed };
  }

  /** Holds the next task of `type` (for `vmid`, if given) running until released. */
  holdNextTask(type: string, vmid?: number): Gate {
    const g = createGate();
    this.#taskHolds.push({
      match: (t, v) => t.type === type && (vmid === undefined || v === vmid),
      ...(vmid === undefined ? {} : { vmid }),
      g,
    });
    return g;
  }

  /** Adds a VM directly (a template, a hand-made VM, a planted one). */
  addVm(vm: Partial<ModelVm> & { vmid: number }): ModelVm {
    const full: ModelVm = {
      node: this.nodes[0] as string,
      type: 'qemu',
      template: false,
      status: 'stopped',
      qmpstatus: 'stopped',
      config: {},
      agent: 'ip',
      ip: `10.4.${Math.floor(vm.vmid / 250) % 250}.${(vm.vmid % 250) + 2}`,
      ...vm,
    };
    if (full.name !== undefined && full.config.name === undefined) full.config.name = full.name;
    if (full.template) full.config.template = '1';
    this.vms.set(full.vmid, full);
    for (const volid of diskVolumes(full.config)) this.volumes.set(volid, full.vmid);
    return full;
  }

  /**
   * Clones the template onto `newid` at once, as a Create's clone step
   * leaves it: named, marked by `description`, unlocked, stopped, with its
   * own disks, not yet configured or started.
   */
  cloneNow(template: number, newid: number, name: string, description: string): ModelVm {
    const tpl = this.vms.get(template);
    if (tpl === undefined) throw new Error(`no template ${template}`);
    const upid = this.clone(tpl.node, template, { newid: String(newid), name, description });
    const t = this.tasks.get(upid) as ModelTask;
    if (!t.done) this.#finish(t);
    return this.vms.get(newid) as ModelVm;
  }

  /** Removes a VM and the disks it owns, as a destroy does. */
  removeVm(vmid: number): void {
    this.vms.delete(vmid);
    for (const [volid, owner] of this.volumes) if (owner === vmid) this.volumes.delete(volid);
  }

  /** Secondary resources: seed ISOs, and disks that no template owns. */
  secondaryCount(): number {
    let disks = 0;
    for (const owner of this.volumes.values()) if (this.vms.get(owner)?.template !== true) disks++;
    return this.isos.size + disks;
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
        ...config,
      },
    });
  }

  /** Ends every task whose time has come (tasks not held). */
  tick(): void {
    const now = Date.now();
    for (const t of this.tasks.values()) {
      if (!t.done && !t.held && t.doneAt <= now) this.#finish(t);
    }
  }

  #finish(t: ModelTask): void {
    t.done = true;
    try {
      t.exitstatus = t.apply();
    } catch (err) {
      t.exitstatus = err instanceof Error ? err.message : 'error';
    }
  }

  #task(node: string, type: string, id: string, apply: () => string, vmid?: number): string {
    pid++;
    const hex = (n: number) => n.toString(16).toUpperCase().padStart(8, '0');
    const upid = `UPID:${node}:${hex(pid)}:${hex(pid * 7)}:${hex(Math.floor(Date.now() / 1000))}:${type}:${id}:proxy-operator@pve!op:`;
    const t: ModelTask = {
      upid,
      node,
      type,
      doneAt: Date.now() + this.taskMs,
      held: false,
      done: false,
      apply,
    };
    const hold = this.#taskHolds.find((h) => h.match(t, vmid));
    if (hold !== undefined) {
      this.#taskHolds.splice(this.#taskHolds.indexOf(hold), 1);
      t.held = true;
      hold.g.reach();
      void hold.g.released.then(() => {
        t.held = false;
        if (!t.done) this.#finish(t);
      });
    }
    this.tasks.set(upid, t);
    const exit = this.nextExit.get(type);
    if (exit !== undefined) {
      this.nextExit.delete(type);
      const inner = t.apply;
      // Warnings come from a task that did its work; any other exit status from one that did not.
      t.apply = /^WARNINGS: \d+$/.test(exit)
        ? () => {
            const r = inner();
            return r === 'OK' ? exit : r;
          }
        : () => exit;
    }
    return upid;
  }

  // ------------------------------------------------------------ checks

  /** Checks the token header's line; throws the 401 Proxmox gives. */
  authenticate(line: string | undefined): void {
    if (line === this.acceptedToken) return;
    if (this.echoRejectedToken) {
      throw new PveError(401, `authentication failure for token ${line ?? ''}`);
    }
    throw new PveError(401, 'authentication failure', undefined, true);
  }

  #check(call: string, node?: string): void {
    this.tick();
    const privilege = this.forbidden.get(call);
    if (privilege !== undefined) {
      throw new PveError(403, `Permission check failed (${privilege})`);
    }
    if (node !== undefined) {
      if (this.unreachableNodes.has(node)) {
        throw new PveError(595, `Connection refused`);
      }
      if (this.brokenNodes.has(node)) throw new PveError(596, 'Broken pipe');
      if (!this.nodes.includes(node)) {
        throw new PveError(595, `no such cluster node '${node}'`);
      }
    }
  }

  #vm(node: string, vmid: number): ModelVm {
    const vm = this.vms.get(vmid);
    if (vm === undefined || vm.node !== node || vm.type !== 'qemu') {
      throw new PveError(
        500,
        `Configuration file 'nodes/${node}/qemu-server/${vmid}.conf' does not exist`,
      );
    }
    return vm;
  }

  #unlocked(vm: ModelVm): void {
    if (vm.lock !== undefined) throw new PveError(500, `VM is locked (${vm.lock})`);
  }

  // ------------------------------------------------------------ endpoints

  version(): { version: string; release: string; repoid: string } {
    this.#check('version');
    return { version: '9.2.20', release: '9.2', repoid: '49318c671b82f31e' };
  }

  nodeStatus(node: string): { kversion: string; uptime: number } {
    this.#check('nodeStatus', node);
    return { kversion: 'Linux 7.0.14-17-pve #1 SMP PREEMPT_DYNAMIC', uptime: 123456 };
  }

  storageStatus(node: string, storage: string): Record<string, unknown> {
    this.#check('storageStatus', node);
    const s = this.storages.get(`${node}/${storage}`);
    if (s === undefined) {
      throw new PveError(400, 'Parameter verification failed.', { storage: 'No such storage.' });
    }
    return { ...s, enabled: 1, shared: 0, type: 'dir', used: s.total - s.avail };
  }

  clusterResources(): Record<string, unknown>[] {
    this.#check('clusterResources');
    return [...this.vms.values()].map((vm) => {
      const e: Record<string, unknown> = {
        id: `${vm.type}/${vm.vmid}`,
        type: vm.type,
        vmid: vm.vmid,
        node: vm.node,
        status: vm.unknown === true ? 'unknown' : vm.status,
        template: vm.template ? 1 : 0,
        maxmem: Number(vm.config.memory ?? '1024') * 2 ** 20,
        maxcpu: Number(vm.config.cores ?? '1'),
      };
      if (vm.name !== undefined && vm.unknown !== true) e.name = vm.name;
      if (vm.lock !== undefined) e.lock = vm.lock;
      if (vm.config.tags !== undefined) e.tags = vm.config.tags;
      return e;
    });
  }

  vmConfig(node: string, vmid: number): Record<string, string | number> {
    this.#check('vmConfig', node);
    const vm = this.#vm(node, vmid);
    const out: Record<string, string | number> = { ...vm.config, digest: 'f0e1d2c3' };
    // Proxmox sends numbers for numeric options.
    for (const k of ['cores', 'template', 'agent']) {
      const v = out[k];
      if (typeof v === 'string' && /^\d+$/.test(v)) out[k] = Number(v);
    }
    if (vm.lock !== undefined) out.lock = vm.lock;
    return out;
  }

  setVmConfig(node: string, vmid: number, params: Record<string, string>): null {
    this.#check('setVmConfig', node);
    const vm = this.#vm(node, vmid);
    this.#unlocked(vm);
    if (params.tags !== undefined && !/^[a-z0-9_][a-z0-9_+.-]*$/i.test(params.tags)) {
      throw new PveError(400, 'Parameter verification failed.', {
        tags: `invalid format - invalid characters in tag`,
      });
    }
    for (const [k, v] of Object.entries(params)) {
      vm.config[k] = k === 'tags' ? v.toLowerCase() : v;
    }
    if (
      params.ide2 !== undefined &&
      vm.config.boot?.startsWith('order=') &&
      !vm.config.boot.includes('ide2')
    ) {
      vm.config.boot = `${vm.config.boot};ide2`;
    }
    if (params.agent === '0') vm.agent = 'not-configured';
    return null;
  }

  clone(node: string, vmid: number, p: Record<string, string>): string {
    this.#check('clone', node);
    const tpl = this.#vm(node, vmid);
    const newid = Number(p.newid);
    if (!Number.isInteger(newid) || newid < 100) {
      throw new PveError(400, 'Parameter verification failed.', { newid: 'invalid format' });
    }
    if (this.vms.has(newid)) {
      throw new PveError(500, `unable to create VM ${newid}: config file already exists`);
    }
    if (
      p.storage !== undefined &&
      this.storages.get(`${node}/${p.storage}`)?.content.includes('images') !== true
    ) {
      throw new PveError(500, `storage '${p.storage}' does not support vm images`);
    }
    const target = p.target ?? node;
    const config = { ...tpl.config };
    delete config.template;
    config.name = p.name ?? `Copy-of-VM-${tpl.config.name ?? vmid}`;
    if (p.description !== undefined) config.description = p.description;
    for (const k of Object.keys(config)) {
      if (/^(scsi|virtio|sata|ide)\d+$/.test(k) && config[k]?.includes('base-')) {
        config[k] = (config[k] as string).replace(/base-\d+-disk-(\d+)/, `vm-${newid}-disk-$1`);
      }
    }
    // The clone lists no name and holds the clone lock until its task ends.
    const vm = this.addVm({ vmid: newid, node: target, lock: 'clone', config: {} });
    vm.name = undefined;
    return this.#task(
      node,
      'qmclone',
      String(vmid),
      () => {
        vm.config = config;
        vm.name = config.name;
        vm.lock = undefined;
        for (const volid of diskVolumes(config)) this.volumes.set(volid, newid);
        return 'OK';
      },
      newid,
    );
  }

  resize(node: string, vmid: number, disk: string, size: string): string {
    this.#check('resize', node);
    const vm = this.#vm(node, vmid);
    this.#unlocked(vm);
    return this.#task(
      node,
      'resize',
      String(vmid),
      () => {
        const value = vm.config[disk];
        const cur = /size=(\d+)G/.exec(value ?? '')?.[1];
        const want = /^(\d+)G$/.exec(size)?.[1];
        if (value === undefined || cur === undefined || want === undefined)
          return `disk '${disk}' not found`;
        if (Number(want) < Number(cur)) return 'shrinking disks is not supported';
        vm.config[disk] = value.replace(/size=\d+G/, `size=${want}G`);
        return 'OK';
      },
      vmid,
    );
  }

  start(node: string, vmid: number): string {
    this.#check('start', node);
    const vm = this.#vm(node, vmid);
    return this.#task(
      node,
      'qmstart',
      String(vmid),
      () => {
        if (vm.lock !== undefined && vm.lock !== 'suspended') return `VM is locked (${vm.lock})`;
        if (vm.status === 'running') return `VM ${vmid} already running`;
        vm.status = 'running';
        vm.qmpstatus = 'running';
        vm.lock = undefined;
        return 'OK';
      },
      vmid,
    );
  }

  stop(node: string, vmid: number): string {
    this.#check('stop', node);
    const vm = this.#vm(node, vmid);
    return this.#task(
      node,
      'qmstop',
      String(vmid),
      () => {
        vm.status = 'stopped';
        vm.qmpstatus = 'stopped';
        return 'OK';
      },
      vmid,
    );
  }

  vmStatus(node: string, vmid: number): Record<string, unknown> {
    this.#check('vmStatus', node);
    const vm = this.#vm(node, vmid);
    const out: Record<string, unknown> = {
      vmid,
      name: vm.name,
      status: vm.status,
      qmpstatus: vm.qmpstatus,
      agent: vm.agent === 'not-configured' ? 0 : 1,
    };
    if (vm.lock !== undefined) out.lock = vm.lock;
    return out;
  }

  /**
   * Destroys a stopped VM with the disks its config names and, with
   * `destroy-unreferenced-disks`, the other disks it owns.
   */
  destroy(node: string, vmid: number, opts: { unreferencedDisks?: boolean } = {}): string {
    this.#check('destroy', node);
    const vm = this.#vm(node, vmid);
    if (vm.lock !== undefined && vm.lock !== 'suspended') this.#unlocked(vm);
    if (vm.status === 'running') throw new PveError(500, `VM ${vmid} is running - destroy failed`);
    // Destroying sets no lock; the entry stays listed until the task ends.
    return this.#task(
      node,
      'qmdestroy',
      String(vmid),
      () => {
        const referenced = new Set(diskVolumes(vm.config));
        this.vms.delete(vmid);
        for (const [volid, owner] of this.volumes) {
          if (owner === vmid && (referenced.has(volid) || opts.unreferencedDisks === true)) {
            this.volumes.delete(volid);
          }
        }
        return 'OK';
      },
      vmid,
    );
  }

  taskStatus(node: string, upid: string): Record<string, unknown> {
    this.#check('taskStatus', node);
    const t = this.tasks.get(upid);
    if (t === undefined || t.node !== node) {
      throw new PveError(500, `unable to open file - No such file or directory`);
    }
    if (!t.done && !t.held && t.doneAt <= Date.now()) this.#finish(t);
    return t.done
      ? { upid, node, type: t.type, status: 'stopped', exitstatus: t.exitstatus }
      : { upid, node, type: t.type, status: 'running' };
  }

  agentNetworkInterfaces(node: string, vmid: number): { result: unknown[] } {
    this.#check('agentNetworkInterfaces', node);
    const vm = this.#vm(node, vmid);
    if (vm.agent === 'not-configured') throw new PveError(500, 'No QEMU guest agent configured');
    if (vm.status !== 'running') throw new PveError(500, `VM ${vmid} is not running`);
    if (vm.agent === 'not-running') throw new PveError(500, 'QEMU guest agent is not running');
    const lo = {
      name: 'lo',
      'hardware-address': '00:00:00:00:00:00',
      'ip-addresses': [
        { 'ip-address-type': 'ipv4', 'ip-address': '127.0.0.1', prefix: 8 },
        { 'ip-address-type': 'ipv6', 'ip-address': '::1', prefix: 128 },
      ],
    };
    const eth = {
      name: 'eth0',
      'hardware-address': 'bc:24:11:00:00:01',
      'ip-addresses':
        vm.agent === 'ip'
          ? [
              { 'ip-address-type': 'ipv4', 'ip-address': vm.ip, prefix: 24 },
              { 'ip-address-type': 'ipv6', 'ip-address': 'fe80::be24:11ff:fe00:1', prefix: 64 },
            ]
          : [{ 'ip-address-type': 'ipv6', 'ip-address': 'fe80::be24:11ff:fe00:1', prefix: 64 }],
    };
    return { result: [lo, eth] };
  }

  uploadIso(
    node: string,
    storage: string,
    content: string,
    filename: string,
    data: Uint8Array,
  ): string {
    this.#check('uploadIso', node);
    const s = this.storages.get(`${node}/${storage}`);
    if (s === undefined) {
      throw new PveError(400, 'Parameter verification failed.', { storage: 'No such storage.' });
    }
    if (content !== 'iso' || !s.content.split(',').includes('iso')) {
      throw new PveError(400, 'Parameter verification failed.', {
        content: `storage '${storage}' does not support '${content}' content`,
      });
    }
    if (!filename.endsWith('.iso')) {
      throw new PveError(400, 'Parameter verification failed.', {
        filename: `wrong file extension`,
      });
    }
    // Overwrites a file of the same name.
    return this.#task(node, 'imgcopy', '', () => {
      this.isos.set(`${node}/${storage}/${filename}`, data);
      return 'OK';
    });
  }

  deleteVolume(node: string, storage: string, volid: string): string {
    this.#check('deleteVolume', node);
    if (!this.storages.has(`${node}/${storage}`)) {
      throw new PveError(400, 'Parameter verification failed.', { storage: 'No such storage.' });
    }
    const file = /^[^:]+:iso\/(.+)$/.exec(volid)?.[1];
    // A missing volume is still a successful task.
    return this.#task(node, 'imgdel', volid, () => {
      if (file !== undefined) this.isos.delete(`${node}/${storage}/${file}`);
      return 'OK';
    });
  }

  // ------------------------------------------------------------ helpers

  /** The VM with `name` (qemu, not a template), if any. */
  byName(name: string): ModelVm | undefined {
    return [...this.vms.values()].find((v) => v.name === name && !v.template);
  }

  /** The guest VMs (not templates). */
  guests(): ModelVm[] {
    return [...this.vms.values()].filter((v) => !v.template);
  }
}

/** The disk volumes a VM config names (not CD-ROMs, not `none`). */
export function diskVolumes(config: Readonly<Record<string, string>>): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(config)) {
    if (!/^(scsi|virtio|sata|ide|efidisk|tpmstate)\d+$/.test(k)) continue;
    if (/(^|,)media=cdrom(,|$)/.test(v)) continue;
    const volid = v.split(',')[0] ?? '';
    if (/^[^:]+:.+/.test(volid)) out.push(volid);
  }
  return out;
}
