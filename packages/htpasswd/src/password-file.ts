/**
 * The text of a password file: htpasswd-style `username:hash` lines, the
 * format Squid's `basic_ncsa_auth` reads.
 *
 * @module
 */

/** What {@link parsePasswordFile} read: username to hash, and the lines it skipped. */
export interface PasswordEntries extends Map<string, string> {
  /**
   * The numbers (from 1) of the lines that were skipped as malformed: no
   * `:`, an empty username or hash, a control character, or a username
   * already given on an earlier line (the first one counts). Only the
   * numbers are kept, never the lines, so saying them shows no hash.
   */
  readonly skippedLines: readonly number[];
}

// Control characters (C0 and DEL): no username or hash holds one.
// biome-ignore lint/suspicious/noControlCharactersInRegex: the characters it looks for
const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * Reads a password file's text: one `username:hash` per line (a field
 * after a second `:` is ignored, as `basic_ncsa_auth` does), `#` comments
 * and blank lines ignored, CRLF line ends taken as LF. A malformed line is
 * skipped and its number kept in `skippedLines`.
 */
export function parsePasswordFile(text: string): PasswordEntries {
  const users = new Map<string, string>();
  const skippedLines: number[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = (lines[i] as string).replace(/\r$/, '');
    const start = line.trimStart();
    if (start === '' || start.startsWith('#')) continue;
    const colon = line.indexOf(':');
    const user = colon < 0 ? '' : line.slice(0, colon);
    const hash = colon < 0 ? '' : (line.slice(colon + 1).split(':')[0] as string);
    if (user === '' || hash === '' || CONTROL.test(line) || users.has(user)) {
      skippedLines.push(i + 1);
      continue;
    }
    users.set(user, hash);
  }
  return Object.assign(users, { skippedLines });
}
