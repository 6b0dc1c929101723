/**
 * Classifying failures into the contract's error classes (§5), and the
 * predicates of Proxmox's answers the operations and the Checker share.
 *
 * @module
 */
import {
  type ErrorClass,
  errorClassOf,
  type Operation,
  ProviderError,
  tlsVerifyError,
} from '@proxy-op/contract';
import { ApiError, CaFileError, TokenFileError } from './errors.js';

/** The whole message of a 500 for a VM whose config is gone (prefix and suffix). */
const DOES_NOT_EXIST_RE = /^Configuration file '[^']*' does not exist$/;
/** The 400 field error for a storage the cluster does not know. */
export const NO_SUCH_STORAGE = 'No such storage.';
/** The clone's answer when the VMID was taken between the listing and the clone. */
export const CONFIG_EXISTS_RE = /^unable to create VM \d+: config file already exists$/;
/** The agent's answer while it is not (yet) running in the guest. */
export const AGENT_NOT_RUNNING = 'QEMU guest agent is not running';
/** The agent's answer when `agent: 1` is not in the VM's config. */
export const AGENT_NOT_CONFIGURED = 'No QEMU guest agent configured';

/** True for the 500 that says a VM's config file does not exist. */
export function isDoesNotExist(err: unknown): boolean {
  return ApiError.isInstance(err) && err.status === 500 && DOES_NOT_EXIST_RE.test(err.apiMessage);
}

/** True for a text (a task's exit status) that says a VM's config file does not exist. */
export function isDoesNotExistText(text: string): boolean {
  return DOES_NOT_EXIST_RE.test(text);
}

/** The destroy's refusal of a VM that runs. */
export const DESTROY_RUNNING_RE = /^VM \d+ is running - destroy failed$/;

/** True for the 500 that refuses to destroy a VM that runs. */
export function isDestroyRunning(err: unknown): boolean {
  return ApiError.isInstance(err) && err.status === 500 && DESTROY_RUNNING_RE.test(err.apiMessage);
}

/** True for the clone's "config file already exists" answer. */
export function isConfigExists(err: unknown): boolean {
  return ApiError.isInstance(err) && err.status === 500 && CONFIG_EXISTS_RE.test(err.apiMessage);
}

/** True for the 400 whose `storage` field error is "No such storage.". */
export function isNoSuchStorage(err: unknown): boolean {
  return (
    ApiError.isInstance(err) && err.status === 400 && err.errors.storage?.trim() === NO_SUCH_STORAGE
  );
}

/**
 * The provider's classify (§5): Proxmox answers by status and fixed
 * messages, token and CA file problems, TLS verification, and everything
 * else Transient. Inside Create a NotFound is made Transient by
 * `toProviderError`.
 */
export function classify(_op: Operation, err: unknown): ErrorClass {
  if (ProviderError.isInstance(err)) return errorClassOf(err);
  if (ApiError.isInstance(err)) {
    if (err.status === 500 && DOES_NOT_EXIST_RE.test(err.apiMessage)) return 'NotFound';
    if (err.status >= 400 && err.status < 500) return 'Permanent';
    return 'Transient';
  }
  if (TokenFileError.isInstance(err)) {
    return err.code === 'PROXMOX_TOKEN_MISSING' ? 'Transient' : 'Permanent';
  }
  if (CaFileError.isInstance(err)) {
    return err.code === 'PROXMOX_CA_MISSING' ? 'Transient' : 'Permanent';
  }
  if (tlsVerifyError(err) !== undefined) return 'Permanent';
  return 'Transient';
}
