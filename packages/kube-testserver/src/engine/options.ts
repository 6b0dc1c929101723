/**
 * The options a write or a delete carries into the engine, read by the
 * handlers from the request's query and body.
 *
 * @module
 */

/** Options every write carries (query parameters of the request). */
export interface WriteOptions {
  readonly fieldManager: string;
  readonly dryRun: boolean;
  readonly fieldValidation: 'Strict' | 'Warn' | 'Ignore';
  /** Warnings collected for the `Warning` response header. */
  readonly warnings: string[];
  /** The verb, for the error a strict decoding failure becomes. */
  readonly verb: 'create' | 'update' | 'patch';
}

/** `metav1.DeleteOptions`, from the body or the query. */
export interface DeleteOptions {
  readonly propagationPolicy?: 'Orphan' | 'Background' | 'Foreground';
  readonly preconditions?: { uid?: string; resourceVersion?: string };
  readonly dryRun: boolean;
  /** Seconds a graceful deletion (of a scheduled pod) may take; 0 deletes now. */
  readonly gracePeriodSeconds?: number;
}
