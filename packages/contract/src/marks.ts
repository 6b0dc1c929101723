/**
 * The ownership mark every provider writes on the instances it creates, and
 * reads back to decide what is its own. The first three keys are those of the
 * Go original, so its instances are recognised.
 *
 * @module
 */
import type { Instance, Location, State } from './types.js';

/** Mark keys, as written into labels, metadata or a description. */
export const MarkKey = {
  /** `"true"` on every instance a provider created. */
  Managed: 'proxy-operator-managed',
  /** The Proxy's UID. */
  Uid: 'proxy-operator-uid',
  /** When the instance was created (RFC 3339, UTC). */
  CreatedAt: 'proxy-operator-created-at',
  /** The installation that owns the instance. */
  Installation: 'proxy-operator-installation',
} as const;

/** The value of the managed key. */
export const MANAGED_VALUE = 'true';

/**
 * The installation an instance belongs to when none is named. Instances
 * without an installation key (made before installations existed) count as
 * this installation's.
 */
export const DEFAULT_INSTALLATION = 'default';

const INSTALLATION_RE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** A parsed ownership mark. */
export interface Mark {
  /** The UID of the Proxy the instance was made for. */
  readonly uid: string;
  /** When the instance was created, as written in the mark. */
  readonly createdAt: Date;
  /** The installation that owns the instance. */
  readonly installation: string;
}

/**
 * Checks an installation id: a lowercase DNS label (it ends up in label
 * values on every backend). Returns a message naming the problem, or
 * undefined when it is valid.
 */
export function installationProblem(installation: string): string | undefined {
  if (typeof installation !== 'string') return 'must be a string';
  if (!INSTALLATION_RE.test(installation)) {
    return `"${installation}" is not a lowercase DNS label (a-z, 0-9 and "-", at most 63 characters, starting and ending alphanumeric)`;
  }
  return undefined;
}

/** RFC 3339 UTC with whole seconds, the mark's time format. */
export function formatMarkTime(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** Parses a mark time; an unparsable value gives epoch 0, as the contract asks. */
export function parseMarkTime(s: string | undefined): Date {
  if (s === undefined || s === '') return new Date(0);
  const t = Date.parse(s);
  return Number.isNaN(t) ? new Date(0) : new Date(t);
}

/**
 * The mark as key/value pairs, for backends with labels or key/value
 * metadata.
 */
export function formatMark(mark: Mark): Record<string, string> {
  return {
    [MarkKey.Managed]: MANAGED_VALUE,
    [MarkKey.Uid]: mark.uid,
    [MarkKey.CreatedAt]: formatMarkTime(mark.createdAt),
    [MarkKey.Installation]: mark.installation,
  };
}

/**
 * Reads a mark from key/value pairs. Undefined when the managed key is not
 * `"true"`: such an instance is not ours. A missing UID reads as empty; a
 * missing installation as {@link DEFAULT_INSTALLATION}.
 */
export function parseMark(kv: Readonly<Record<string, string | undefined>>): Mark | undefined {
  if (kv[MarkKey.Managed] !== MANAGED_VALUE) return undefined;
  const installation = kv[MarkKey.Installation];
  return {
    uid: kv[MarkKey.Uid] ?? '',
    createdAt: parseMarkTime(kv[MarkKey.CreatedAt]),
    installation:
      installation === undefined || installation === '' ? DEFAULT_INSTALLATION : installation,
  };
}

/**
 * The mark but its time, as key/value pairs: managed, UID and installation,
 * for a backend that keeps each instance's creation time itself (labels
 * or tags beside a creation timestamp of the backend's own, §4.5 and §4.6).
 */
export function formatOwnerMark(owner: {
  readonly uid: string;
  readonly installation: string;
}): Record<string, string> {
  return {
    [MarkKey.Managed]: MANAGED_VALUE,
    [MarkKey.Uid]: owner.uid,
    [MarkKey.Installation]: owner.installation,
  };
}

/**
 * Reads a mark written by {@link formatOwnerMark}: {@link parseMark} of
 * the pairs, with the backend's own creation time (`createdAt`, RFC 3339;
 * epoch 0 when missing or unreadable). Undefined when the managed key is
 * not `"true"`.
 */
export function parseOwnerMark(
  kv: Readonly<Record<string, string | undefined>>,
  createdAt: string | undefined,
): Mark | undefined {
  const mark = parseMark(kv);
  return mark === undefined ? undefined : { ...mark, createdAt: parseMarkTime(createdAt) };
}

/** True when a mark belongs to `installation` (default when omitted). */
export function belongsTo(mark: Mark, installation: string = DEFAULT_INSTALLATION): boolean {
  return mark.installation === installation;
}

/**
 * The adoption rule of contract §2.1: an existing instance with the
 * request's name may be adopted only when it carries our mark with the same
 * UID or an empty one, for the same installation. Returns why not, or
 * undefined when adoption is allowed.
 */
export function adoptionProblem(
  mark: Mark | undefined,
  want: { uid: string; installation?: string | undefined },
): string | undefined {
  if (mark === undefined) return 'it carries no proxy-op ownership mark';
  const installation = want.installation ?? DEFAULT_INSTALLATION;
  if (mark.installation !== installation) {
    return `it belongs to installation "${mark.installation}", not "${installation}"`;
  }
  if (mark.uid !== '' && mark.uid !== want.uid) {
    return `it belongs to UID ${mark.uid}, not ${want.uid}`;
  }
  return undefined;
}

/**
 * The Delete rule of contract §2.3: Delete removes an instance only when it
 * carries the managed mark and, where the caller names them, the same
 * installation and the same (or an empty) UID. Returns why the instance is
 * not the caller's, or undefined when Delete may remove it.
 */
export function deletionProblem(
  mark: Mark | undefined,
  owner: { readonly uid?: string | undefined; readonly installation?: string | undefined } = {},
): string | undefined {
  if (mark === undefined) return 'it carries no proxy-op ownership mark';
  if (owner.installation !== undefined && mark.installation !== owner.installation) {
    return `it belongs to installation "${mark.installation}", not "${owner.installation}"`;
  }
  if (owner.uid !== undefined && mark.uid !== '' && mark.uid !== owner.uid) {
    return `it belongs to UID ${mark.uid}, not ${owner.uid}`;
  }
  return undefined;
}

/**
 * The ListByTag answer (contract §2.4) from what a backend listing gave:
 * the entries whose mark belongs to `installation`, as instances with ID,
 * UID, creation time and installation, in listing order, plus the state
 * and location an entry carries (what the listing read of them). Entries
 * without a mark are left out.
 */
export function markedInstances(
  installation: string,
  entries: Iterable<{
    readonly id: string;
    readonly mark: Mark | undefined;
    readonly state?: State | undefined;
    readonly location?: Location | undefined;
  }>,
): Instance[] {
  const out: Instance[] = [];
  for (const { id, mark, state, location } of entries) {
    if (mark === undefined || !belongsTo(mark, installation)) continue;
    out.push({
      id,
      uid: mark.uid,
      createdAt: mark.createdAt,
      installation: mark.installation,
      ...(state === undefined ? {} : { state }),
      ...(location === undefined ? {} : { location }),
    });
  }
  return out;
}
