/**
 * The `local` provider's classify table: operating-system and backend
 * failures to the contract's error classes.
 *
 * @module
 */
import { type ErrorClass, type Operation, ProviderError } from '@proxy-op/contract';
import { LocalError } from './seam.js';

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

/** The class of a failure of a local backend call. Unknown failures are Transient. */
export function classify(_op: Operation, err: unknown): ErrorClass {
  if (ProviderError.isInstance(err)) return err.errorClass;
  if (err instanceof LocalError) {
    return err.code === 'ADDRESS_RANGE_EXHAUSTED' ? 'QuotaExceeded' : 'Transient';
  }
  if (err instanceof Error) {
    const { code, syscall } = err as NodeJS.ErrnoException;
    if (typeof syscall === 'string' && syscall.startsWith('spawn') && code === 'ENOENT') {
      return 'Permanent';
    }
    if (code === 'ENOENT') return 'NotFound';
    if (code !== undefined && PERMANENT.has(code)) return 'Permanent';
    if (code !== undefined && QUOTA.has(code)) return 'QuotaExceeded';
  }
  return 'Transient';
}
