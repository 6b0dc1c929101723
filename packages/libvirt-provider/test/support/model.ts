// An in-memory libvirt behind the engine's seam: hosts reached over a
// pretend SSH (host key, authorized keys, reachability, libvirtd's socket),
// each with domains and dir pools, answering with libvirt's own codes,
// messages and states. Its fidelity is held to a real libvirtd by the seam
// contract (seam.real.test.ts runs the same checks as seam.model.test.ts).
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { RpcError } from '@proxy-op/libvirt-rpc';
import { knownHostsAccepts, SshDialError } from '@proxy-op/libvirt-rpc/ssh';
import { createGate, type HarnessGate } from '@proxy-op/providertest';
import type { DialTarget, LibvirtConnection, Transport } from '../../src/seam.js';
import { ModelGuestAgent } from './model-agent.js';
import { ModelConnection } from './model-connection.js';
import { Err } from './model-errors.js';

export { Err, libvirtError } from './model-errors.js';

export interface ModelVolume {
  name: string;
  path: string;
  format: 'raw' | 'qcow2';
  capacity: number;
  data: Buffer;
  backingPath?: string | undefined;
  backingFormat?: string | undefined;
  /** When the file last changed (ms since the epoch), for its `<timestamps>`; now when unset. */
  changedMs?: number | undefined;
  /**
   * The daemon is still building it: `file` while qemu-img has not made its file (reads say
   * there is no such volume), `header` while it writes the qcow2 header (reads give a
   * capacity of 0, as libvirtd 9 does).
   */
  building?: 'file' | 'header' | undefined;
}

export interface ModelPool {
  name: string;
  uuid: Buffer;
  dir: string;
  running: boolean;
  capacity: number;
  volumes: Map<string, ModelVolume>;
}

export interface ModelDomain {
  name: string;
  uuid: Buffer;
  id: number;
  xml: string;
  /** Metadata elements by namespace URI, as libvirt returns them (no prefix). */
  metadata: Map<string, string>;
  state: number;
  reason: number;
  persistent: boolean;
  /** What the guest agent reports: undefined when not connected. */
  agentIp: string | undefined;
  /** The guest's agent and files (answering while `agentIp` is set). */
  guest: ModelGuestAgent;
  /** The disk and seed files the domain uses (from its XML). */
  files: string[];
}

export interface ModelHost {
  name: string;
  address: string;
  port: number;
  hostname: string;
  libVersion: number;
  /** The SSH host key blob (an ssh-ed25519 public key). */
  hostKey: Buffer;
  /** Private keys (their text) the SSH server accepts. */
  acceptedKeys: Set<string>;
  /** Echo the refused key in the auth failure (a careless server). */
  echoRefusedKey: boolean;
  reachable: boolean;
  socketUp: boolean;
  accessDenied: boolean;
  /** Extra latency of every call on this host, in ms. */
  delayMs: number;
  /** How long a domain start holds the domain paused (starting up) before it runs, in ms. */
  startMs: number;
  /**
   * How long the daemon builds an overlay (a volume on a backing file, made
   * by qemu-img), in ms: its file exists after the first half, its header is
   * whole at the end; the volume is listed all along.
   */
  buildMs: number;
  pools: Map<string, ModelPool>;
  domains: Map<string, ModelDomain>;
  connections: Set<ModelConnection>;
  nextId: number;
}

/** One recorded backend call. */
export interface ModelCall {
  readonly host: string;
  readonly method: string;
  /** The connection it ran on (0 for a dial). */
  readonly conn: number;
  /** The domain, volume or pool it names, when it names one. */
  readonly target?: string | undefined;
  /** The address source asked, for `domainInterfaceAddresses`. */
  readonly source?: number | undefined;
}

interface Block {
  remaining: number;
  gate: HarnessGate;
}

interface Hold {
  method: string;
  match: (args: Record<string, unknown>) => boolean;
  gate: HarnessGate;
}

/** A fake ed25519 public key blob with random key bytes, shaped as SSH sends it. */
export function hostKeyBlob(): Buffer {
  const type = Buffer.from('ssh-ed25519');
  const len = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(n);
    return b;
  };
  return Buffer.concat([len(type.length), type, len(32), randomBytes(32)]);
}

/** The known_hosts line naming `host`'s key. */
export function knownHostsLine(h: { address: string; port: number; hostKey: Buffer }): string {
  const name = h.port === 22 ? h.address : `[${h.address}]:${h.port}`;
  return `${name} ssh-ed25519 ${h.hostKey.toString('base64')}\n`;
}

