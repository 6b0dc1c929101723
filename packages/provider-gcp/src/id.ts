/**
 * Provider IDs of the `gcp` provider: `zones/<zone>/instances/<name>`.
 * The project comes from the config; an instance cannot leave its zone,
 * so the zone belongs in the ID (contract §6).
 *
 * @module
 */
import { idFormat } from '@proxy-op/contract';
import { NAME_RE, ZONE_RE } from './config.js';

/** The strict ID format: the IdParser the implementation uses. */
export const gcpId = idFormat(['zones', ':zone', 'instances', ':name'], {
  zone: ZONE_RE,
  name: NAME_RE,
});

/** The parts of a `gcp` provider ID. */
export interface GcpId {
  /** The instance's zone. */
  readonly zone: string;
  /** The instance's name. */
  readonly name: string;
}

/** Formats `zones/<zone>/instances/<name>`. */
export function formatId(id: GcpId): string {
  return gcpId.format(id);
}

/** The parts of an ID, or undefined when it is not `zones/<zone>/instances/<name>`. */
export function parseId(id: string): GcpId | undefined {
  return gcpId.parse(id);
}

/** The link the API writes into an operation's `targetLink` for an instance. */
export function instanceLink(project: string, id: GcpId): string {
  return `https://www.googleapis.com/compute/v1/projects/${project}/zones/${id.zone}/instances/${id.name}`;
}
