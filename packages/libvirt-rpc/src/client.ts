/**
 * The typed client: one method per remote call, and `connect`.
 *
 * @module
 */
import type { Readable } from 'node:stream';
import {
  type AbandonPolicy,
  type CallOptions,
  type KeepaliveOptions,
  RpcConnection,
} from './connection.js';
import type { Dialer } from './dialers.js';
import { ErrorCode, LibvirtError, RpcError } from './errors.js';
import {
  AgentTimeout,
  type Domain,
  type DomainInterface,
  procedures as P,
  qemuProcedures as Q,
  type StoragePool,
  type StoragePoolInfo,
  type StorageVol,
  type StorageVolInfo,
} from './protocol.js';

/** `VIR_DRV_FEATURE_PROGRAM_KEEPALIVE`: the peer supports the keepalive program. */
export const FEATURE_PROGRAM_KEEPALIVE = 10;

/** Domain states (`virDomainState`), as {@link LibvirtClient.domainGetState} returns them. */
export const DomainState = {
  NOSTATE: 0,
  RUNNING: 1,
  BLOCKED: 2,
  PAUSED: 3,
  SHUTDOWN: 4,
  SHUTOFF: 5,
  CRASHED: 6,
  PMSUSPENDED: 7,
} as const;

/** Where {@link LibvirtClient.domainInterfaceAddresses} asks (`virDomainInterfaceAddressesSource`). */
export const InterfaceAddressSource = { LEASE: 0, AGENT: 1, ARP: 2 } as const;

/** Which metadata {@link LibvirtClient.domainGetMetadata} reads (`virDomainMetadataType`). */
export const MetadataType = { DESCRIPTION: 0, TITLE: 1, ELEMENT: 2 } as const;

/** Flags of {@link LibvirtClient.domainUndefineFlags} (`virDomainUndefineFlagsValues`). */
export const DomainUndefineFlags = {
  MANAGED_SAVE: 1,
  SNAPSHOTS_METADATA: 2,
  NVRAM: 4,
  KEEP_NVRAM: 8,
  CHECKPOINTS_METADATA: 16,
} as const;

/** Flags of {@link LibvirtClient.connectListAllDomains} (`virConnectListAllDomainsFlags`). */
export const ListAllDomainsFlags = { ACTIVE: 1, INACTIVE: 2, PERSISTENT: 4, TRANSIENT: 8 } as const;

/** Storage pool states (`virStoragePoolState`). */
export const StoragePoolState = {
  INACTIVE: 0,
  BUILDING: 1,
  RUNNING: 2,
  DEGRADED: 3,
  INACCESSIBLE: 4,
} as const;

/** Options of {@link connect}. */
export interface ConnectOptions extends CallOptions {
  /** How to reach the daemon: {@link unixDialer}, {@link duplexDialer}, or `sshDialer` from `/ssh`. */
  dialer: Dialer;
  /** The URI to open on the daemon, e.g. `qemu:///system` or `test:///default`. */
  uri?: string | undefined;
  /** Open read-only (`VIR_CONNECT_RO`). */
  readOnly?: boolean | undefined;
  /**
   * Keepalive: `{ intervalMs: 5000, count: 5 }` by default, as libvirt's own
   * client; `false` turns it off.
   */
  keepalive?: KeepaliveOptions | false | undefined;
  /** What an abandoned call does to the connection; `'drop'` by default. */
  abandonPolicy?: AbandonPolicy | undefined;
  /** A `timeoutMs` for every call that does not pass its own. */
  defaultTimeoutMs?: number | undefined;
}

/**
 * Dials, opens `uri` on the daemon and, unless turned off, starts the
 * keepalive program. The signal and timeout bound the whole sequence.
 */
export async function connect(opts: ConnectOptions): Promise<LibvirtClient> {
  const deadline = opts.timeoutMs === undefined ? undefined : AbortSignal.timeout(opts.timeoutMs);
  const signal =
    deadline === undefined
      ? opts.signal
      : opts.signal === undefined
        ? deadline
        : AbortSignal.any([opts.signal, deadline]);
  const timedOut = (err: unknown): unknown =>
    deadline?.aborted && !opts.signal?.aborted
      ? new RpcError('ERR_RPC_TIMEOUT', `connect: not open within ${opts.timeoutMs} ms`, {
          cause: err,
        })
      : err;
  let client: LibvirtClient | undefined;
  try {
    const io = await opts.dialer({ signal });
    client = new LibvirtClient(
      new RpcConnection(io, {
        abandonPolicy: opts.abandonPolicy,
        defaultTimeoutMs: opts.defaultTimeoutMs,
      }),
    );
    await client.connectOpen(opts.uri, opts.readOnly ? 1 : 0, { signal });
    const ka = opts.keepalive ?? { intervalMs: 5000, count: 5 };
    if (
      ka !== false &&
      (await client.connectSupportsFeature(FEATURE_PROGRAM_KEEPALIVE, { signal }))
    ) {
      client.rpc.startKeepalive(ka);
    }
    return client;
  } catch (err) {
    client?.rpc.destroy();
    throw timedOut(err);
  }
}