/** The in-memory libvirt: hosts, the pretend SSH in front of them, and the controls tests use. */
export class LibvirtModel {
  readonly hosts = new Map<string, ModelHost>();
  readonly calls: ModelCall[] = [];
  #blocks: Block[] = [];
  #holds: Hold[] = [];
  #malformed = 0;
  #connSeq = 0;

  /** Adds a host with one running dir pool named `pool`. */
  addHost(o: {
    name: string;
    address?: string;
    port?: number;
    pool?: string;
    acceptedKey: string;
    poolCapacity?: number;
  }): ModelHost {
    const host: ModelHost = {
      name: o.name,
      address: o.address ?? `${o.name}.model.test`,
      port: o.port ?? 22,
      hostname: `${o.name}.example`,
      libVersion: 9_000_000,
      hostKey: hostKeyBlob(),
      acceptedKeys: new Set([o.acceptedKey]),
      echoRefusedKey: false,
      reachable: true,
      socketUp: true,
      accessDenied: false,
      delayMs: 0,
      startMs: 0,
      buildMs: 0,
      pools: new Map(),
      domains: new Map(),
      connections: new Set(),
      nextId: 1,
    };
    this.hosts.set(o.name, host);
    this.addPool(host, o.pool ?? 'default', o.poolCapacity ?? 100 * 1024 ** 3);
    return host;
  }

  addPool(host: ModelHost, name: string, capacity: number): ModelPool {
    const pool: ModelPool = {
      name,
      uuid: randomBytes(16),
      dir: `/var/lib/libvirt/images/${host.name}-${name}`,
      running: true,
      capacity,
      volumes: new Map(),
    };
    host.pools.set(name, pool);
    return pool;
  }

  host(name: string): ModelHost {
    const h = this.hosts.get(name);
    if (h === undefined) throw new Error(`no model host ${name}`);
    return h;
  }

