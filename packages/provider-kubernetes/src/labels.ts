/**
 * The ownership mark as Pod labels. Label values cannot hold an RFC 3339
 * time, so the creation time is the Pod's own `creationTimestamp`
 * (`createdAt: backend-timestamp`); the other keys are the contract's.
 *
 * @module
 */
import { MANAGED_VALUE, type Mark, MarkKey, parseMark, parseMarkTime } from '@proxy-op/contract';

/** The labels every proxy Pod carries besides the mark. */
export const APP_LABELS = Object.freeze({
  'app.kubernetes.io/name': 'proxy-op-squid',
  'app.kubernetes.io/managed-by': 'proxy-op',
});

/** The label selector of every managed Pod (of one installation, when it is not the default). */
export function managedSelector(installation: string): string {
  const managed = `${MarkKey.Managed}=${MANAGED_VALUE}`;
  // A mark without the installation key belongs to the default installation, which an
  // equality selector cannot express: the default's listing filters after the fact.
  return installation === 'default'
    ? managed
    : `${managed},${MarkKey.Installation}=${installation}`;
}

const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/** Why `value` cannot be a label value, or undefined when it can. */
export function labelValueProblem(value: string): string | undefined {
  if (value.length > 63) return 'is longer than 63 characters';
  if (!LABEL_VALUE.test(value)) {
    return 'is not a label value (letters, digits, "-", "_" and ".", starting and ending alphanumeric)';
  }
  return undefined;
}

/** The mark's labels for a new Pod. */
export function markLabels(uid: string, installation: string): Record<string, string> {
  return {
    [MarkKey.Managed]: MANAGED_VALUE,
    [MarkKey.Uid]: uid,
    [MarkKey.Installation]: installation,
  };
}

/** The mark of a Pod: its labels, with `creationTimestamp` as the creation time. */
export function podMark(
  labels: Readonly<Record<string, string>> | undefined,
  creationTimestamp: Date | string | undefined,
): Mark | undefined {
  const mark = parseMark(labels ?? {});
  if (mark === undefined) return undefined;
  const at =
    creationTimestamp instanceof Date
      ? creationTimestamp
      : parseMarkTime(creationTimestamp === undefined ? undefined : String(creationTimestamp));
  return { ...mark, createdAt: Number.isNaN(at.getTime()) ? new Date(0) : at };
}
