export {
  type ConnectOptions,
  connect,
  DomainState,
  DomainUndefineFlags,
  FEATURE_PROGRAM_KEEPALIVE,
  InterfaceAddressSource,
  isLibvirtError,
  isNoDomain,
  LibvirtClient,
  ListAllDomainsFlags,
  MetadataType,
  StoragePoolState,
} from './client.js';
export {
  type AbandonPolicy,
  type CallOptions,
  type KeepaliveOptions,
  RpcConnection,
  type RpcConnectionOptions,
} from './connection.js';
export { DEFAULT_SOCKET, type Dialer, duplexDialer, unixDialer } from './dialers.js';
export {
  ErrorCode,
  ErrorDomain,
  ErrorLevel,
  LibvirtError,
  RpcError,
  type RpcErrorCode,
} from './errors.js';
export {
  type Domain,
  type DomainInterface,
  type DomainIpAddr,
  decodeHeader,
  domainCodec,
  encodeCall,
  encodePacket,
  type Header,
  KEEPALIVE_PROGRAM,
  MessageStatus,
  MessageType,
  Proc,
  type Procedure,
  poolCodec,
  procedures,
  REMOTE_PROGRAM,
  type RemoteError,
  remoteErrorCodec,
  type StoragePool,
  type StoragePoolInfo,
  type StorageVol,
  type StorageVolInfo,
  volCodec,
} from './protocol.js';
export * as xdr from './xdr.js';
export { type Codec, XdrError } from './xdr.js';
