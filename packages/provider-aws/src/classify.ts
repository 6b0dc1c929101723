/**
 * The `aws` provider's classify table (§5): EC2's error codes and
 * credentials failures to the contract's error classes.
 *
 * @module
 */
import { type ErrorClass, type Operation, ProviderError } from '@proxy-op/contract';
import { CredentialsError, Ec2ApiError } from './errors.js';

/** Codes of a limit or of capacity: the operator backs off longer and says so. */
const QUOTA = new Set([
  'InstanceLimitExceeded',
  'VcpuLimitExceeded',
  'InsufficientInstanceCapacity',
  'InsufficientCapacity',
  'InsufficientFreeAddressesInSubnet',
  'MaxSpotInstanceCountExceeded',
  'SpotMaxPriceTooLow',
  'SecurityGroupLimitExceeded',
  'RulesPerSecurityGroupLimitExceeded',
  'VolumeLimitExceeded',
  'TagLimitExceeded',
]);

/** Codes that retrying the same call cannot fix: the config, the request or the credentials must change. */
const PERMANENT = new Set([
  'AuthFailure',
  'Blocked',
  'IdempotentParameterMismatch',
  'IncompleteSignature',
  'InvalidClientTokenId',
  'InvalidParameter',
  'InvalidParameterCombination',
  'InvalidParameterValue',
  'InvalidUserData.Malformed',
  'InvalidVpcID.NotFound',
  'MissingAuthenticationToken',
  'MissingParameter',
  'OptInRequired',
  'SignatureDoesNotMatch',
  'UnauthorizedOperation',
  'Unsupported',
  'UnsupportedOperation',
  'VPCIdNotSpecified',
]);

/** Prefixes of codes about a malformed or missing resource the request named (`InvalidAMIID.NotFound`). */
const PERMANENT_PREFIXES = [
  'InvalidAMIID.',
  'InvalidSubnetID.',
  'InvalidGroupId.',
  'InvalidInstanceID.Malformed',
];

/** The class of one EC2 error code (see {@link classify}). */
export function ec2CodeClass(code: string): ErrorClass {
  if (code === 'InvalidInstanceID.NotFound') return 'NotFound';
  if (QUOTA.has(code)) return 'QuotaExceeded';
  if (PERMANENT.has(code) || PERMANENT_PREFIXES.some((p) => code.startsWith(p))) return 'Permanent';
  return 'Transient';
}

/**
 * The `aws` provider's classify table: `InvalidInstanceID.NotFound` is
 * NotFound (Transient inside Create, and reported Transient by Get inside
 * the eventual-consistency window); instance, vCPU, Spot and capacity
 * limits are QuotaExceeded; a refused credential or permission, an
 * unknown AMI, subnet or parameter are Permanent; throttling
 * (`RequestLimitExceeded`), server errors, `IncorrectInstanceState`,
 * `DependencyViolation`, `InvalidGroup.NotFound` (a group not propagated
 * yet), no answer and unknown codes are Transient; credentials that are
 * missing are Transient, unreadable ones Permanent.
 */
export function classify(_op: Operation, err: unknown): ErrorClass {
  if (ProviderError.isInstance(err)) return err.errorClass;
  if (CredentialsError.isInstance(err)) return err.kind === 'invalid' ? 'Permanent' : 'Transient';
  if (Ec2ApiError.isInstance(err)) return ec2CodeClass(err.ec2Code);
  return 'Transient';
}
