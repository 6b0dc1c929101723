/**
 * The wire format of libvirt's RPC: the packet header, the remote program's
 * procedure numbers and the argument and reply layouts of the calls this
 * package makes, as XDR codecs.
 *
 * @module
 */
import {
  array,
  type Codec,
  fixedOpaque,
  int,
  optional,
  string,
  struct,
  uhyperNumber,
  uint,
  XdrError,
  XdrReader,
  XdrWriter,
  xvoid,
} from './xdr.js';

/** The remote program's number (`REMOTE_PROGRAM`). */
export const REMOTE_PROGRAM = 0x20008086;
/** The remote program's version (`REMOTE_PROTOCOL_VERSION`). */
export const REMOTE_PROTOCOL_VERSION = 1;
/** The QEMU driver's program (`QEMU_PROGRAM`): the guest agent and monitor calls. */
export const QEMU_PROGRAM = 0x20008087;
/** The QEMU program's version (`QEMU_PROTOCOL_VERSION`). */
export const QEMU_PROTOCOL_VERSION = 1;
/** The keepalive program's number (`KEEPALIVE_PROGRAM`, "keep" in ASCII). */
export const KEEPALIVE_PROGRAM = 0x6b656570;
/** The keepalive program's version. */
export const KEEPALIVE_PROTOCOL_VERSION = 1;
/** Keepalive procedures. */
export const KeepaliveProc = { PING: 1, PONG: 2 } as const;

/** Largest packet, length word included (`VIR_NET_MESSAGE_MAX` plus the 4-byte length). */
export const MESSAGE_MAX = 16 * 1024 * 1024 + 4;
/** Bytes of the length word plus the header. */
export const HEADER_LEN = 28;
/** The data carried by one stream packet, as libvirt's own client sends it. */
export const STREAM_CHUNK = 256 * 1024;
/** Longest string the remote protocol carries (`REMOTE_STRING_MAX`). */
export const STRING_MAX = 4 * 1024 * 1024;

/** Packet types (`virNetMessageType`). */
export const MessageType = {
  CALL: 0,
  REPLY: 1,
  MESSAGE: 2,
  STREAM: 3,
  CALL_WITH_FDS: 4,
  REPLY_WITH_FDS: 5,
  STREAM_HOLE: 6,
} as const;

/** Packet status (`virNetMessageStatus`). */
export const MessageStatus = { OK: 0, ERROR: 1, CONTINUE: 2 } as const;

/** A packet header (`virNetMessageHeader`). */
export interface Header {
  /** Program number. */
  prog: number;
  /** Program version. */
  vers: number;
  /** Procedure number within the program. */
  proc: number;
  /** One of {@link MessageType}. */
  type: number;
  /** Serial number that ties replies and stream packets to their call. */
  serial: number;
  /** One of {@link MessageStatus}. */
  status: number;
}

/**
 * Frames one packet: the 4-byte length (counting itself), the 24-byte
 * header, then `payload`.
 */
export function encodePacket(h: Header, payload?: Uint8Array): Buffer {
  const n = payload?.length ?? 0;
  const total = HEADER_LEN + n;
  if (total > MESSAGE_MAX) throw new XdrError(`packet of ${total} bytes exceeds ${MESSAGE_MAX}`);
  const b = Buffer.allocUnsafe(total);
  b.writeUInt32BE(total, 0);
  b.writeUInt32BE(h.prog, 4);
  b.writeUInt32BE(h.vers, 8);
  b.writeInt32BE(h.proc, 12);
  b.writeInt32BE(h.type, 16);
  b.writeUInt32BE(h.serial, 20);
  b.writeInt32BE(h.status, 24);
  if (payload !== undefined) b.set(payload, HEADER_LEN);
  return b;
}

/** Reads the header of a whole packet (length word included). */
export function decodeHeader(packet: Uint8Array): Header {
  if (packet.length < HEADER_LEN) throw new XdrError(`packet of ${packet.length} bytes is short`);
  const r = new XdrReader(packet, 4);
  return {
    prog: r.uint32(),
    vers: r.uint32(),
    proc: r.int32(),
    type: r.int32(),
    serial: r.uint32(),
    status: r.int32(),
  };
}

