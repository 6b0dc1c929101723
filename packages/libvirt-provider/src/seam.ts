/**
 * The seam: the libvirt calls the engine makes on one connection, one
 * method each, every one taking its arguments as an object and the signal
 * last; and the transport that opens such connections. The production
 * adapter (`adapter.ts`) puts `@proxy-op/libvirt-rpc` behind it; tests put
 * an in-memory libvirt behind the same interface. Either way the engine
 * decorates every connection once ({@link decorateConnection}: the per-call
 * budget, a child span and a debug line per call, carrying only safe
 * identifiers: names, never XML, bodies or keys), so no operation holds an
 * undecorated seam.
 *
 * @module
 */
import type { Tracer } from '@opentelemetry/api';
import { BudgetError, type Logger, observeSeam } from '@proxy-op/contract';
import {
  type Domain,
  type DomainInterface,
  LibvirtError,
  RpcError,
  type StoragePool,
  type StoragePoolInfo,
  type StorageVol,
  type StorageVolInfo,
} from '@proxy-op/libvirt-rpc';

export type {
  Domain,
  DomainInterface,
  StoragePool,
  StoragePoolInfo,
  StorageVol,
  StorageVolInfo,
} from '@proxy-op/libvirt-rpc';

/** Nothing to pass: the calls that take no arguments. */
export type NoArgs = Readonly<Record<string, never>>;

/**
 * The libvirt calls of one connection. Errors are those of
 * `@proxy-op/libvirt-rpc`: a `LibvirtError` with libvirt's code for what
 * the daemon refused, an `RpcError` for the wire.
 */
export interface LibvirtSeam {
  /**
   * libvirt's version on the host, as libvirt encodes it (major * 1,000,000 + minor * 1,000 +
   * release).
   */
  connectGetLibVersion(args: NoArgs, signal: AbortSignal): Promise<number>;
  /** The host's own host name. */
  connectGetHostname(args: NoArgs, signal: AbortSignal): Promise<string>;
  /** Every domain, active and inactive, for `flags` 0. */
  connectListAllDomains(args: { flags: number }, signal: AbortSignal): Promise<Domain[]>;
  /** The domain named `name`; a `LibvirtError` with code `ERR_NO_DOMAIN` when there is none. */
  domainLookupByName(args: { name: string }, signal: AbortSignal): Promise<Domain>;
  /** Defines (persists) a domain from its XML. */
  domainDefineXml(args: { xml: string }, signal: AbortSignal): Promise<Domain>;
  /** Starts a defined domain. */
  domainCreate(args: { dom: Domain }, signal: AbortSignal): Promise<void>;
  /** Stops a running domain at once (power off). */
  domainDestroy(args: { dom: Domain }, signal: AbortSignal): Promise<void>;
  /** Removes a domain's definition; `flags` as libvirt's `virDomainUndefineFlags`. */
  domainUndefineFlags(args: { dom: Domain; flags: number }, signal: AbortSignal): Promise<void>;
  /** The domain's state and the reason for it, as libvirt's numbers. */
  domainGetState(
    args: { dom: Domain },
    signal: AbortSignal,
  ): Promise<{ state: number; reason: number }>;
  /** The metadata element in namespace `uri`, as libvirt returns it. */
  domainGetMetadata(args: { dom: Domain; uri: string }, signal: AbortSignal): Promise<string>;
  /** Addresses from an `InterfaceAddressSource` (lease, agent or ARP). */
  domainInterfaceAddresses(
    args: { dom: Domain; source: number },
    signal: AbortSignal,
  ): Promise<DomainInterface[]>;
  /**
   * One QEMU guest agent command (its JSON text) to a running domain,
   * answered with the agent's JSON reply; the agent waits `timeoutSec`
   * (libvirt's `AgentTimeout` values, or seconds). The command may carry
   * data for the guest: it never goes into a span or line.
   */
  domainQemuAgentCommand(
    args: { dom: Domain; command: string; timeoutSec: number },
    signal: AbortSignal,
  ): Promise<string>;
  /** The pool named `name`. */
  storagePoolLookupByName(args: { name: string }, signal: AbortSignal): Promise<StoragePool>;
  /** The pool's state, capacity, allocation and free space. */
  storagePoolGetInfo(args: { pool: StoragePool }, signal: AbortSignal): Promise<StoragePoolInfo>;
  /** Makes the pool rescan its volumes. */
  storagePoolRefresh(args: { pool: StoragePool }, signal: AbortSignal): Promise<void>;
  /** Every volume of a running pool. */
  storagePoolListAllVolumes(
    args: { pool: StoragePool },
    signal: AbortSignal,
  ): Promise<StorageVol[]>;
  /** The volume named `name` in the pool. */
  storageVolLookupByName(
    args: { pool: StoragePool; name: string },
    signal: AbortSignal,
  ): Promise<StorageVol>;
  /** Creates a volume in the pool from its XML. */
  storageVolCreateXml(
    args: { pool: StoragePool; xml: string },
    signal: AbortSignal,
  ): Promise<StorageVol>;
  /** The volume's path on the host. */
  storageVolGetPath(args: { vol: StorageVol }, signal: AbortSignal): Promise<string>;
  /** The volume's type, capacity and allocation. */
  storageVolGetInfo(args: { vol: StorageVol }, signal: AbortSignal): Promise<StorageVolInfo>;
  /** The volume's XML description. */
  storageVolGetXmlDesc(args: { vol: StorageVol }, signal: AbortSignal): Promise<string>;
  /** Deletes the volume. */
  storageVolDelete(args: { vol: StorageVol }, signal: AbortSignal): Promise<void>;
  /** `length` bytes of the volume from `offset` (a few KiB: held whole). */
  storageVolDownload(
    args: { vol: StorageVol; offset: number; length: number },
    signal: AbortSignal,
  ): Promise<Uint8Array>;
  /** Streams `source` (`length` bytes) into the volume from offset 0. */
  storageVolUpload(
    args: {
      vol: StorageVol;
      source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>;
      length: number;
    },
    signal: AbortSignal,
  ): Promise<void>;
}

