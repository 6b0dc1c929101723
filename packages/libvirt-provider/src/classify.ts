/**
 * The engine's failures and their classes (contract §5), and the Checker's
 * reasons (§3).
 *
 * @module
 */
import {
  type ErrorClass,
  errorClassOf,
  type Operation,
  ProviderError,
  Reason,
} from '@proxy-op/contract';
import { ErrorCode, LibvirtError, RpcError } from '@proxy-op/libvirt-rpc';
import { MarkFormatError } from './flavour.js';

function brand(err: Error, name: string): void {
  Object.defineProperty(err, Symbol.for(`@proxy-op/libvirt-provider.${name}`), { value: true });
}

function branded(err: unknown, name: string): boolean {
  return (
    typeof err === 'object' &&
    err !== null &&
    (err as Record<symbol, unknown>)[Symbol.for(`@proxy-op/libvirt-provider.${name}`)] === true
  );
}

/** `VIR_ERR_XML_DETAIL`: an XML document libvirt could not parse. */
export const ERR_XML_DETAIL = 35;

/**
 * Where a dial failed: reading the key or known_hosts files
 * (`credentials`), the host key (`hostkey`), the login (`auth`), TCP or the
 * SSH handshake (`connect`), the channel to libvirtd's socket (`channel`),
 * the libvirt handshake (`libvirt`), or its budget (`timeout`).
 */
export type DialStage =
  | 'credentials'
  | 'hostkey'
  | 'auth'
  | 'connect'
  | 'channel'
  | 'libvirt'
  | 'timeout';

/** A dial that failed. The message says what to fix; it never holds key material. */
export class DialError extends Error {
  readonly code: string;
  constructor(
    readonly stage: DialStage,
    /** The host's config name. */
    readonly host: string,
    message: string,
    /** Permanent: retrying cannot help until someone fixes what the message names. */
    readonly permanent: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.code = `LIBVIRT_DIAL_${stage.toUpperCase()}`;
    brand(this, 'DialError');
  }
  override get name(): string {
    return 'DialError';
  }
  /** Whether `err` is a DialError, also across two installed copies of this package. */
  static isInstance(err: unknown): err is DialError {
    return branded(err, 'DialError');
  }
}

/** A libvirt call that did not answer within its budget. */
export class BudgetError extends Error {
  readonly code = 'LIBVIRT_CALL_BUDGET';
  constructor(
    readonly call: string,
    readonly budgetMs: number,
    options?: { cause?: unknown },
  ) {
    super(`libvirt call ${call} did not answer within ${budgetMs} ms`, options);
    brand(this, 'BudgetError');
  }
  override get name(): string {
    return 'BudgetError';
  }
  /** Whether `err` is a BudgetError, also across two installed copies of this package. */
  static isInstance(err: unknown): err is BudgetError {
    return branded(err, 'BudgetError');
  }
}

/** An image download that failed; `permanent` when the config or the server must change. */
export class ImageError extends Error {
  readonly code: string;
  constructor(
    readonly kind: 'status' | 'length' | 'sha256' | 'short' | 'size',
    message: string,
    readonly permanent: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.code = `LIBVIRT_IMAGE_${kind.toUpperCase()}`;
    brand(this, 'ImageError');
  }
  override get name(): string {
    return 'ImageError';
  }
  /** Whether `err` is an ImageError, also across two installed copies of this package. */
  static isInstance(err: unknown): err is ImageError {
    return branded(err, 'ImageError');
  }
}

const NOT_FOUND_CODES: ReadonlySet<number> = new Set([
  ErrorCode.ERR_NO_DOMAIN,
  ErrorCode.ERR_NO_STORAGE_VOL,
]);

