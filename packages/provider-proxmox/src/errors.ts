/**
 * The Proxmox backend's failures, found as a `ProviderError`'s `cause`:
 * API answers, the token and CA files, tasks. Each is branded:
 * `ApiError.isInstance(err)` works across two installed copies of this
 * package.
 *
 * @module
 */
import { BackendError } from '@proxy-op/contract';

/**
 * An answer from Proxmox other than 2xx: the status, the message (the
 * body's `message` without its trailing newline, or the reason phrase when
 * there is no body) and, for a 400, the per-parameter errors. It never
 * carries request headers or URLs, so no credential can reach it.
 */
export class ApiError extends BackendError {
  /** `@proxy-op/provider-proxmox.ApiError`: the key of the class's brand. */
  static override readonly brand: string = '@proxy-op/provider-proxmox.ApiError';
  /** A stable code for this class of error. */
  readonly code = 'PROXMOX_API_ERROR';
  /** The HTTP status of the answer. */
  readonly status: number;
  /** Per-parameter errors of a 400 answer. */
  readonly errors: Readonly<Record<string, string>>;
  /** The message Proxmox gave, without the status. */
  readonly apiMessage: string;
  constructor(status: number, message: string, errors: Readonly<Record<string, string>> = {}) {
    const fieldErrors = Object.entries(errors)
      .map(([k, v]) => `${k}: ${v.trim()}`)
      .join('; ');
    super(`${status} ${message}${fieldErrors === '' ? '' : ` (${fieldErrors})`}`);
    this.status = status;
    this.errors = errors;
    this.apiMessage = message;
  }
}

/** A problem with a file the provider reads: missing (it may appear) or unusable. */
abstract class FileError<Code extends string> extends BackendError {
  readonly code: Code;
  constructor(code: Code, message: string) {
    super(message);
    this.code = code;
  }
}

/** A problem with the token file: missing (the Secret has not landed) or malformed. */
export class TokenFileError extends FileError<'PROXMOX_TOKEN_MISSING' | 'PROXMOX_TOKEN_MALFORMED'> {
  /** `@proxy-op/provider-proxmox.TokenFileError`: the key of the class's brand. */
  static override readonly brand: string = '@proxy-op/provider-proxmox.TokenFileError';
}

/** A problem with the CA file: missing (Transient) or holding no certificate (Permanent). */
export class CaFileError extends FileError<'PROXMOX_CA_MISSING' | 'PROXMOX_CA_INVALID'> {
  /** `@proxy-op/provider-proxmox.CaFileError`: the key of the class's brand. */
  static override readonly brand: string = '@proxy-op/provider-proxmox.CaFileError';
}

/** A task that ended with an exit status other than `OK` or `WARNINGS: n`. */
export class TaskFailedError extends BackendError {
  /** `@proxy-op/provider-proxmox.TaskFailedError`: the key of the class's brand. */
  static override readonly brand: string = '@proxy-op/provider-proxmox.TaskFailedError';
  /** Always `PROXMOX_TASK_FAILED`. */
  readonly code = 'PROXMOX_TASK_FAILED';
  /** The task's UPID. */
  readonly upid: string;
  /** The task's exit status, as Proxmox wrote it. */
  readonly exitstatus: string;
  constructor(upid: string, exitstatus: string) {
    super(`task ${upid} failed: ${exitstatus}`);
    this.upid = upid;
    this.exitstatus = exitstatus;
  }
}

/** A task that did not end within its budget; it keeps running on Proxmox. */
export class TaskTimeoutError extends BackendError {
  /** `@proxy-op/provider-proxmox.TaskTimeoutError`: the key of the class's brand. */
  static override readonly brand: string = '@proxy-op/provider-proxmox.TaskTimeoutError';
  /** Always `PROXMOX_TASK_TIMEOUT`. */
  readonly code = 'PROXMOX_TASK_TIMEOUT';
  /** The task's UPID. */
  readonly upid: string;
  constructor(upid: string, budgetMs: number) {
    super(
      `task ${upid} did not finish within ${String(Math.round(budgetMs / 1000))} s; it keeps running on Proxmox`,
    );
    this.upid = upid;
  }
}