/** Whether `err` is a {@link LibvirtError} with the given code. */
export function isLibvirtError(err: unknown, code?: number): err is LibvirtError {
  return LibvirtError.isInstance(err) && (code === undefined || err.code === code);
}

/**
 * A libvirt connection with one typed method per remote call. Every method
 * takes `{ signal, timeoutMs }`; calls may run concurrently.
 */
export class LibvirtClient {
  /** Wraps an open RPC connection; {@link connect} is the usual way to get one. */
  constructor(
    /** The RPC engine underneath, for keepalive control and custom procedures. */
    readonly rpc: RpcConnection,
  ) {}

  /** Resolves with the reason once the connection has closed. */
  get closed(): Promise<Error> {
    return this.rpc.closed;
  }

  /**
   * Closes the connection politely (`CONNECT_CLOSE`, bounded by
   * `timeoutMs`, 5 s by default), then the transport. Never rejects.
   */
  async close(opts: CallOptions = {}): Promise<void> {
    if (this.rpc.isOpen) {
      this.rpc.stopKeepalive();
      await this.connectClose({ timeoutMs: 5000, ...opts }).catch(() => {});
    }
    this.rpc.destroy();
  }

  /** Closes the connection (see {@link LibvirtClient.close}). */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** `CONNECT_OPEN`: opens `uri` (the daemon's default when undefined). */
  connectOpen(uri: string | undefined, flags = 0, opts?: CallOptions): Promise<void> {
    return this.rpc.call(P.connectOpen, { name: uri, flags }, opts);
  }

  /** `CONNECT_CLOSE`. */
  connectClose(opts?: CallOptions): Promise<void> {
    return this.rpc.call(P.connectClose, undefined, opts);
  }

  /** `CONNECT_SUPPORTS_FEATURE`: whether the daemon supports a `VIR_DRV_FEATURE_*`. */
  async connectSupportsFeature(feature: number, opts?: CallOptions): Promise<boolean> {
    return (await this.rpc.call(P.connectSupportsFeature, { feature }, opts)).supported !== 0;
  }

  /** `CONNECT_GET_LIB_VERSION`: the daemon's libvirt version as major*1e6 + minor*1e3 + micro. */
  async connectGetLibVersion(opts?: CallOptions): Promise<number> {
    return (await this.rpc.call(P.connectGetLibVersion, undefined, opts)).libVer;
  }

  /** `CONNECT_GET_HOSTNAME`. */
  async connectGetHostname(opts?: CallOptions): Promise<string> {
    return (await this.rpc.call(P.connectGetHostname, undefined, opts)).hostname;
  }

  /** `CONNECT_LIST_ALL_DOMAINS`: every domain matching `flags` (0 for all). */
  async connectListAllDomains(flags = 0, opts?: CallOptions): Promise<Domain[]> {
    return (await this.rpc.call(P.connectListAllDomains, { needResults: 1, flags }, opts)).domains;
  }

  /** `DOMAIN_LOOKUP_BY_NAME`; a missing domain rejects with `ERR_NO_DOMAIN`. */
  async domainLookupByName(name: string, opts?: CallOptions): Promise<Domain> {
    return (await this.rpc.call(P.domainLookupByName, { name }, opts)).dom;
  }

  /** `DOMAIN_DEFINE_XML`. */
  async domainDefineXml(xml: string, opts?: CallOptions): Promise<Domain> {
    return (await this.rpc.call(P.domainDefineXml, { xml }, opts)).dom;
  }

  /** `DOMAIN_DEFINE_XML_FLAGS` (`VIR_DOMAIN_DEFINE_VALIDATE` is 1). */
  async domainDefineXmlFlags(xml: string, flags: number, opts?: CallOptions): Promise<Domain> {
    return (await this.rpc.call(P.domainDefineXmlFlags, { xml, flags }, opts)).dom;
  }

  /** `DOMAIN_CREATE`: starts a defined domain. */
  domainCreate(dom: Domain, opts?: CallOptions): Promise<void> {
    return this.rpc.call(P.domainCreate, { dom }, opts);
  }

  /** `DOMAIN_DESTROY`: stops a running domain at once. */
  domainDestroy(dom: Domain, opts?: CallOptions): Promise<void> {
    return this.rpc.call(P.domainDestroy, { dom }, opts);
  }

  /** `DOMAIN_DESTROY_FLAGS` (`VIR_DOMAIN_DESTROY_GRACEFUL` is 1). */
  domainDestroyFlags(dom: Domain, flags: number, opts?: CallOptions): Promise<void> {
    return this.rpc.call(P.domainDestroyFlags, { dom, flags }, opts);
  }

  /** `DOMAIN_UNDEFINE_FLAGS`, see {@link DomainUndefineFlags}. */
  domainUndefineFlags(dom: Domain, flags: number, opts?: CallOptions): Promise<void> {
    return this.rpc.call(P.domainUndefineFlags, { dom, flags }, opts);
  }

  /** `DOMAIN_GET_STATE`: the {@link DomainState} and its reason. */
  domainGetState(
    dom: Domain,
    flags = 0,
    opts?: CallOptions,
  ): Promise<{ state: number; reason: number }> {
    return this.rpc.call(P.domainGetState, { dom, flags }, opts);
  }

  /**
   * `DOMAIN_GET_METADATA`: for {@link MetadataType.ELEMENT}, the element
   * under namespace `uri`. Missing metadata rejects with `ERR_NO_DOMAIN_METADATA`.
   */
  async domainGetMetadata(
    dom: Domain,
    type: number,
    uri: string | undefined,
    flags = 0,
    opts?: CallOptions,
  ): Promise<string> {
    return (await this.rpc.call(P.domainGetMetadata, { dom, type, uri, flags }, opts)).metadata;
  }

  /**
   * `DOMAIN_SET_METADATA`: for {@link MetadataType.ELEMENT}, `metadata` is
   * the element's XML, `key` its namespace prefix and `uri` its namespace;
   * `undefined` metadata removes it.
   */
  domainSetMetadata(
    dom: Domain,
    type: number,
    metadata: string | undefined,
    key: string | undefined,
    uri: string | undefined,
    flags = 0,
    opts?: CallOptions,
  ): Promise<void> {
    return this.rpc.call(P.domainSetMetadata, { dom, type, metadata, key, uri, flags }, opts);
  }

  /** `DOMAIN_GET_XML_DESC`. */
  async domainGetXmlDesc(dom: Domain, flags = 0, opts?: CallOptions): Promise<string> {
    return (await this.rpc.call(P.domainGetXmlDesc, { dom, flags }, opts)).xml;
  }

  /** `DOMAIN_INTERFACE_ADDRESSES` from an {@link InterfaceAddressSource}. */
  async domainInterfaceAddresses(
    dom: Domain,
    source: number,
    flags = 0,
    opts?: CallOptions,
  ): Promise<DomainInterface[]> {
    return (await this.rpc.call(P.domainInterfaceAddresses, { dom, source, flags }, opts)).ifaces;
  }

  /**
   * `virDomainQemuAgentCommand`: sends one guest agent command (a JSON
   * text such as `{"execute":"guest-ping"}`) to a running domain and
   * resolves with the agent's answer as JSON text. `timeoutSec` is how long
   * libvirt waits for the agent ({@link AgentTimeout} or seconds). A domain
   * without a responding agent rejects with `ERR_AGENT_UNRESPONSIVE`, one
   * that is not running with `ERR_OPERATION_INVALID`, and an agent error
   * with `ERR_INTERNAL_ERROR` carrying the agent's own words.
   */
  async domainQemuAgentCommand(
    dom: Domain,
    cmd: string,
    timeoutSec: number = AgentTimeout.DEFAULT,
    flags = 0,
    opts?: CallOptions,
  ): Promise<string | undefined> {
    const r = await this.rpc.call(
      Q.domainAgentCommand,
      { dom, cmd, timeout: timeoutSec, flags },
      opts,
    );
    return r.result;
  }

  /** `STORAGE_POOL_LOOKUP_BY_NAME`; a missing pool rejects with `ERR_NO_STORAGE_POOL`. */
  async storagePoolLookupByName(name: string, opts?: CallOptions): Promise<StoragePool> {
    return (await this.rpc.call(P.storagePoolLookupByName, { name }, opts)).pool;
  }

  /** `STORAGE_POOL_GET_INFO`: state and sizes in bytes. */
  storagePoolGetInfo(pool: StoragePool, opts?: CallOptions): Promise<StoragePoolInfo> {
    return this.rpc.call(P.storagePoolGetInfo, { pool }, opts);
  }

  /** `STORAGE_POOL_REFRESH`. */
  storagePoolRefresh(pool: StoragePool, flags = 0, opts?: CallOptions): Promise<void> {
    return this.rpc.call(P.storagePoolRefresh, { pool, flags }, opts);
  }

  /** `STORAGE_POOL_GET_XML_DESC`. */
  async storagePoolGetXmlDesc(pool: StoragePool, flags = 0, opts?: CallOptions): Promise<string> {
    return (await this.rpc.call(P.storagePoolGetXmlDesc, { pool, flags }, opts)).xml;
  }

  /** `STORAGE_POOL_LIST_ALL_VOLUMES`: every volume of the pool (an inactive pool rejects with `ERR_OPERATION_INVALID`). */
  async storagePoolListAllVolumes(
    pool: StoragePool,
    flags = 0,
    opts?: CallOptions,
  ): Promise<StorageVol[]> {
    return (await this.rpc.call(P.storagePoolListAllVolumes, { pool, needResults: 1, flags }, opts))
      .vols;
  }

  /** `STORAGE_VOL_LOOKUP_BY_NAME`; a missing volume rejects with `ERR_NO_STORAGE_VOL`. */
  async storageVolLookupByName(
    pool: StoragePool,
    name: string,
    opts?: CallOptions,
  ): Promise<StorageVol> {
    return (await this.rpc.call(P.storageVolLookupByName, { pool, name }, opts)).vol;
  }

  /** `STORAGE_VOL_CREATE_XML`; an existing name rejects with `ERR_STORAGE_VOL_EXIST`. */
  async storageVolCreateXml(
    pool: StoragePool,
    xml: string,
    flags = 0,
    opts?: CallOptions,
  ): Promise<StorageVol> {
    return (await this.rpc.call(P.storageVolCreateXml, { pool, xml, flags }, opts)).vol;
  }

  /** `STORAGE_VOL_GET_PATH`. */
  async storageVolGetPath(vol: StorageVol, opts?: CallOptions): Promise<string> {
    return (await this.rpc.call(P.storageVolGetPath, { vol }, opts)).name;
  }

  /** `STORAGE_VOL_GET_INFO`: type and sizes in bytes. */
  storageVolGetInfo(vol: StorageVol, opts?: CallOptions): Promise<StorageVolInfo> {
    return this.rpc.call(P.storageVolGetInfo, { vol }, opts);
  }

  /** `STORAGE_VOL_GET_XML_DESC`: the volume's XML (target path, format, backing store). */
  async storageVolGetXmlDesc(vol: StorageVol, flags = 0, opts?: CallOptions): Promise<string> {
    return (await this.rpc.call(P.storageVolGetXmlDesc, { vol, flags }, opts)).xml;
  }

  /** `STORAGE_VOL_DELETE`. */
  storageVolDelete(vol: StorageVol, flags = 0, opts?: CallOptions): Promise<void> {
    return this.rpc.call(P.storageVolDelete, { vol, flags }, opts);
  }

  /**
   * `STORAGE_VOL_UPLOAD`: streams `source` (a Readable or any iterable of
   * byte chunks) into the volume from `offset`; `length` 0 means up to the
   * end of the data. Backpressure keeps at most 4 MiB queued, so an
   * image of any size flows through. `timeoutMs` bounds the
   * whole upload.
   */
  storageVolUpload(
    vol: StorageVol,
    source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
    opts: CallOptions & { offset?: number; length?: number; flags?: number } = {},
  ): Promise<void> {
    const { offset = 0, length = 0, flags = 0, ...call } = opts;
    return this.rpc.upload(P.storageVolUpload, { vol, offset, length, flags }, source, call);
  }

  /**
   * `STORAGE_VOL_DOWNLOAD`: resolves with a Readable of the volume's bytes
   * from `offset` (`length` 0 means to the end). A slow reader pauses the
   * connection; destroying the Readable aborts the download.
   */
  storageVolDownload(
    vol: StorageVol,
    opts: CallOptions & {
      offset?: number;
      length?: number;
      flags?: number;
      /** The Readable's buffer in bytes (1 MiB by default) before the connection pauses. */
      highWaterMark?: number;
    } = {},
  ): Promise<Readable> {
    const { offset = 0, length = 0, flags = 0, ...call } = opts;
    return this.rpc.download(P.storageVolDownload, { vol, offset, length, flags }, call);
  }
}

/** True when `err` says the domain does not exist. */
export const isNoDomain = (err: unknown): boolean => isLibvirtError(err, ErrorCode.ERR_NO_DOMAIN);