/** The seam's method names, in one list (for decorators and tests). */
export const SEAM_METHODS = [
  'connectGetLibVersion',
  'connectGetHostname',
  'connectListAllDomains',
  'domainLookupByName',
  'domainDefineXml',
  'domainCreate',
  'domainDestroy',
  'domainUndefineFlags',
  'domainGetState',
  'domainGetMetadata',
  'domainInterfaceAddresses',
  'domainQemuAgentCommand',
  'storagePoolLookupByName',
  'storagePoolGetInfo',
  'storagePoolRefresh',
  'storagePoolListAllVolumes',
  'storageVolLookupByName',
  'storageVolCreateXml',
  'storageVolGetPath',
  'storageVolGetInfo',
  'storageVolGetXmlDesc',
  'storageVolDelete',
  'storageVolDownload',
  'storageVolUpload',
] as const satisfies readonly (keyof LibvirtSeam)[];

/** One open libvirt connection to a host. */
export interface LibvirtConnection {
  /** The libvirt calls over this connection. */
  readonly seam: LibvirtSeam;
  /** Resolves (never rejects) once the connection has closed, for any reason. */
  readonly closed: Promise<unknown>;
  /** False once the connection has closed. */
  isOpen(): boolean;
  /** Closes the connection; never rejects. */
  close(): Promise<void>;
}

/** How the server's SSH host key is checked. */
export type HostKeyCheck =
  | { readonly knownHosts: string; readonly knownHostsFile: string }
  | { readonly insecureIgnoreHostKey: true };

/** Everything a transport needs to open a connection to one host. */
export interface DialTarget {
  /** The host's config name (`hosts[].name`). */
  readonly name: string;
  /** The host's address to dial (name or IP). */
  readonly address: string;
  /** Its SSH port. */
  readonly port: number;
  /** The SSH user. */
  readonly user: string;
  /** libvirtd's socket on the host. */
  readonly socket: string;
  /** The libvirt URI to open (`qemu:///system`). */
  readonly uri: string;
  /** The private key, as read from the key file on this dial. */
  readonly privateKey: string;
  /** How the host key is checked. */
  readonly hostKey: HostKeyCheck;
}

