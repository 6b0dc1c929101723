/**
 * Provider IDs of the `aws` provider: `regions/<region>/instances/<name>`.
 * EC2 allocates an instance's own ID (`i-…`) at random, so the provider's
 * ID is the instance's name (its `Name` tag) in its region: the same
 * request gets the same ID after a Delete, as the contract asks (§4.10
 * `name-is-key`), and a Spot Instance that EC2 took back is replaced under
 * the same ID.
 *
 * @module
 */
import { idFormat } from '@proxy-op/contract';
import { NAME_RE, REGION_RE } from './config.js';

/** The strict ID format: the IdParser the implementation uses. */
export const awsId = idFormat(['regions', ':region', 'instances', ':name'], {
  region: REGION_RE,
  name: NAME_RE,
});

/** The parts of an `aws` provider ID. */
export interface AwsId {
  /** The instance's region. */
  readonly region: string;
  /** The instance's name: its `Name` tag. */
  readonly name: string;
}

/** Formats `regions/<region>/instances/<name>`. */
export function formatId(id: AwsId): string {
  return awsId.format(id);
}

/** The parts of an ID, or undefined when it is not `regions/<region>/instances/<name>`. */
export function parseId(id: string): AwsId | undefined {
  return awsId.parse(id);
}
