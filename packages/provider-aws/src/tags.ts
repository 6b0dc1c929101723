/**
 * The ownership mark as EC2 tags, the names the provider gives what it
 * makes, and the client tokens of its launches. Tags hold any text, so the
 * whole mark is written, creation time included (profile `createdAt:
 * written-at-create`), on the instance, its volume and network interface
 * and its security group, in the call that makes each.
 *
 * @module
 */
import { createHash } from 'node:crypto';
import { formatMark, type Mark, MarkKey, parseMark } from '@proxy-op/contract';
import type { Ec2Filter } from './seam.js';

/** The tag an instance's name is kept in: the one the EC2 console shows. */
export const NAME_TAG = 'Name';

/**
 * The tag Delete puts on a Spot Instance EC2 is taking back, so that once it
 * is terminated it reads as deleted rather than as Preempted.
 */
export const DELETED_TAG = 'proxy-operator-deleted';

/** The tags of everything made for instance `name`: its name and the mark. */
export function markTags(name: string, mark: Mark): Record<string, string> {
  return { [NAME_TAG]: name, ...formatMark(mark) };
}

/** The mark read from tags; undefined when the managed tag is not `true`. */
export function readMark(tags: Readonly<Record<string, string>>): Mark | undefined {
  return parseMark(tags);
}

/** The server-side filter of everything proxy-op made (the installation is filtered client-side). */
export const MANAGED_FILTER: Ec2Filter = Object.freeze({
  name: `tag:${MarkKey.Managed}`,
  values: Object.freeze(['true']),
});

/** The filter of the instances named `name`. */
export function nameFilter(name: string): Ec2Filter {
  return { name: `tag:${NAME_TAG}`, values: [name] };
}

/** The security group of instance `name`: one per instance name and VPC. */
export function groupNameOf(name: string): string {
  return `proxy-op-${name}`;
}

/** The part of a client token that names the Proxy: a digest of its UID and the instance name. */
function tokenStem(uid: string, name: string): string {
  return `po1-${createHash('sha256').update(`${uid}\n${name}`).digest('hex').slice(0, 40)}-`;
}

/**
 * The client token of launch number `generation` of a Proxy's instance:
 * the same for a repeated Create (EC2 then answers with the instance it
 * made), a new one for each instance that replaces a terminated one (EC2
 * remembers a token for at least a day after its instance is gone).
 */
export function clientToken(uid: string, name: string, generation: number): string {
  return `${tokenStem(uid, name)}${generation}`;
}

/** The generation of a client token made by {@link clientToken} for this UID and name, or undefined. */
export function generationOf(token: string, uid: string, name: string): number | undefined {
  const stem = tokenStem(uid, name);
  if (!token.startsWith(stem)) return undefined;
  const n = token.slice(stem.length);
  return /^\d{1,6}$/.test(n) ? Number(n) : undefined;
}
