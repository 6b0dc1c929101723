/**
 * The message of a thrown value, for logs, statuses and errors.
 *
 * @module
 */

/** `err.message` for an Error, the value as a string otherwise. */
export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