/** Writes a call's arguments straight after a header, without an extra copy. */
export function encodeCall<A>(h: Header, codec: Codec<A>, args: A): Buffer {
  const w = new XdrWriter(HEADER_LEN + 64);
  appendCall(w, h.prog, h.vers, h.proc, h.type, h.serial, h.status, codec, args);
  return w.finish();
}

/**
 * Appends one framed call (header fields, then the arguments) to `w`, so
 * many calls can share one buffer. On an error nothing is left in `w`.
 */
export function appendCall<A>(
  w: XdrWriter,
  prog: number,
  vers: number,
  proc: number,
  type: number,
  serial: number,
  status: number,
  codec: Codec<A>,
  args: A,
): void {
  const start = w.length;
  try {
    w.uint32(0);
    w.uint32(prog);
    w.uint32(vers);
    w.int32(proc);
    w.int32(type);
    w.uint32(serial);
    w.int32(status);
    codec.write(w, args);
    const n = w.length - start;
    if (n > MESSAGE_MAX) throw new XdrError(`call of ${n} bytes exceeds ${MESSAGE_MAX}`);
    w.patchUint32(start, n);
  } catch (err) {
    w.truncate(start);
    throw err;
  }
}

/** `remote_nonnull_string`. */
export const nonnullString = string(STRING_MAX);
/** `remote_string`: a string that may be absent. */
export const remoteString = optional(nonnullString);
/** `remote_uuid`: 16 bytes. */
export const uuid = fixedOpaque(16);

/** A domain as the protocol names it (`remote_nonnull_domain`). */
export interface Domain {
  /** The domain's name. */
  name: string;
  /** Its 16-byte UUID. */
  uuid: Uint8Array;
  /** Its ID while running, -1 otherwise. */
  id: number;
}

/** `remote_nonnull_domain`. */
export const domainCodec: Codec<Domain> = struct<Domain>(
  'remote_nonnull_domain',
  { name: nonnullString, uuid, id: int },
  ['name', 'uuid', 'id'],
);

/** A storage pool as the protocol names it (`remote_nonnull_storage_pool`). */
export interface StoragePool {
  /** The pool's name. */
  name: string;
  /** Its 16-byte UUID. */
  uuid: Uint8Array;
}

/** `remote_nonnull_storage_pool`. */
export const poolCodec: Codec<StoragePool> = struct<StoragePool>(
  'remote_nonnull_storage_pool',
  { name: nonnullString, uuid },
  ['name', 'uuid'],
);

/** A storage volume as the protocol names it (`remote_nonnull_storage_vol`). */
export interface StorageVol {
  /** The name of the pool holding it. */
  pool: string;
  /** The volume's name. */
  name: string;
  /** Its key (for file volumes, the path). */
  key: string;
}

/** `remote_nonnull_storage_vol`. */
export const volCodec: Codec<StorageVol> = struct<StorageVol>(
  'remote_nonnull_storage_vol',
  { pool: nonnullString, name: nonnullString, key: nonnullString },
  ['pool', 'name', 'key'],
);

/** The error body of a failed reply (`remote_error`). */
export interface RemoteError {
  /** libvirt's error code (`virErrorNumber`; see `ErrorCode`). */
  code: number;
  /** The libvirt subsystem that raised it (`virErrorDomain`). */
  domain: number;
  /** libvirt's message, when it sent one. */
  message: string | undefined;
  /** Its severity (`virErrorLevel`: 1 warning, 2 error). */
  level: number;
  /** The domain concerned, if any. */
  dom: Domain | undefined;
  /** Extra information, as libvirt fills it for this code. */
  str1: string | undefined;
  /** Extra information, as libvirt fills it for this code. */
  str2: string | undefined;
  /** Extra information, as libvirt fills it for this code. */
  str3: string | undefined;
  /** Extra information, as libvirt fills it for this code. */
  int1: number;
  /** Extra information, as libvirt fills it for this code. */
  int2: number;
  /** The network concerned, if any. */
  net: { name: string; uuid: Uint8Array } | undefined;
}

