/**
 * The seam: the libvirt calls the engine makes on one connection, one
 * method each, every one taking its arguments as an object and the signal
 * last; and the transport that opens such connections. The production
 * adapter (`adapter.ts`) puts `@proxy-op/libvirt-rpc` behind it; tests put
 * an in-memory libvirt behind the same interface. Either way the engine
 * decorates every connection once (`observe.ts`), so no operation holds an
 * undecorated seam.
 *
 * @module
 */
import type {
  Domain,
  DomainInterface,
  StoragePool,
  StoragePoolInfo,
  StorageVol,
  StorageVolInfo,
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
  connectGetLibVersion(args: NoArgs, signal: AbortSignal): Promise<number>;
  connectGetHostname(args: NoArgs, signal: AbortSignal): Promise<string>;
  /** Every domain, active and inactive, for `flags` 0. */
  connectListAllDomains(args: { flags: number }, signal: AbortSignal): Promise<Domain[]>;
  domainLookupByName(args: { name: string }, signal: AbortSignal): Promise<Domain>;
  domainDefineXml(args: { xml: string }, signal: AbortSignal): Promise<Domain>;
  domainCreate(args: { dom: Domain }, signal: AbortSignal): Promise<void>;
  domainDestroy(args: { dom: Domain }, signal: AbortSignal): Promise<void>;
  domainUndefineFlags(args: { dom: Domain; flags: number }, signal: AbortSignal): Promise<void>;
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
  storagePoolLookupByName(args: { name: string }, signal: AbortSignal): Promise<StoragePool>;
  storagePoolGetInfo(args: { pool: StoragePool }, signal: AbortSignal): Promise<StoragePoolInfo>;
  storagePoolRefresh(args: { pool: StoragePool }, signal: AbortSignal): Promise<void>;
  /** Every volume of a running pool. */
  storagePoolListAllVolumes(
    args: { pool: StoragePool },
    signal: AbortSignal,
  ): Promise<StorageVol[]>;
  storageVolLookupByName(
    args: { pool: StoragePool; name: string },
    signal: AbortSignal,
  ): Promise<StorageVol>;
  storageVolCreateXml(
    args: { pool: StoragePool; xml: string },
    signal: AbortSignal,
  ): Promise<StorageVol>;
  storageVolGetPath(args: { vol: StorageVol }, signal: AbortSignal): Promise<string>;
  storageVolGetInfo(args: { vol: StorageVol }, signal: AbortSignal): Promise<StorageVolInfo>;
  storageVolGetXmlDesc(args: { vol: StorageVol }, signal: AbortSignal): Promise<string>;
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
  readonly address: string;
  readonly port: number;
  readonly user: string;
  /** libvirtd's socket on the host. */
  readonly socket: string;
  /** The libvirt URI to open (`qemu:///system`). */
  readonly uri: string;
  /** The private key, as read from the key file on this dial. */
  readonly privateKey: string;
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
  open(target: DialTarget, signal: AbortSignal): Promise<LibvirtConnection>;
}
