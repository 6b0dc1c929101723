/**
 * Provider IDs: `hosts/<host>/domains/<name>`. The host is the config name
 * of the hypervisor, the name the domain's (and the instance's) name.
 *
 * @module
 */
import { type IdFormat, idFormat } from '@proxy-op/contract';

/** A config host name: a lowercase DNS label (it is an ID segment). */
export const HOST_NAME_RE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
/** A domain name the engine makes or reads: a lowercase DNS label, as instance names are. */
export const DOMAIN_NAME_RE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** A parsed provider ID. */
export interface DomainId {
  /** The host's config name. */
  readonly host: string;
  /** The domain's name on that host. */
  readonly name: string;
}

/** The strict ID format; `parse` gives undefined for anything else (Permanent from the shell). */
export const domainIds: IdFormat<'host' | 'name'> = idFormat(
  ['hosts', ':host', 'domains', ':name'],
  {
    host: HOST_NAME_RE,
    name: DOMAIN_NAME_RE,
  },
);

/** Formats `hosts/<host>/domains/<name>`. */
export function formatId(id: DomainId): string {
  return domainIds.format(id);
}

/** The parts of a provider ID, or undefined when it is malformed. */
export function parseId(id: string): DomainId | undefined {
  return domainIds.parse(id);
}
