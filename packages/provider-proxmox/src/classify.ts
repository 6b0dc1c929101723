/**
 * Classifying failures into the contract's error classes (§5), and into
 * the Checker's reasons.
 *
 * @module
 */
import {
  type ErrorClass,
  errorClassOf,
  type Operation,
  ProviderError,
  Reason,
  tlsVerifyError,
} from '@proxy-op/contract';
import { ApiError, CaFileError, TokenFileError } from './api.js';

/** A task that ended with an exit status other than `OK` or `WARNINGS: n`. */
export class TaskFailedError extends Error {
  readonly code = 'PROXMOX_TASK_FAILED';
  readonly upid: string;
  readonly exitstatus: string;
  constructor(upid: string, exitstatus: string) {
    super(`task ${upid} failed: ${exitstatus}`);
    this.upid = upid;
    this.exitstatus = exitstatus;
  }
  override get name(): string {
    return 'TaskFailedError';
  }
}

/** A task that did not end within its budget; it keeps running on Proxmox. */
export class TaskTimeoutError extends Error {
  readonly code = 'PROXMOX_TASK_TIMEOUT';
  readonly upid: string;
  constructor(upid: string, budgetMs: number) {
    super(
      `task ${upid} did not finish within ${String(Math.round(budgetMs / 1000))} s; it keeps running on Proxmox`,
    );
    this.upid = upid;
  }
  override get name(): string {
    return 'TaskTimeoutError';
  }
}

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
  return err instanceof ApiError && err.status === 500 && DOES_NOT_EXIST_RE.test(err.apiMessage);
}

/** True for a text (a task's exit status) that says a VM's config file does not exist. */
export function isDoesNotExistText(text: string): boolean {
  return DOES_NOT_EXIST_RE.test(text);
}

/** The destroy's refusal of a VM that runs. */
export const DESTROY_RUNNING_RE = /^VM \d+ is running - destroy failed$/;

/** True for the 500 that refuses to destroy a VM that runs. */
export function isDestroyRunning(err: unknown): boolean {
  return err instanceof ApiError && err.status === 500 && DESTROY_RUNNING_RE.test(err.apiMessage);
}

/** True for the clone's "config file already exists" answer. */
export function isConfigExists(err: unknown): boolean {
  return err instanceof ApiError && err.status === 500 && CONFIG_EXISTS_RE.test(err.apiMessage);
}

/** True for the 400 whose `storage` field error is "No such storage.". */
export function isNoSuchStorage(err: unknown): boolean {
  return (
    err instanceof ApiError && err.status === 400 && err.errors.storage?.trim() === NO_SUCH_STORAGE
  );
}

function codeOf(err: unknown): string | undefined {
  const c = (err as { code?: unknown } | null)?.code;
  return typeof c === 'string' ? c : undefined;
}

/**
 * The provider's classify (§5): Proxmox answers by status and fixed
 * messages, token and CA file problems, TLS verification, and everything
 * else Transient. Inside Create a NotFound is made Transient by
 * `toProviderError`.
 */
export function classify(_op: Operation, err: unknown): ErrorClass {
  if (ProviderError.isInstance(err)) return errorClassOf(err);
  if (err instanceof ApiError) {
    if (err.status === 500 && DOES_NOT_EXIST_RE.test(err.apiMessage)) return 'NotFound';
    if (err.status >= 400 && err.status < 500) return 'Permanent';
    return 'Transient';
  }
  if (err instanceof TokenFileError) {
    return err.code === 'PROXMOX_TOKEN_MISSING' ? 'Transient' : 'Permanent';
  }
  if (err instanceof CaFileError) {
    return err.code === 'PROXMOX_CA_MISSING' ? 'Transient' : 'Permanent';
  }
  if (tlsVerifyError(err) !== undefined) return 'Permanent';
  return 'Transient';
}

/**
 * The Checker's reason for a failed request (contract §3, plus the
 * provider's own), given whether the round's signal has fired.
 */
export function reasonFor(err: unknown, roundAborted: boolean): Reason {
  if (roundAborted) return Reason.Timeout;
  if (err instanceof TokenFileError) return 'CredentialsUnavailable';
  if (err instanceof CaFileError) return 'CertificateInvalid';
  if (tlsVerifyError(err) !== undefined) return 'CertificateInvalid';
  if (err instanceof ApiError) {
    if (err.status === 401) return Reason.Unauthorized;
    if (err.status === 403) return Reason.Forbidden;
    if (err.status === 595 || err.status === 596) return Reason.Unreachable;
    return Reason.APIError;
  }
  const name = (err as { name?: unknown } | null)?.name;
  if (
    name === 'TimeoutError' ||
    codeOf(err) === 'UND_ERR_HEADERS_TIMEOUT' ||
    codeOf(err) === 'UND_ERR_BODY_TIMEOUT'
  ) {
    return Reason.Timeout;
  }
  const code = codeOf(err);
  if (
    code !== undefined &&
    /^(ECONN|EHOST|ENET|ENOTFOUND|EAI_|EPIPE|ETIMEDOUT|UND_ERR_CONNECT_TIMEOUT|UND_ERR_SOCKET|UND_ERR_CLOSED)/.test(
      code,
    )
  ) {
    return Reason.Unreachable;
  }
  return Reason.APIError;
}
