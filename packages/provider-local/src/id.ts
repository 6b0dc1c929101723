/**
 * Provider IDs of the `local` provider: `processes/<name>`, the instance
 * name being the key of its state file.
 *
 * @module
 */
import { idFormat } from '@proxy-op/contract';

/** The strict ID format: the IdParser the implementation uses. */
export const localId = idFormat(['processes', ':name'], {
  name: /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/,
});

/** The parts of a `local` provider ID. */
export interface LocalId {
  /** The proxy's name, as the state file records it. */
  readonly name: string;
}

/** Formats `processes/<name>`. */
export function formatId(id: LocalId): string {
  return localId.format(id);
}

/** The parts of an ID, or undefined when it is not `processes/<name>` with a DNS-label name. */
export function parseId(id: string): LocalId | undefined {
  return localId.parse(id);
}