/**
 * Opens libvirt connections: SSH to the host, a `direct-streamlocal`
 * channel to libvirtd's socket, the libvirt handshake. It rejects with
 * `SshDialError` (from `@proxy-op/libvirt-rpc/ssh`) for an SSH failure and
 * with a libvirt-rpc error for a libvirt one; `signal` bounds the whole
 * dial.
 */
export interface Transport {
  /** Opens a connection to the target, within `signal`. */
  open(target: DialTarget, signal: AbortSignal): Promise<LibvirtConnection>;
}

const METHODS: ReadonlySet<string> = new Set(SEAM_METHODS);

/** Options of {@link decorateConnection}. */
export interface DecorateOptions {
  /** Span and log prefix (`kvm2`). */
  readonly prefix: string;
  /** The configured provider name, on every line. */
  readonly provider: string;
  /** The host's config name, on every span and line. */
  readonly host: string;
  readonly logger: Logger;
  readonly tracer: Tracer;
  /** Budget of one call, in ms. */
  readonly callMs: number;
  /** Budget of one volume upload, in ms. */
  readonly uploadMs: number;
  /** Budget of one domain start, in ms. */
  readonly startMs: number;
}

function handleName(v: unknown): string | undefined {
  const name = (v as { name?: unknown } | null)?.name;
  return typeof name === 'string' ? name : undefined;
}

/** The safe identifiers of a call: host, domain, pool, volume, source. Never XML or data. */
export function safeFields(
  host: string,
  method: string,
  args: readonly unknown[],
): Record<string, string | number> {
  const out: Record<string, string | number> = { host };
  const a = args[0];
  if (typeof a !== 'object' || a === null) return out;
  const r = a as Record<string, unknown>;
  const dom = handleName(r.dom);
  if (dom !== undefined) out.domain = dom;
  const pool = handleName(r.pool);
  if (pool !== undefined) out.pool = pool;
  const vol = r.vol as { name?: unknown; pool?: unknown } | undefined;
  if (vol !== undefined && vol !== null) {
    if (typeof vol.name === 'string') out.volume = vol.name;
    if (typeof vol.pool === 'string') out.pool = vol.pool;
  }
  if (typeof r.name === 'string') {
    if (method.startsWith('domain')) out.domain = r.name;
    else if (method === 'storagePoolLookupByName') out.pool = r.name;
    else out.volume = r.name;
  }
  if (typeof r.xml === 'string') {
    // Only the name out of the XML: the rest is for trace lines.
    const name = /<name>([^<]{1,255})<\/name>/.exec(r.xml)?.[1];
    if (name !== undefined) out[method === 'domainDefineXml' ? 'domain' : 'volume'] = name;
  }
  if (typeof r.source === 'number') out.source = r.source;
  if (typeof r.length === 'number') out.bytes = r.length;
  return out;
}

/** Safe facts of a failed call: libvirt's code and message, or the wire error's code. */
export function callErrorFields(err: unknown): Record<string, string | number> {
  if (LibvirtError.isInstance(err)) {
    return { error: 'LibvirtError', libvirtCode: err.code, libvirtMessage: err.message };
  }
  if (RpcError.isInstance(err) || BudgetError.isInstance(err)) {
    return { error: err.name, errorCode: err.code };
  }
  return { error: err instanceof Error ? err.name : typeof err };
}

/**
 * The connection with every seam call bounded by its budget (the call is
 * aborted and rejects with the contract's `BudgetError`, whatever the
 * transport does) and observed: one `<prefix>.<call>` child span under the
 * caller's span (none without one) and one debug `<prefix> call` line.
 */
export function decorateConnection(conn: LibvirtConnection, o: DecorateOptions): LibvirtConnection {
  const seam = observeSeam(conn.seam, {
    budget: (method) =>
      !METHODS.has(method)
        ? undefined
        : method === 'storageVolUpload'
          ? o.uploadMs
          : method === 'domainCreate'
            ? o.startMs
            : o.callMs,
    prefix: o.prefix,
    provider: o.provider,
    logger: o.logger,
    tracer: o.tracer,
    fields: (method, args) => safeFields(o.host, method, args),
    errorFields: callErrorFields,
  });
  return {
    seam,
    closed: conn.closed,
    isOpen: () => conn.isOpen(),
    close: () => conn.close(),
  };
}
