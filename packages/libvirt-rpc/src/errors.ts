/**
 * Errors: {@link LibvirtError} for an error the server reported, and
 * {@link RpcError} for what happened on this side of the wire (a cancelled
 * call, a timeout, a lost connection, a malformed packet).
 *
 * @module
 */
import type { RemoteError } from './protocol.js';

/**
 * libvirt's error codes (`virErrorNumber`) that callers most often switch
 * on. The numbers are libvirt's ABI and never change.
 */
export const ErrorCode = {
  ERR_OK: 0,
  ERR_INTERNAL_ERROR: 1,
  ERR_NO_MEMORY: 2,
  ERR_NO_SUPPORT: 3,
  ERR_NO_CONNECT: 5,
  ERR_INVALID_CONN: 6,
  ERR_INVALID_DOMAIN: 7,
  ERR_INVALID_ARG: 8,
  ERR_OPERATION_FAILED: 9,
  ERR_XML_ERROR: 27,
  ERR_DOM_EXIST: 28,
  ERR_OPERATION_DENIED: 29,
  ERR_OPEN_FAILED: 30,
  ERR_SYSTEM_ERROR: 38,
  ERR_RPC: 39,
  ERR_NO_DOMAIN: 42,
  ERR_NO_NETWORK: 43,
  ERR_AUTH_FAILED: 45,
  ERR_INVALID_STORAGE_POOL: 46,
  ERR_INVALID_STORAGE_VOL: 47,
  ERR_NO_STORAGE_POOL: 49,
  ERR_NO_STORAGE_VOL: 50,
  ERR_OPERATION_INVALID: 55,
  ERR_CONFIG_UNSUPPORTED: 67,
  ERR_OPERATION_TIMEOUT: 68,
  ERR_INVALID_STREAM: 73,
  ERR_ARGUMENT_UNSUPPORTED: 74,
  ERR_OPERATION_ABORTED: 78,
  ERR_NO_DOMAIN_METADATA: 80,
  ERR_OVERFLOW: 82,
  ERR_OPERATION_UNSUPPORTED: 84,
  ERR_AGENT_UNRESPONSIVE: 86,
  ERR_RESOURCE_BUSY: 87,
  ERR_ACCESS_DENIED: 88,
  ERR_STORAGE_VOL_EXIST: 90,
  ERR_XML_INVALID_SCHEMA: 92,
  ERR_AUTH_UNAVAILABLE: 94,
  ERR_AGENT_UNSYNCED: 97,
} as const;

/** libvirt's error domains (`virErrorDomain`): which part of libvirt raised the error. */
export const ErrorDomain = {
  FROM_NONE: 0,
  FROM_XML: 5,
  FROM_DOM: 6,
  FROM_RPC: 7,
  FROM_CONF: 9,
  FROM_QEMU: 10,
  FROM_TEST: 12,
  FROM_REMOTE: 13,
  FROM_STORAGE: 18,
  FROM_NETWORK: 19,
  FROM_DOMAIN: 20,
  FROM_SECURITY: 24,
  FROM_STREAMS: 38,
  FROM_SSH: 50,
} as const;

/** libvirt's error levels (`virErrorLevel`). */
export const ErrorLevel = { NONE: 0, WARNING: 1, ERROR: 2 } as const;

const LIBVIRT_BRAND = Symbol.for('@proxy-op/libvirt-rpc.LibvirtError');
const RPC_BRAND = Symbol.for('@proxy-op/libvirt-rpc.RpcError');

/**
 * An error the libvirt server reported for a call or a stream. `code`,
 * `domain` and `level` are libvirt's numbers; compare `code` with
 * {@link ErrorCode}.
 */
export class LibvirtError extends Error {
  /** Always `LibvirtError`. */
  override readonly name = 'LibvirtError';
  /** libvirt's error code (`virErrorNumber`), see {@link ErrorCode}. */
  readonly code: number;
  /** The part of libvirt that raised it (`virErrorDomain`), see {@link ErrorDomain}. */
  readonly domain: number;
  /** {@link ErrorLevel}: warning or error. */
  readonly level: number;
  /** Extra strings and numbers libvirt attached (often empty). */
  readonly str1: string | undefined;
  /** See `str1`. */
  readonly str2: string | undefined;
  /** See `str1`. */
  readonly str3: string | undefined;
  /** See `str1`. */
  readonly int1: number;
  /** See `str1`. */
  readonly int2: number;
  /** The procedure that failed (`DOMAIN_LOOKUP_BY_NAME`, ...), when known. */
  readonly procedure: string | undefined;

  /** Builds one from the `remote_error` body of a reply. */
  constructor(e: RemoteError, procedure?: string) {
    super(e.message ?? `libvirt error ${e.code}`);
    this.code = e.code;
    this.domain = e.domain;
    this.level = e.level;
    this.str1 = e.str1;
    this.str2 = e.str2;
    this.str3 = e.str3;
    this.int1 = e.int1;
    this.int2 = e.int2;
    this.procedure = procedure;
    Object.defineProperty(this, LIBVIRT_BRAND, { value: true });
  }

  /** Whether `err` is a LibvirtError, also across two installed copies of this package. */
  static isInstance(err: unknown): err is LibvirtError {
    return (
      typeof err === 'object' &&
      err !== null &&
      (err as Record<symbol, unknown>)[LIBVIRT_BRAND] === true
    );
  }
}

/**
 * Why a call failed on this side of the wire:
 *
 * - `ERR_RPC_ABORTED`: the caller's `AbortSignal` fired;
 * - `ERR_RPC_TIMEOUT`: the call's `timeoutMs` ran out;
 * - `ERR_RPC_CLOSED`: the connection closed (or was closed) before the reply;
 * - `ERR_RPC_KEEPALIVE`: the peer stopped answering keepalive pings;
 * - `ERR_RPC_PROTOCOL`: the peer sent bytes that are not valid libvirt RPC.
 */
export type RpcErrorCode =
  | 'ERR_RPC_ABORTED'
  | 'ERR_RPC_TIMEOUT'
  | 'ERR_RPC_CLOSED'
  | 'ERR_RPC_KEEPALIVE'
  | 'ERR_RPC_PROTOCOL';

/** A call that failed without a reply from the server; `code` says why. */
export class RpcError extends Error {
  /** Always `RpcError`. */
  override readonly name = 'RpcError';
  /** Why, see {@link RpcErrorCode}. */
  readonly code: RpcErrorCode;

  /** `cause` carries the signal's reason, the socket error or the earlier failure. */
  constructor(code: RpcErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    Object.defineProperty(this, RPC_BRAND, { value: true });
  }

  /** Whether `err` is an RpcError, also across two installed copies of this package. */
  static isInstance(err: unknown): err is RpcError {
    return (
      typeof err === 'object' &&
      err !== null &&
      (err as Record<symbol, unknown>)[RPC_BRAND] === true
    );
  }
}
