/**
 * The ownership mark as Compute Engine labels. A label value holds only
 * lowercase letters, digits, `_` and `-` (at most 63 characters), so the
 * creation time cannot be a label: it is the instance's own
 * `creationTimestamp` (profile `createdAt: backend-timestamp`). The managed
 * label's value is `true`.
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

/** The labels that mark an instance as proxy-op's: managed, UID and installation. */
export function markLabels(owner: { uid: string; installation: string }): Record<string, string> {
  return {
    [MarkKey.Managed]: MANAGED_VALUE,
    [MarkKey.Uid]: owner.uid,
    [MarkKey.Installation]: owner.installation,
  };
}

/**
 * The mark read from an instance's labels and creation time; undefined when
 * the managed label is not `true`. A missing installation label is the
 * default installation (instances of the Go original).
 */
export function readMark(
  labels: Readonly<Record<string, string>>,
  creationTimestamp: string | undefined,
): Mark | undefined {
  const mark = parseMark(labels);
  if (mark === undefined) return undefined;
  return {
    uid: mark.uid,
    installation: mark.installation === '' ? DEFAULT_INSTALLATION : mark.installation,
    createdAt: parseTimestamp(creationTimestamp),
  };
}

/** Parses an RFC 3339 timestamp as the API writes it (`2024-05-01T09:12:44.123-07:00`); epoch 0 when unreadable. */
export function parseTimestamp(text: string | undefined): Date {
  if (text === undefined || text === '') return new Date(0);
  const t = Date.parse(text);
  return Number.isNaN(t) ? new Date(0) : new Date(t);
}

/** The server-side filter of every proxy-op instance (the installation is filtered client-side). */
export const MANAGED_FILTER = `labels.${MarkKey.Managed} = "${MANAGED_VALUE}"`;
