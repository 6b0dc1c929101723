/**
 * Provider IDs of the `hetzner` provider: `servers/<name>`. A server's name
 * is unique in its project and is the key (profile `primaryKey:
 * name-is-key`); the project is the token's, and a server cannot leave its
 * location, which the ID therefore does not need (contract §6).
 *
 * @module
 */
import { idFormat } from '@proxy-op/contract';

/** A server name as the provider makes them: a DNS label. */
export const NAME_RE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** The strict ID format: the IdParser the implementation uses. */
export const hetznerId = idFormat(['servers', ':name'], { name: NAME_RE });

/** The parts of a `hetzner` provider ID. */
export interface HetznerId {
  /** The server's name. */
  readonly name: string;
}

/** Formats `servers/<name>`. */
export function formatId(id: HetznerId): string {
  return hetznerId.format(id);
}

/** The parts of an ID, or undefined when it is not `servers/<name>`. */
export function parseId(id: string): HetznerId | undefined {
  return hetznerId.parse(id);
}
