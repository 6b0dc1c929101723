/**
 * The engine's failures by class (contract §5), and the predicates the
 * operations and the Checker share.
 *
 * @module
 */
import { type ErrorClass, errorClassOf, type Operation, ProviderError } from '@proxy-op/contract';
import { ErrorCode, LibvirtError } from '@proxy-op/libvirt-rpc';
import { DialError, ImageError, MarkFormatError } from './errors.js';

/** `VIR_ERR_XML_DETAIL`: an XML document libvirt could not parse. */
export const ERR_XML_DETAIL = 35;

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
 * libvirt codes by `classifyLibvirt` (the shell makes NotFound
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
