/**
 * `@proxy-op/htpasswd`: the lines of a password file as Squid's
 * `basic_ncsa_auth` and the system's crypt(3) read them. Makes
 * SHA-512-crypt hashes, verifies SHA-512-crypt and SHA-256-crypt ones (at
 * once, or in slices that hand the event loop back), and reads a file's
 * `username:hash` lines. No runtime dependencies; `node:crypto` is loaded
 * on the first hash or verification, not on import.
 *
 * @module
 */
export {
  type HashOptions,
  hashPassword,
  verifyPassword,
  verifyPasswordSliced,
} from './crypt.js';
export { type PasswordEntries, parsePasswordFile } from './password-file.js';
