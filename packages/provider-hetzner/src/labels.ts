/**
 * The ownership mark as Hetzner Cloud labels. A label value holds at most
 * 63 letters, digits, `-`, `_` and `.`, beginning and ending with a letter
 * or digit, so the creation time (RFC 3339, with colons) cannot be a
 * label: it is the server's own `created` (profile `createdAt:
 * backend-timestamp`). The managed label's value is `true`.
 *
 * @module
 */
import {
  DEFAULT_INSTALLATION,
  MANAGED_VALUE,
  type Mark,
  MarkKey,
  parseMark,
} from '@proxy-op/contract';

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

/** The labels that mark a server (and its firewall) as proxy-op's: managed, UID and installation. */
export function markLabels(owner: { uid: string; installation: string }): Record<string, string> {
  return {
    [MarkKey.Managed]: MANAGED_VALUE,
    [MarkKey.Uid]: owner.uid,
    [MarkKey.Installation]: owner.installation,
  };
}

/**
 * The mark read from labels and the resource's creation time; undefined
 * when the managed label is not `true`. A missing installation label is
 * the default installation (servers of the Go original).
 */
export function readMark(
  labels: Readonly<Record<string, string>>,
  created: string | undefined,
): Mark | undefined {
  const mark = parseMark(labels);
  if (mark === undefined) return undefined;
  return {
    uid: mark.uid,
    installation: mark.installation === '' ? DEFAULT_INSTALLATION : mark.installation,
    createdAt: parseTimestamp(created),
  };
}

/** Parses an RFC 3339 timestamp as the API writes it (`2016-01-30T23:50:00+00:00`); epoch 0 when unreadable. */
export function parseTimestamp(text: string | undefined): Date {
  if (text === undefined || text === '') return new Date(0);
  const t = Date.parse(text);
  return Number.isNaN(t) ? new Date(0) : new Date(t);
}

/** The label selector of every proxy-op server (the installation is filtered here, not by the API). */
export const MANAGED_SELECTOR = `${MarkKey.Managed}=${MANAGED_VALUE}`;