const PERMANENT_CODES: ReadonlySet<number> = new Set([
  ErrorCode.ERR_NO_SUPPORT,
  ErrorCode.ERR_INVALID_ARG,
  ErrorCode.ERR_XML_ERROR,
  ERR_XML_DETAIL,
  ErrorCode.ERR_OPERATION_DENIED,
  ErrorCode.ERR_AUTH_FAILED,
  ErrorCode.ERR_NO_STORAGE_POOL,
  ErrorCode.ERR_CONFIG_UNSUPPORTED,
  ErrorCode.ERR_ARGUMENT_UNSUPPORTED,
  ErrorCode.ERR_ACCESS_DENIED,
  ErrorCode.ERR_XML_INVALID_SCHEMA,
  ErrorCode.ERR_AUTH_UNAVAILABLE,
]);

/** True for a libvirt error with one of `codes`. */
export function hasCode(err: unknown, ...codes: number[]): boolean {
  return LibvirtError.isInstance(err) && codes.includes(err.code);
}

/** The class of a libvirt error code. */
export function classifyLibvirt(code: number): ErrorClass {
  if (NOT_FOUND_CODES.has(code)) return 'NotFound';
  if (PERMANENT_CODES.has(code)) return 'Permanent';
  return 'Transient';
}

/**
 * The engine's classify (§5): a decided ProviderError keeps its class;
 * libvirt codes by {@link classifyLibvirt} (the shell makes NotFound
 * Transient inside Create); dials, images and marks by what they say;
 * everything else, the wire included, Transient. Nothing is QuotaExceeded:
 * the pool-space precheck decides that itself.
 */
export function classify(_op: Operation, err: unknown): ErrorClass {
  if (ProviderError.isInstance(err)) return errorClassOf(err);
  if (LibvirtError.isInstance(err)) return classifyLibvirt(err.code);
  if (DialError.isInstance(err) || ImageError.isInstance(err)) {
    return err.permanent ? 'Permanent' : 'Transient';
  }
  if (MarkFormatError.isInstance(err)) return 'Permanent';
  if (isSshDialError(err))
    return err.stage === 'hostkey' || err.stage === 'auth' ? 'Permanent' : 'Transient';
  return 'Transient';
}

/** An `SshDialError` from `@proxy-op/libvirt-rpc/ssh`, by its brand (no import of ssh2 here). */
export function isSshDialError(err: unknown): err is Error & { stage: string; code: string } {
  return (
    typeof err === 'object' &&
    err !== null &&
    (err as Record<symbol, unknown>)[Symbol.for('@proxy-op/libvirt-rpc.SshDialError')] === true
  );
}

/** The Checker's reasons besides the contract's shared ones; each names a different fix. */
export const LibvirtReason = {
  /** The SSH key or known_hosts file is missing or unreadable: mount the Secret, fix the path. */
  CredentialsUnavailable: 'CredentialsUnavailable',
  /** The host's pool does not exist: create it or fix `hosts[].pool`. */
  PoolNotFound: 'PoolNotFound',
  /** The pool exists but is not running: `virsh pool-start`. */
  PoolNotActive: 'PoolNotActive',
} as const;

/** The Checker's reason for a failure, given whether the round's signal fired. */
export function reasonFor(err: unknown, roundAborted: boolean): Reason {
  if (roundAborted) return Reason.Timeout;
  if (DialError.isInstance(err)) {
    switch (err.stage) {
      case 'credentials':
        return LibvirtReason.CredentialsUnavailable;
      case 'hostkey':
      case 'auth':
        return Reason.Unauthorized;
      case 'libvirt':
        return reasonFor(err.cause, false);
      default:
        return Reason.Unreachable;
    }
  }
  if (BudgetError.isInstance(err)) return Reason.Timeout;
  if (LibvirtError.isInstance(err)) {
    if (err.code === ErrorCode.ERR_ACCESS_DENIED || err.code === ErrorCode.ERR_AUTH_FAILED) {
      return Reason.Forbidden;
    }
    if (err.code === ErrorCode.ERR_NO_STORAGE_POOL) return LibvirtReason.PoolNotFound;
    return Reason.APIError;
  }
  if (RpcError.isInstance(err) && err.code === 'ERR_RPC_TIMEOUT') return Reason.Timeout;
  return Reason.Unreachable;
}