  /** The transport the engine opens connections with. */
  transport(): Transport {
    return { open: (target, signal) => this.#open(target, signal) };
  }

  /** Drops every open connection (of one host, or all), as an sshd or libvirtd restart would. */
  dropConnections(host?: string): void {
    for (const h of this.hosts.values()) {
      if (host !== undefined && h.name !== host) continue;
      for (const c of [...h.connections]) c.drop();
    }
  }

  /** Holds backend calls after `skip` more, until the gate is released. */
  blockCalls(skip: number): HarnessGate {
    const gate = createGate();
    const block: Block = { remaining: skip, gate };
    this.#blocks.push(block);
    void gate.released.then(() => {
      this.#blocks = this.#blocks.filter((b) => b !== block);
    });
    return gate;
  }

  /** Holds the next call of `method` whose arguments match, until released. */
  holdNext(
    method: string,
    match: (args: Record<string, unknown>) => boolean = () => true,
  ): HarnessGate {
    const gate = createGate();
    this.#holds.push({ method, match, gate });
    return gate;
  }

  /**
   * The next domain started crashes right after its start was accepted
   * (QEMU dies as the guest boots): shut off, reason crashed.
   */
  crashNextStart = false;

  /** The model's clock for volume timestamps (tests move it to age volumes). */
  now: () => number = () => Date.now();

  /** The next libvirt call (not a dial) answers with something unreadable. */
  malformNext(): void {
    this.#malformed++;
  }

  /** Records a call and says how to run it: the gate to wait at, and whether to malform it. */
  admit(
    host: ModelHost,
    method: string,
    conn: number,
    args: Record<string, unknown>,
  ): { gate?: HarnessGate | undefined; malformed: boolean } {
    const named = (v: unknown) => (v as { name?: unknown } | undefined)?.name;
    const target = [args.name, named(args.vol), named(args.dom), named(args.pool)].find(
      (v): v is string => typeof v === 'string',
    );
    const source = typeof args.source === 'number' ? args.source : undefined;
    this.calls.push({ host: host.name, method, conn, target, source });
    let gate: HarnessGate | undefined;
    for (const b of this.#blocks) {
      if (b.remaining > 0) {
        b.remaining--;
        continue;
      }
      gate ??= b.gate;
    }
    const hold = this.#holds.find((h) => h.method === method && h.match(args));
    if (hold !== undefined) {
      this.#holds = this.#holds.filter((h) => h !== hold);
      gate ??= hold.gate;
    }
    let malformed = false;
    if (method !== 'dial' && this.#malformed > 0) {
      this.#malformed--;
      malformed = true;
    }
    return { gate, malformed };
  }

  async #open(t: DialTarget, signal: AbortSignal): Promise<LibvirtConnection> {
    const host = [...this.hosts.values()].find((h) => h.address === t.address && h.port === t.port);
    const where = `${t.address}:${t.port}`;
    const run = async (): Promise<LibvirtConnection> => {
      if (host === undefined || !host.reachable) {
        throw new SshDialError('connect', `ssh dial ${where}: connect ECONNREFUSED ${where}`);
      }
      if (host.delayMs > 0) await new Promise((r) => setTimeout(r, host.delayMs));
      if (
        !('insecureIgnoreHostKey' in t.hostKey) &&
        !knownHostsAccepts(t.hostKey.knownHosts, t.address, t.port, host.hostKey)
      ) {
        throw new SshDialError('hostkey', `ssh dial ${where}: host key not accepted`);
      }
      if (!host.acceptedKeys.has(t.privateKey)) {
        const cause = new Error(
          host.echoRefusedKey
            ? `All configured authentication methods failed (offered: ${t.privateKey})`
            : 'All configured authentication methods failed',
        );
        throw new SshDialError('auth', `ssh dial ${where}: authentication refused`, { cause });
      }
      if (!host.socketUp) {
        throw new SshDialError('channel', `ssh channel to ${t.socket}: open failed`);
      }
      if (host.accessDenied) throw Err.accessDenied();
      const conn = new ModelConnection(this, host, ++this.#connSeq);
      host.connections.add(conn);
      return conn;
    };
    if (signal.aborted) throw new SshDialError('aborted', 'ssh dial: aborted');
    const { gate } = this.admit(host ?? this.#nowhere(t), 'dial', 0, {});
    const effect = (async () => {
      if (gate !== undefined) await gate.hold();
      return run();
    })();
    return abortable(
      effect,
      signal,
      () => new SshDialError('aborted', 'ssh dial: aborted'),
      (c) => c.close(),
    );
  }

  #nowhere(t: DialTarget): ModelHost {
    return { name: t.name } as ModelHost;
  }

  /** Every domain on every host. */
  domains(): ModelDomain[] {
    return [...this.hosts.values()].flatMap((h) => [...h.domains.values()]);
  }

  /** Every volume on every host. */
  volumes(): ModelVolume[] {
    return [...this.hosts.values()].flatMap((h) =>
      [...h.pools.values()].flatMap((p) => [...p.volumes.values()]),
    );
  }

  /** A domain by host and name; throws when missing. */
  domain(host: string, name: string): ModelDomain {
    const d = this.host(host).domains.get(name);
    if (d === undefined) throw new Error(`no model domain ${host}/${name}`);
    return d;
  }

  /** Defines a domain directly (behind the engine's back). */
  plantDomain(
    host: ModelHost,
    o: {
      name: string;
      metadata?: [string, string][];
      state: number;
      reason: number;
      agentIp?: string;
    },
  ): ModelDomain {
    const d: ModelDomain = {
      name: o.name,
      uuid: Buffer.from(randomUUID().replace(/-/g, ''), 'hex'),
      id: o.state === 1 ? host.nextId++ : -1,
      xml: `<domain type="kvm"><name>${o.name}</name></domain>`,
      metadata: new Map(o.metadata ?? []),
      state: o.state,
      reason: o.reason,
      persistent: true,
      agentIp: o.agentIp,
      guest: new ModelGuestAgent(),
      files: [],
    };
    host.domains.set(o.name, d);
    return d;
  }

  /** A stable digest of a volume's data, for tests. */
  static digest(v: ModelVolume): string {
    return createHash('sha256').update(v.data).digest('hex');
  }
}

/**
 * Runs `effect` (which a real daemon would carry out even when its caller
 * gives up), resolving or rejecting with it, or rejecting with `aborted()`
 * as soon as `signal` fires. A result that arrives after the caller left
 * is handed to `discard`.
 */
export function abortable<T>(
  effect: Promise<T>,
  signal: AbortSignal,
  aborted: () => Error,
  discard?: (late: T) => unknown,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let left = false;
    const onAbort = () => {
      left = true;
      reject(aborted());
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    effect.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        if (left) void discard?.(v);
        else resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        if (!left) reject(e);
      },
    );
  });
}

/** The wire error of a call whose signal fired, as libvirt-rpc raises it. */
export function rpcAborted(method: string, signal: AbortSignal): RpcError {
  return new RpcError('ERR_RPC_ABORTED', `${method}: aborted`, { cause: signal.reason });
}