/** `remote_error`. */
export const remoteErrorCodec: Codec<RemoteError> = struct<RemoteError>(
  'remote_error',
  {
    code: int,
    domain: int,
    message: remoteString,
    level: int,
    dom: optional(domainCodec),
    str1: remoteString,
    str2: remoteString,
    str3: remoteString,
    int1: int,
    int2: int,
    net: optional(
      struct<{ name: string; uuid: Uint8Array }>(
        'remote_nonnull_network',
        { name: nonnullString, uuid },
        ['name', 'uuid'],
      ),
    ),
  },
  ['code', 'domain', 'message', 'level', 'dom', 'str1', 'str2', 'str3', 'int1', 'int2', 'net'],
);

/** Remote procedure numbers (`remote_procedure`) of the calls this package makes. */
export const Proc = {
  CONNECT_OPEN: 1,
  CONNECT_CLOSE: 2,
  DOMAIN_CREATE: 9,
  DOMAIN_DEFINE_XML: 11,
  DOMAIN_DESTROY: 12,
  DOMAIN_GET_XML_DESC: 14,
  DOMAIN_LOOKUP_BY_NAME: 23,
  CONNECT_GET_HOSTNAME: 59,
  CONNECT_SUPPORTS_FEATURE: 60,
  STORAGE_POOL_REFRESH: 83,
  STORAGE_POOL_LOOKUP_BY_NAME: 84,
  STORAGE_POOL_GET_INFO: 87,
  STORAGE_POOL_GET_XML_DESC: 88,
  STORAGE_VOL_CREATE_XML: 93,
  STORAGE_VOL_DELETE: 94,
  STORAGE_VOL_LOOKUP_BY_NAME: 95,
  STORAGE_VOL_GET_INFO: 98,
  STORAGE_VOL_GET_XML_DESC: 99,
  STORAGE_VOL_GET_PATH: 100,
  CONNECT_GET_LIB_VERSION: 157,
  STORAGE_VOL_UPLOAD: 208,
  STORAGE_VOL_DOWNLOAD: 209,
  DOMAIN_GET_STATE: 212,
  DOMAIN_UNDEFINE_FLAGS: 231,
  DOMAIN_DESTROY_FLAGS: 234,
  DOMAIN_SET_METADATA: 264,
  DOMAIN_GET_METADATA: 265,
  CONNECT_LIST_ALL_DOMAINS: 273,
  STORAGE_POOL_LIST_ALL_VOLUMES: 282,
  DOMAIN_DEFINE_XML_FLAGS: 350,
  DOMAIN_INTERFACE_ADDRESSES: 353,
} as const;

/** One remote procedure: its number and its argument and reply codecs. */
export interface Procedure<A, R> {
  /** The procedure's name in libvirt (`REMOTE_PROC_...`), for errors and logs. */
  readonly name: string;
  /** The procedure number. */
  readonly proc: number;
  /** The arguments' codec. */
  readonly args: Codec<A>;
  /** The reply's codec. */
  readonly ret: Codec<R>;
  /** The program the procedure belongs to, when not the remote program. */
  readonly program?: typeof QEMU_PROGRAM | undefined;
}

function proc<A, R>(name: keyof typeof Proc, args: Codec<A>, ret: Codec<R>): Procedure<A, R> {
  return { name, proc: Proc[name], args, ret };
}

function fields<T extends object>(name: string, f: { [K in keyof T]: Codec<T[K]> }): Codec<T> {
  return struct<T>(name, f, Object.keys(f) as (keyof T)[]);
}

const dom = domainCodec;
const pool = poolCodec;
const vol = volCodec;
const flags = uint;

/** An IP address of a guest interface (`remote_domain_ip_addr`). */
export interface DomainIpAddr {
  /** 0 for IPv4, 1 for IPv6 (`VIR_IP_ADDR_TYPE_*`). */
  type: number;
  /** The address as text. */
  addr: string;
  /** The prefix length. */
  prefix: number;
}

/** A guest interface and its addresses (`remote_domain_interface`). */
export interface DomainInterface {
  /** The interface name as the source reports it. */
  name: string;
  /** Its MAC address, when known. */
  hwaddr: string | undefined;
  /** Its addresses. */
  addrs: DomainIpAddr[];
}

