/**
 * The ownership mark as Hetzner Cloud labels. A label value holds at most
 * 63 letters, digits, `-`, `_` and `.`, beginning and ending with a letter
 * or digit, so the creation time (RFC 3339, with colons) cannot be a
 * label: it is the server's own `created` (profile `createdAt:
 * backend-timestamp`). The managed label's value is `true`.
 *
 * @module
 */
import { MANAGED_VALUE, MarkKey } from '@proxy-op/contract';

/** A label value as the API takes it: empty, or 1 to 63 characters beginning and ending alphanumeric. */
export const LABEL_VALUE_RE = /^(?:[a-zA-Z0-9](?:[-_.a-zA-Z0-9]{0,61}[a-zA-Z0-9])?)?$/;
/** A label key: an optional DNS-subdomain prefix and `/`, then a name like a value (not empty). */
export const LABEL_KEY_RE =
  /^(?:[a-zA-Z0-9](?:[-_.a-zA-Z0-9]{0,251}[a-zA-Z0-9])?\/)?[a-zA-Z0-9](?:[-_.a-zA-Z0-9]{0,61}[a-zA-Z0-9])?$/;

/** Why `value` cannot be a label value, or undefined when it can. */
export function labelValueProblem(value: string): string | undefined {
  if (LABEL_VALUE_RE.test(value)) return undefined;
  return `"${value}" is not a Hetzner Cloud label value (at most 63 letters, digits, "-", "_" and ".", beginning and ending with a letter or digit)`;
}

// The mark's labels and their reading are the contract's (the time is the backend's own):
// `markLabels` writes managed, UID and installation, `readMark` reads them with the creation
// time, `parseTimestamp` reads an RFC 3339 time (epoch 0 when unreadable).
export {
  formatOwnerMark as markLabels,
  parseMarkTime as parseTimestamp,
  parseOwnerMark as readMark,
} from '@proxy-op/contract';

/** The label selector of every proxy-op server (the installation is filtered here, not by the API). */
export const MANAGED_SELECTOR = `${MarkKey.Managed}=${MANAGED_VALUE}`;
