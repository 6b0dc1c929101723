// One connection to a model host: the seam's calls, answered from the
// model's state the way libvirtd 9 answers them.
import { DomainState, RpcError } from '@proxy-op/libvirt-rpc';
import type {
  Domain,
  DomainInterface,
  LibvirtConnection,
  LibvirtSeam,
  NoArgs,
  StoragePool,
  StoragePoolInfo,
  StorageVol,
  StorageVolInfo,
} from '../../src/seam.js';
import {
  abortable,
  Err,
  type LibvirtModel,
  type ModelDomain,
  type ModelHost,
  type ModelPool,
  type ModelVolume,
  rpcAborted,
} from './model.js';
import {
  allocation,
  metadataOf,
  parseVolumeXml,
  poolInfo,
  probeFormats,
  unescapeText,
  uuidString,
  volumeXmlDesc,
} from './model-xml.js';

export { metadataOf } from './model-xml.js';

/** A connection to one model host; the model counts and gates every call. */
export class ModelConnection implements LibvirtSeam, LibvirtConnection {
  readonly closed: Promise<unknown>;
  #open = true;
  #settle!: (reason: unknown) => void;
  readonly #pending = new Set<(err: Error) => void>();

  constructor(
    readonly model: LibvirtModel,
    readonly host: ModelHost,
    readonly id: number,
  ) {
    this.closed = new Promise((r) => {
      this.#settle = r;
    });
  }

  get seam(): LibvirtSeam {
    return this;
  }

  isOpen(): boolean {
    return this.#open;
  }

  async close(): Promise<void> {
    this.drop(new RpcError('ERR_RPC_CLOSED', 'connection closed'));
  }

  /** Ends the connection from the far side: every pending call fails, later calls too. */
  drop(reason: Error = new RpcError('ERR_RPC_CLOSED', 'connection closed by the peer')): void {
    if (!this.#open) return;
    this.#open = false;
    this.host.connections.delete(this);
    for (const reject of this.#pending) reject(reason);
    this.#pending.clear();
    this.#settle(reason);
  }

  #call<T>(
    method: string,
    args: object,
    signal: AbortSignal,
    fn: () => T | Promise<T>,
  ): Promise<T> {
    if (!this.#open) {
      return Promise.reject(new RpcError('ERR_RPC_CLOSED', `${method}: connection closed`));
    }
    if (signal.aborted) return Promise.reject(rpcAborted(method, signal));
    const { gate, malformed } = this.model.admit(
      this.host,
      method,
      this.id,
      args as Record<string, unknown>,
    );
    const effect = (async () => {
      if (gate !== undefined) await gate.hold();
      if (this.host.delayMs > 0) await new Promise((r) => setTimeout(r, this.host.delayMs));
      if (!this.#open) throw new RpcError('ERR_RPC_CLOSED', `${method}: connection closed`);
      // An answer that cannot be read stands in for whatever the call would have answered.
      if (malformed) return null as T;
      return fn();
    })();
    return new Promise<T>((resolve, reject) => {
      this.#pending.add(reject);
      abortable(effect, signal, () => rpcAborted(method, signal)).then(
        (v) => {
          this.#pending.delete(reject);
          resolve(v);
        },
        (e: unknown) => {
          this.#pending.delete(reject);
          reject(e);
        },
      );
    });
  }

  #domain(dom: Domain): ModelDomain {
    const want = Buffer.from(dom.uuid).toString('hex');
    for (const d of this.host.domains.values()) {
      if (d.uuid.toString('hex') === want) return d;
    }
    throw Err.noDomainByUuid(uuidString(dom.uuid), dom.name);
  }

  #handle(d: ModelDomain): Domain {
    return { name: d.name, uuid: Buffer.from(d.uuid), id: d.id };
  }