const ipAddr = fields<DomainIpAddr>('remote_domain_ip_addr', {
  type: int,
  addr: nonnullString,
  prefix: uint,
});
const iface = fields<DomainInterface>('remote_domain_interface', {
  name: nonnullString,
  hwaddr: remoteString,
  addrs: array(ipAddr, 2048),
});

/** Storage pool numbers (`remote_storage_pool_get_info_ret`). */
export interface StoragePoolInfo {
  /** `VIR_STORAGE_POOL_*` state: 2 is running. */
  state: number;
  /** Bytes in total. */
  capacity: number;
  /** Bytes allocated. */
  allocation: number;
  /** Bytes free. */
  available: number;
}

/** Storage volume numbers (`remote_storage_vol_get_info_ret`). */
export interface StorageVolInfo {
  /** `VIR_STORAGE_VOL_*` type: 0 is a file. */
  type: number;
  /** Logical size in bytes. */
  capacity: number;
  /** Bytes allocated on the host. */
  allocation: number;
}

/**
 * `VIR_DOMAIN_QEMU_AGENT_COMMAND_*` timeouts, in seconds or one of these:
 * wait as long as libvirt's default (`DEFAULT`), not at all (`NOWAIT`), or
 * for ever (`BLOCK`).
 */
export const AgentTimeout = { BLOCK: -2, DEFAULT: -1, NOWAIT: 0 } as const;

/** The arguments of `QEMU_DOMAIN_AGENT_COMMAND`: the command as JSON text, the wait in seconds. */
export interface AgentCommandArgs {
  /** The running domain whose agent takes the command. */
  dom: Domain;
  /** The command as the agent's JSON text (`{"execute": ..., "arguments": ...}`). */
  cmd: string;
  /** How long libvirt waits for the agent, in seconds, or an {@link AgentTimeout} value. */
  timeout: number;
  /** 0: libvirt defines none. */
  flags: number;
}

/** The procedures of the QEMU program this package calls, from `qemu_protocol.x`. */
export const qemuProcedures: {
  readonly domainAgentCommand: Procedure<AgentCommandArgs, { result: string | undefined }>;
} = {
  domainAgentCommand: {
    name: 'QEMU_DOMAIN_AGENT_COMMAND',
    proc: 3,
    program: QEMU_PROGRAM,
    args: fields<AgentCommandArgs>('qemu_domain_agent_command_args', {
      dom,
      cmd: nonnullString,
      timeout: int,
      flags,
    }),
    ret: fields<{ result: string | undefined }>('qemu_domain_agent_command_ret', {
      result: remoteString,
    }),
  },
};

