/**
 * The API token file: one line `user@realm!tokenid=secret`, read on every
 * request so a rotated token is used at once.
 *
 * @module
 */
import { readFile } from 'node:fs/promises';
import { TokenFileError } from './errors.js';

const TOKEN_RE = /^([^\s@!=]+@[^\s@!=]+![^\s=]+)=(\S+)$/;

/** A token read from its file. */
export interface Token {
  /** `user@realm!tokenid`, the part before `=`. Safe to log. */
  readonly id: string;
  /** The whole line, for the Authorization header. Never logged. */
  readonly line: string;
  /** The part after `=`. Never logged. */
  readonly secret: string;
}

/** Where a token's secret parts are declared, so they are redacted (a `SecretSet`). */
export interface SecretSink {
  add(value: string): void;
}

/**
 * Reads and checks the token file. A missing file is
 * `PROXMOX_TOKEN_MISSING`, any other content `PROXMOX_TOKEN_MALFORMED`;
 * neither message quotes the content. Whatever the file holds is declared
 * to `secrets` before anything else happens, so no error can carry it.
 */
export async function readToken(path: string, secrets?: SecretSink): Promise<Token> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    throw new TokenFileError(
      'PROXMOX_TOKEN_MISSING',
      `token file ${path} cannot be read (${typeof code === 'string' ? code : 'error'})`,
    );
  }
  const line = text.trim();
  secrets?.add(line);
  const m = TOKEN_RE.exec(line);
  if (m === null || line.includes('\n')) {
    throw new TokenFileError(
      'PROXMOX_TOKEN_MALFORMED',
      `token file ${path} does not hold one line user@realm!tokenid=secret`,
    );
  }
  const secret = m[2] as string;
  secrets?.add(secret);
  return { id: m[1] as string, line, secret };
}