  #pool(p: StoragePool): ModelPool {
    const pool = this.host.pools.get(p.name);
    if (pool === undefined || !pool.uuid.equals(Buffer.from(p.uuid))) throw Err.noPool(p.name);
    return pool;
  }

  #activePool(name: string): ModelPool {
    const pool = this.host.pools.get(name);
    if (pool === undefined) throw Err.noPool(name);
    if (!pool.running) throw Err.poolInactive(name);
    return pool;
  }

  #vol(v: StorageVol): { pool: ModelPool; vol: ModelVolume } {
    const pool = this.#activePool(v.pool);
    const vol = pool.volumes.get(v.name);
    if (vol === undefined) throw Err.noVol(v.name);
    return { pool, vol };
  }

  /**
   * A volume as its file reads (libvirtd refreshes it first): none before qemu-img made the
   * file, a capacity of 0 while it writes the header.
   */
  #read(v: StorageVol): ModelVolume {
    const { vol } = this.#vol(v);
    if (vol.building === 'file') throw Err.noVolByPath(vol.path);
    return vol.building === 'header' ? { ...vol, capacity: 0 } : vol;
  }

  #volHandle(pool: ModelPool, v: ModelVolume): StorageVol {
    return { pool: pool.name, name: v.name, key: v.path };
  }

  #findFile(path: string): ModelVolume | undefined {
    for (const p of this.host.pools.values()) {
      for (const v of p.volumes.values()) if (v.path === path) return v;
    }
    return undefined;
  }

  /** What a volume takes in its pool, as the real pool reports it. */
  static allocation(v: ModelVolume): number {
    return allocation(v);
  }

  connectGetLibVersion(_a: NoArgs, signal: AbortSignal): Promise<number> {
    return this.#call('connectGetLibVersion', {}, signal, () => this.host.libVersion);
  }

  connectGetHostname(_a: NoArgs, signal: AbortSignal): Promise<string> {
    return this.#call('connectGetHostname', {}, signal, () => this.host.hostname);
  }

  connectListAllDomains(a: { flags: number }, signal: AbortSignal): Promise<Domain[]> {
    return this.#call('connectListAllDomains', a, signal, () =>
      [...this.host.domains.values()].map((d) => this.#handle(d)),
    );
  }

  domainLookupByName(a: { name: string }, signal: AbortSignal): Promise<Domain> {
    return this.#call('domainLookupByName', a, signal, () => {
      const d = this.host.domains.get(a.name);
      if (d === undefined) throw Err.noDomainByName(a.name);
      return this.#handle(d);
    });
  }

  domainDefineXml(a: { xml: string }, signal: AbortSignal): Promise<Domain> {
    return this.#call(
      'domainDefineXml',
      { name: /<name>([^<]*)<\/name>/.exec(a.xml)?.[1] },
      signal,
      () => {
        if (!/^\s*<domain[\s>][\s\S]*<\/domain>\s*$/.test(a.xml)) {
          throw Err.xml("Couldn't find end of Start Tag domain line 1");
        }
        const name = /<name>([^<]*)<\/name>/.exec(a.xml)?.[1];
        if (name === undefined || name === '') throw Err.xml('missing domain name');
        const old = this.host.domains.get(name);
        if (old !== undefined) throw Err.domainExists(name, uuidString(old.uuid));
        const d = this.model.plantDomain(this.host, {
          name,
          metadata: [...metadataOf(a.xml)],
          state: DomainState.SHUTOFF,
          reason: 0,
        });
        d.xml = a.xml;
        d.files = [...a.xml.matchAll(/<source file="([^"]*)"/g)].map((m) =>
          unescapeText(m[1] ?? ''),
        );
        return this.#handle(d);
      },
    );
  }

  domainCreate(a: { dom: Domain }, signal: AbortSignal): Promise<void> {
    return this.#call('domainCreate', a, signal, async () => {
      const d = this.#domain(a.dom);
      if (d.state === DomainState.RUNNING || d.state === DomainState.PAUSED)
        throw Err.alreadyRunning();
      d.id = this.host.nextId++;
      if (this.host.startMs > 0) {
        // QEMU runs with its vCPUs held until libvirt has set the domain up: paused, starting up.
        d.state = DomainState.PAUSED;
        d.reason = 11;
        await new Promise((r) => setTimeout(r, this.host.startMs));
      }
      d.state = DomainState.RUNNING;
      d.reason = 1;
      if (this.model.crashNextStart) {
        this.model.crashNextStart = false;
        // VIR_DOMAIN_SHUTOFF_CRASHED: accepted, then gone as the guest booted.
        setImmediate(() => {
          d.state = DomainState.SHUTOFF;
          d.reason = 3;
        });
      }
    });
  }

  domainDestroy(a: { dom: Domain }, signal: AbortSignal): Promise<void> {
    return this.#call('domainDestroy', a, signal, () => {
      const d = this.#domain(a.dom);
      if (d.state !== DomainState.RUNNING && d.state !== DomainState.PAUSED) throw Err.notRunning();
      if (!d.persistent) {
        this.host.domains.delete(d.name);
        return;
      }
      d.state = DomainState.SHUTOFF;
      d.reason = 2;
      d.id = -1;
      d.agentIp = undefined;
    });
  }

  domainUndefineFlags(a: { dom: Domain; flags: number }, signal: AbortSignal): Promise<void> {
    return this.#call('domainUndefineFlags', a, signal, () => {
      const d = this.#domain(a.dom);
      if (d.state === DomainState.RUNNING || d.state === DomainState.PAUSED) d.persistent = false;
      else this.host.domains.delete(d.name);
    });
  }

  domainGetState(
    a: { dom: Domain },
    signal: AbortSignal,
  ): Promise<{ state: number; reason: number }> {
    return this.#call('domainGetState', a, signal, () => {
      const d = this.#domain(a.dom);
      return { state: d.state, reason: d.reason };
    });
  }

  domainGetMetadata(a: { dom: Domain; uri: string }, signal: AbortSignal): Promise<string> {
    return this.#call('domainGetMetadata', a, signal, () => {
      const m = this.#domain(a.dom).metadata.get(a.uri);
      if (m === undefined) throw Err.noMetadata();
      return m;
    });
  }

  domainInterfaceAddresses(
    a: { dom: Domain; source: number },
    signal: AbortSignal,
  ): Promise<DomainInterface[]> {
    return this.#call('domainInterfaceAddresses', a, signal, () => {
      const d = this.#domain(a.dom);
      if (d.state !== DomainState.RUNNING) throw Err.notRunning();
      if (a.source === 2) throw Err.arpUnreadable();
      if (a.source === 0) return [];
      if (d.agentIp === undefined) throw Err.agentNotConnected();
      return [
        {
          name: 'lo',
          hwaddr: '00:00:00:00:00:00',
          addrs: [{ type: 0, addr: '127.0.0.1', prefix: 8 }],
        },
        {
          name: 'eth0',
          hwaddr: '52:54:00:5e:00:2a',
          addrs: [{ type: 0, addr: d.agentIp, prefix: 24 }],
        },
      ];
    });
  }

  domainQemuAgentCommand(
    a: { dom: Domain; command: string; timeoutSec: number },
    signal: AbortSignal,
  ): Promise<string> {
    return this.#call('domainQemuAgentCommand', { dom: a.dom }, signal, () => {
      const d = this.#domain(a.dom);
      if (d.state !== DomainState.RUNNING) throw Err.notRunning();
      if (d.agentIp === undefined) throw Err.agentNotConnected();
      return d.guest.answer(a.command);
    });
  }

  storagePoolLookupByName(a: { name: string }, signal: AbortSignal): Promise<StoragePool> {
    return this.#call('storagePoolLookupByName', a, signal, () => {
      const p = this.host.pools.get(a.name);
      if (p === undefined) throw Err.noPool(a.name);
      return { name: p.name, uuid: Buffer.from(p.uuid) };
    });
  }

  storagePoolGetInfo(a: { pool: StoragePool }, signal: AbortSignal): Promise<StoragePoolInfo> {
    return this.#call('storagePoolGetInfo', a, signal, () => poolInfo(this.#pool(a.pool)));
  }

  storagePoolRefresh(a: { pool: StoragePool }, signal: AbortSignal): Promise<void> {
    return this.#call('storagePoolRefresh', a, signal, () =>
      probeFormats(this.#activePool(this.#pool(a.pool).name)),
    );
  }

  storagePoolListAllVolumes(a: { pool: StoragePool }, signal: AbortSignal): Promise<StorageVol[]> {
    return this.#call('storagePoolListAllVolumes', a, signal, () => {
      const p = this.#activePool(this.#pool(a.pool).name);
      return [...p.volumes.values()].map((v) => this.#volHandle(p, v));
    });
  }

  storageVolLookupByName(
    a: { pool: StoragePool; name: string },
    signal: AbortSignal,
  ): Promise<StorageVol> {
    return this.#call('storageVolLookupByName', a, signal, () => {
      const p = this.#activePool(a.pool.name);
      const v = p.volumes.get(a.name);
      if (v === undefined) throw Err.noVol(a.name);
      return this.#volHandle(p, v);
    });
  }

  storageVolCreateXml(
    a: { pool: StoragePool; xml: string },
    signal: AbortSignal,
  ): Promise<StorageVol> {
    const name = /<name>([^<]*)<\/name>/.exec(a.xml)?.[1];
    return this.#call('storageVolCreateXml', { pool: a.pool, name }, signal, () => {
      const p = this.#activePool(a.pool.name);
      if (name === undefined) throw Err.xml('missing volume name');
      const n = unescapeText(name);
      if (n.includes('/')) throw Err.volNameSlash(n);
      if (p.volumes.has(n)) throw Err.volExists(n);
      const v = parseVolumeXml(a.xml, n, p.dir);
      if (v.backingPath !== undefined && this.#findFile(v.backingPath) === undefined) {
        throw Err.backingMissing(v.backingPath);
      }
      v.changedMs = this.model.now();
      p.volumes.set(n, v);
      if (v.backingPath !== undefined && this.host.buildMs > 0) {
        // Like libvirtd: listed at once, its file made partway, whole once qemu-img is done.
        v.building = 'file';
        const half = this.host.buildMs / 2;
        setTimeout(() => {
          v.building = 'header';
        }, half);
        return new Promise<StorageVol>((resolve) =>
          setTimeout(() => {
            v.building = undefined;
            resolve(this.#volHandle(p, v));
          }, this.host.buildMs),
        );
      }
      return this.#volHandle(p, v);
    });
  }

  storageVolGetPath(a: { vol: StorageVol }, signal: AbortSignal): Promise<string> {
    return this.#call('storageVolGetPath', a, signal, () => this.#vol(a.vol).vol.path);
  }

  storageVolGetInfo(a: { vol: StorageVol }, signal: AbortSignal): Promise<StorageVolInfo> {
    return this.#call('storageVolGetInfo', a, signal, () => {
      const vol = this.#read(a.vol);
      return { type: 0, capacity: vol.capacity, allocation: ModelConnection.allocation(vol) };
    });
  }

  storageVolGetXmlDesc(a: { vol: StorageVol }, signal: AbortSignal): Promise<string> {
    return this.#call('storageVolGetXmlDesc', a, signal, () => {
      const vol = this.#read(a.vol);
      return volumeXmlDesc(vol, ModelConnection.allocation(vol), this.model.now());
    });
  }

  storageVolDelete(a: { vol: StorageVol }, signal: AbortSignal): Promise<void> {
    return this.#call('storageVolDelete', a, signal, () => {
      const { pool, vol } = this.#vol(a.vol);
      if (vol.building !== undefined) throw Err.stillAllocating(vol.name);
      pool.volumes.delete(vol.name);
    });
  }

  storageVolDownload(
    a: { vol: StorageVol; offset: number; length: number },
    signal: AbortSignal,
  ): Promise<Uint8Array> {
    return this.#call('storageVolDownload', a, signal, () => {
      const { vol } = this.#vol(a.vol);
      // The file is as long as the volume; what was never written reads as zeros.
      const size = Math.max(vol.capacity, vol.data.length);
      const end = a.length === 0 ? size : Math.min(size, a.offset + a.length);
      const out = Buffer.alloc(Math.max(0, end - a.offset));
      vol.data.copy(out, 0, Math.min(a.offset, vol.data.length), Math.min(end, vol.data.length));
      return out;
    });
  }

  storageVolUpload(
    a: {
      vol: StorageVol;
      source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>;
      length: number;
    },
    signal: AbortSignal,
  ): Promise<void> {
    return this.#call('storageVolUpload', { vol: a.vol, length: a.length }, signal, async () => {
      const { vol } = this.#vol(a.vol);
      const chunks: Buffer[] = [];
      try {
        for await (const chunk of a.source) {
          // The stream is aborted on the daemon when its caller gives up; what arrived stays written.
          if (signal.aborted) throw rpcAborted('storageVolUpload', signal);
          if (!this.#open)
            throw new RpcError('ERR_RPC_CLOSED', 'storageVolUpload: connection closed');
          chunks.push(Buffer.from(chunk));
        }
      } finally {
        vol.data = Buffer.concat(chunks);
        vol.changedMs = this.model.now();
      }
    });
  }
}