/** The procedures this package calls, with their layouts from `remote_protocol.x`. */
export const procedures = {
  connectOpen: proc(
    'CONNECT_OPEN',
    fields<{ name: string | undefined; flags: number }>('remote_connect_open_args', {
      name: remoteString,
      flags,
    }),
    xvoid,
  ),
  connectClose: proc('CONNECT_CLOSE', xvoid, xvoid),
  connectSupportsFeature: proc(
    'CONNECT_SUPPORTS_FEATURE',
    fields<{ feature: number }>('remote_connect_supports_feature_args', { feature: int }),
    fields<{ supported: number }>('remote_connect_supports_feature_ret', { supported: int }),
  ),
  connectGetLibVersion: proc(
    'CONNECT_GET_LIB_VERSION',
    xvoid,
    fields<{ libVer: number }>('remote_connect_get_lib_version_ret', { libVer: uhyperNumber }),
  ),
  connectGetHostname: proc(
    'CONNECT_GET_HOSTNAME',
    xvoid,
    fields<{ hostname: string }>('remote_connect_get_hostname_ret', { hostname: nonnullString }),
  ),
  connectListAllDomains: proc(
    'CONNECT_LIST_ALL_DOMAINS',
    fields<{ needResults: number; flags: number }>('remote_connect_list_all_domains_args', {
      needResults: int,
      flags,
    }),
    fields<{ domains: Domain[]; ret: number }>('remote_connect_list_all_domains_ret', {
      domains: array(dom, 262144),
      ret: uint,
    }),
  ),
  domainLookupByName: proc(
    'DOMAIN_LOOKUP_BY_NAME',
    fields<{ name: string }>('remote_domain_lookup_by_name_args', { name: nonnullString }),
    fields<{ dom: Domain }>('remote_domain_lookup_by_name_ret', { dom }),
  ),
  domainDefineXml: proc(
    'DOMAIN_DEFINE_XML',
    fields<{ xml: string }>('remote_domain_define_xml_args', { xml: nonnullString }),
    fields<{ dom: Domain }>('remote_domain_define_xml_ret', { dom }),
  ),
  domainDefineXmlFlags: proc(
    'DOMAIN_DEFINE_XML_FLAGS',
    fields<{ xml: string; flags: number }>('remote_domain_define_xml_flags_args', {
      xml: nonnullString,
      flags,
    }),
    fields<{ dom: Domain }>('remote_domain_define_xml_flags_ret', { dom }),
  ),
  domainCreate: proc(
    'DOMAIN_CREATE',
    fields<{ dom: Domain }>('remote_domain_create_args', { dom }),
    xvoid,
  ),
  domainDestroy: proc(
    'DOMAIN_DESTROY',
    fields<{ dom: Domain }>('remote_domain_destroy_args', { dom }),
    xvoid,
  ),
  domainDestroyFlags: proc(
    'DOMAIN_DESTROY_FLAGS',
    fields<{ dom: Domain; flags: number }>('remote_domain_destroy_flags_args', { dom, flags }),
    xvoid,
  ),
  domainUndefineFlags: proc(
    'DOMAIN_UNDEFINE_FLAGS',
    fields<{ dom: Domain; flags: number }>('remote_domain_undefine_flags_args', { dom, flags }),
    xvoid,
  ),
  domainGetState: proc(
    'DOMAIN_GET_STATE',
    fields<{ dom: Domain; flags: number }>('remote_domain_get_state_args', { dom, flags }),
    fields<{ state: number; reason: number }>('remote_domain_get_state_ret', {
      state: int,
      reason: int,
    }),
  ),
  domainGetMetadata: proc(
    'DOMAIN_GET_METADATA',
    fields<{ dom: Domain; type: number; uri: string | undefined; flags: number }>(
      'remote_domain_get_metadata_args',
      { dom, type: int, uri: remoteString, flags },
    ),
    fields<{ metadata: string }>('remote_domain_get_metadata_ret', { metadata: nonnullString }),
  ),
  domainSetMetadata: proc(
    'DOMAIN_SET_METADATA',
    fields<{
      dom: Domain;
      type: number;
      metadata: string | undefined;
      key: string | undefined;
      uri: string | undefined;
      flags: number;
    }>('remote_domain_set_metadata_args', {
      dom,
      type: int,
      metadata: remoteString,
      key: remoteString,
      uri: remoteString,
      flags,
    }),
    xvoid,
  ),
  domainGetXmlDesc: proc(
    'DOMAIN_GET_XML_DESC',
    fields<{ dom: Domain; flags: number }>('remote_domain_get_xml_desc_args', { dom, flags }),
    fields<{ xml: string }>('remote_domain_get_xml_desc_ret', { xml: nonnullString }),
  ),
  domainInterfaceAddresses: proc(
    'DOMAIN_INTERFACE_ADDRESSES',
    fields<{ dom: Domain; source: number; flags: number }>(
      'remote_domain_interface_addresses_args',
      { dom, source: uint, flags },
    ),
    fields<{ ifaces: DomainInterface[] }>('remote_domain_interface_addresses_ret', {
      ifaces: array(iface, 2048),
    }),
  ),
  storagePoolLookupByName: proc(
    'STORAGE_POOL_LOOKUP_BY_NAME',
    fields<{ name: string }>('remote_storage_pool_lookup_by_name_args', { name: nonnullString }),
    fields<{ pool: StoragePool }>('remote_storage_pool_lookup_by_name_ret', { pool }),
  ),
  storagePoolGetInfo: proc(
    'STORAGE_POOL_GET_INFO',
    fields<{ pool: StoragePool }>('remote_storage_pool_get_info_args', { pool }),
    fields<StoragePoolInfo>('remote_storage_pool_get_info_ret', {
      state: uint,
      capacity: uhyperNumber,
      allocation: uhyperNumber,
      available: uhyperNumber,
    }),
  ),
  storagePoolRefresh: proc(
    'STORAGE_POOL_REFRESH',
    fields<{ pool: StoragePool; flags: number }>('remote_storage_pool_refresh_args', {
      pool,
      flags,
    }),
    xvoid,
  ),
  storagePoolGetXmlDesc: proc(
    'STORAGE_POOL_GET_XML_DESC',
    fields<{ pool: StoragePool; flags: number }>('remote_storage_pool_get_xml_desc_args', {
      pool,
      flags,
    }),
    fields<{ xml: string }>('remote_storage_pool_get_xml_desc_ret', { xml: nonnullString }),
  ),
  storagePoolListAllVolumes: proc(
    'STORAGE_POOL_LIST_ALL_VOLUMES',
    fields<{ pool: StoragePool; needResults: number; flags: number }>(
      'remote_storage_pool_list_all_volumes_args',
      { pool, needResults: int, flags },
    ),
    fields<{ vols: StorageVol[]; ret: number }>('remote_storage_pool_list_all_volumes_ret', {
      vols: array(vol, 16384),
      ret: uint,
    }),
  ),
  storageVolLookupByName: proc(
    'STORAGE_VOL_LOOKUP_BY_NAME',
    fields<{ pool: StoragePool; name: string }>('remote_storage_vol_lookup_by_name_args', {
      pool,
      name: nonnullString,
    }),
    fields<{ vol: StorageVol }>('remote_storage_vol_lookup_by_name_ret', { vol }),
  ),
  storageVolCreateXml: proc(
    'STORAGE_VOL_CREATE_XML',
    fields<{ pool: StoragePool; xml: string; flags: number }>(
      'remote_storage_vol_create_xml_args',
      { pool, xml: nonnullString, flags },
    ),
    fields<{ vol: StorageVol }>('remote_storage_vol_create_xml_ret', { vol }),
  ),
  storageVolGetPath: proc(
    'STORAGE_VOL_GET_PATH',
    fields<{ vol: StorageVol }>('remote_storage_vol_get_path_args', { vol }),
    fields<{ name: string }>('remote_storage_vol_get_path_ret', { name: nonnullString }),
  ),
  storageVolGetInfo: proc(
    'STORAGE_VOL_GET_INFO',
    fields<{ vol: StorageVol }>('remote_storage_vol_get_info_args', { vol }),
    fields<StorageVolInfo>('remote_storage_vol_get_info_ret', {
      type: int,
      capacity: uhyperNumber,
      allocation: uhyperNumber,
    }),
  ),
  storageVolGetXmlDesc: proc(
    'STORAGE_VOL_GET_XML_DESC',
    fields<{ vol: StorageVol; flags: number }>('remote_storage_vol_get_xml_desc_args', {
      vol,
      flags,
    }),
    fields<{ xml: string }>('remote_storage_vol_get_xml_desc_ret', { xml: nonnullString }),
  ),
  storageVolDelete: proc(
    'STORAGE_VOL_DELETE',
    fields<{ vol: StorageVol; flags: number }>('remote_storage_vol_delete_args', { vol, flags }),
    xvoid,
  ),
  storageVolUpload: proc(
    'STORAGE_VOL_UPLOAD',
    fields<{ vol: StorageVol; offset: number; length: number; flags: number }>(
      'remote_storage_vol_upload_args',
      { vol, offset: uhyperNumber, length: uhyperNumber, flags },
    ),
    xvoid,
  ),
  storageVolDownload: proc(
    'STORAGE_VOL_DOWNLOAD',
    fields<{ vol: StorageVol; offset: number; length: number; flags: number }>(
      'remote_storage_vol_download_args',
      { vol, offset: uhyperNumber, length: uhyperNumber, flags },
    ),
    xvoid,
  ),
} as const;
