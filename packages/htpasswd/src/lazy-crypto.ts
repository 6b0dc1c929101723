/**
 * `node:crypto`, loaded when first used. Loading it costs a process about
 * 1.5 MiB of resident memory (OpenSSL's tables and Node.js's crypto
 * modules), which a program that imports this package but never hashes or
 * verifies (a proxy without authentication) never needs.
 *
 * @module
 */
import type * as Crypto from 'node:crypto';

let loaded: typeof Crypto | undefined;

/** The `node:crypto` module, loaded on the first call. */
export function crypto(): typeof Crypto {
  loaded ??= process.getBuiltinModule('node:crypto');
  return loaded;
}
