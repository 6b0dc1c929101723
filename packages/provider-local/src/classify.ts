/**
 * The `local` provider's classify table (§5): operating-system and backend
 * failures to the contract's error classes, and the predicate it and the
 * Checker share.
 *
 * @module
 */
import { type ErrorClass, type Operation, ProviderError } from '@proxy-op/contract';
import { UnsafePathError } from '@proxy-op/contract/files';
import { LocalError } from './errors.js';

const PERMANENT = new Set([
  'EACCES',
  'EPERM',
  'EROFS',
  'ENOTDIR',
  'EISDIR',
  'EADDRNOTAVAIL',
  'ELOOP',
]);
const QUOTA = new Set(['ENOSPC', 'EDQUOT']);

/**
 * `err` as an operating-system error, as Node reports one (a string `code`
 * such as `EACCES` and the `syscall` that failed), or undefined.
 */
export function systemError(
  err: unknown,
): (NodeJS.ErrnoException & { code: string; syscall: string }) | undefined {
  if (!(err instanceof Error)) return undefined;
  const { code, syscall } = err as NodeJS.ErrnoException;
  return typeof code === 'string' && typeof syscall === 'string'
    ? (err as NodeJS.ErrnoException & { code: string; syscall: string })
    : undefined;
}

/** The class of a failure of a local backend call. Unknown failures are Transient. */
export function classify(_op: Operation, err: unknown): ErrorClass {
  if (ProviderError.isInstance(err)) return err.errorClass;
  // A state folder or file that is not private and ours: a person has to look at it.
  if (UnsafePathError.isInstance(err)) return 'Permanent';
  if (LocalError.isInstance(err)) {
    return err.code === 'ADDRESS_RANGE_EXHAUSTED' ? 'QuotaExceeded' : 'Transient';
  }
  if (err instanceof Error) {
    const { code } = err as NodeJS.ErrnoException;
    // The node binary missing: spawning fails with ENOENT, which is no state file gone.
    if (code === 'ENOENT' && systemError(err)?.syscall.startsWith('spawn')) return 'Permanent';
    if (code === 'ENOENT') return 'NotFound';
    if (code !== undefined && PERMANENT.has(code)) return 'Permanent';
    if (code !== undefined && QUOTA.has(code)) return 'QuotaExceeded';
  }
  return 'Transient';
}
