/**
 * The ownership mark as Compute Engine labels. A label value holds only
 * lowercase letters, digits, `_` and `-` (at most 63 characters), so the
 * creation time cannot be a label: it is the instance's own
 * `creationTimestamp` (profile `createdAt: backend-timestamp`). The managed
 * label's value is `true`.
 *
 * @module
 */
import { MANAGED_VALUE, MarkKey } from '@proxy-op/contract';

const LABEL_VALUE = /^[\p{Ll}\p{Lo}\p{N}_-]{0,63}$/u;
const LABEL_KEY = /^[\p{Ll}\p{Lo}][\p{Ll}\p{Lo}\p{N}_-]{0,62}$/u;

/** Why `value` cannot be a label value, or undefined when it can. */
export function labelValueProblem(value: string): string | undefined {
  if (LABEL_VALUE.test(value)) return undefined;
  return `"${value}" is not a Compute Engine label value (at most 63 lowercase letters, digits, "_" and "-")`;
}

/** Whether `key` can be a label key. */
export function isLabelKey(key: string): boolean {
  return LABEL_KEY.test(key);
}

// The mark's labels and their reading are the contract's (the time is the backend's own):
// `markLabels` writes managed, UID and installation, `readMark` reads them with the creation
// time, `parseTimestamp` reads an RFC 3339 time (epoch 0 when unreadable).
export {
  formatOwnerMark as markLabels,
  parseMarkTime as parseTimestamp,
  parseOwnerMark as readMark,
} from '@proxy-op/contract';

/** The server-side filter of every proxy-op instance (the installation is filtered client-side). */
export const MANAGED_FILTER = `labels.${MarkKey.Managed} = "${MANAGED_VALUE}"`;
