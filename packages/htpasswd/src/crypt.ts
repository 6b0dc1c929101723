/**
 * SHA-crypt password hashes, as crypt(3) writes them on Linux: SHA-512
 * (`$6$`) and SHA-256 (`$5$`), with the default 5000 rounds or a
 * `rounds=N$` of their own, so a hash made here is one Squid's
 * `basic_ncsa_auth` and the system's own crypt accept. Written from the
 * published description of the scheme (its steps are numbered in the
 * comments below), with `node:crypto` for the digests.
 *
 * @module
 */
import { crypto } from './lazy-crypto.js';

/** The 64 characters of crypt's base-64, in the order of their values. */
const ALPHABET = './0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** Rounds when a hash names none. */
const DEFAULT_ROUNDS = 5000;
const MIN_ROUNDS = 1000;
const MAX_ROUNDS = 999_999_999;
/** The longest salt; a longer one is cut to this. */
const MAX_SALT = 16;

/** One of the two schemes. */
interface Scheme {
  /** `6` or `5`, as in the hash's `$6$` prefix. */
  readonly id: string;
  /** The digest `node:crypto` computes. */
  readonly digest: 'sha512' | 'sha256';
  /** Bytes of one digest. */
  readonly size: number;
  /** The digest's bytes in the order they are encoded, three at a time (the last group shorter). */
  readonly order: readonly (readonly number[])[];
  /** Characters of the encoded digest. */
  readonly encodedLength: number;
}

const SHA512: Scheme = {
  id: '6',
  digest: 'sha512',
  size: 64,
  order: [
    [0, 21, 42],
    [22, 43, 1],
    [44, 2, 23],
    [3, 24, 45],
    [25, 46, 4],
    [47, 5, 26],
    [6, 27, 48],
    [28, 49, 7],
    [50, 8, 29],
    [9, 30, 51],
    [31, 52, 10],
    [53, 11, 32],
    [12, 33, 54],
    [34, 55, 13],
    [56, 14, 35],
    [15, 36, 57],
    [37, 58, 16],
    [59, 17, 38],
    [18, 39, 60],
    [40, 61, 19],
    [62, 20, 41],
    [63],
  ],
  encodedLength: 86,
};

const SHA256: Scheme = {
  id: '5',
  digest: 'sha256',
  size: 32,
  order: [
    [0, 10, 20],
    [21, 1, 11],
    [12, 22, 2],
    [3, 13, 23],
    [24, 4, 14],
    [15, 25, 5],
    [6, 16, 26],
    [27, 7, 17],
    [18, 28, 8],
    [9, 19, 29],
    [31, 30],
  ],
  encodedLength: 43,
};

/** `length` bytes of `block` repeated (whole copies, then the start of one more). */
function repeatTo(block: Buffer, length: number): Buffer {
  const out = Buffer.allocUnsafe(length);
  for (let at = 0; at < length; at += block.length) block.copy(out, at, 0, length - at);
  return out;
}

/** Crypt's base-64 of the digest: each group as one number, six bits a character, low bits first. */
function encode(scheme: Scheme, c: Buffer): string {
  let out = '';
  for (const group of scheme.order) {
    let w = 0;
    for (const i of group) w = (w << 8) | (c[i] as number);
    for (let n = group.length + 1; n > 0; n--) {
      out += ALPHABET[w & 0x3f];
      w >>>= 6;
    }
  }
  return out;
}

/** Rounds run between two looks at the clock by {@link verifyPasswordSliced}. */
const ROUNDS_PER_STEP = 64;

/** The digest part of a hash of `password` with `salt` (already cut to 16 bytes) and `rounds`. */
function digestOf(scheme: Scheme, password: Buffer, salt: Buffer, rounds: number): string {
  const steps = digestSteps(scheme, password, salt, rounds);
  for (;;) {
    const step = steps.next();
    if (step.done === true) return step.value;
  }
}

/**
 * The digest part, computed in steps: the generator yields after every
 * {@link ROUNDS_PER_STEP} rounds, so a caller can hand the event loop back
 * between them, and returns the digest.
 */
function* digestSteps(
  scheme: Scheme,
  password: Buffer,
  salt: Buffer,
  rounds: number,
): Generator<void, string, void> {
  const { createHash, hash: digestOnce } = crypto();
  const h = () => createHash(scheme.digest);
  const p = password;
  const s = salt;
  // Digest B: the password, the salt, the password.
  const b = h().update(p).update(s).update(p).digest();
  // Digest A: the password, the salt, then as many bytes of B as the password has...
  const a = h().update(p).update(s);
  a.update(repeatTo(b, p.length));
  // ...then, for each bit of the password's length from the lowest, B for a 1 and the password for a 0.
  for (let n = p.length; n > 0; n >>>= 1) a.update(n & 1 ? b : p);
  let c = a.digest();
  // Sequence P: the digest of the password repeated once per byte of it, cut to its length.
  const dp = h();
  for (let i = 0; i < p.length; i++) dp.update(p);
  const pSeq = repeatTo(dp.digest(), p.length);
  // Sequence S: the digest of the salt repeated 16 + A[0] times, cut to the salt's length.
  const ds = h();
  for (let i = 0; i < 16 + (c[0] as number); i++) ds.update(s);
  const sSeq = repeatTo(ds.digest(), s.length);
  // The rounds: each digests the previous result with P and S in an order set by its number.
  // Each round's input is gathered in one buffer and digested in one call.
  const input = Buffer.allocUnsafe(2 * scheme.size + 2 * p.length + s.length);
  for (let i = 0; i < rounds; i++) {
    let n = (i & 1 ? pSeq : c).copy(input, 0);
    if (i % 3 !== 0) n += sSeq.copy(input, n);
    if (i % 7 !== 0) n += pSeq.copy(input, n);
    n += (i & 1 ? c : pSeq).copy(input, n);
    c = digestOnce(scheme.digest, input.subarray(0, n), 'buffer');
    if (i % ROUNDS_PER_STEP === ROUNDS_PER_STEP - 1) yield;
  }
  return encode(scheme, c);
}

/** A hash's parts, or undefined when it is not a SHA-crypt hash this module reads. */
interface Parsed {
  readonly scheme: Scheme;
  /** `rounds=N$` as written, or '' when the hash names no rounds. */
  readonly roundsPart: string;
  readonly rounds: number;
  readonly salt: string;
  readonly digest: string;
}

/**
 * `$id$`, an optional `rounds=N$` (a decimal without leading zeros), a salt
 * of up to 16 characters of the alphabet, `$` and the digest: what the
 * system's crypt (libxcrypt) accepts; it refuses other salt characters and
 * rounds outside 1000 to 999,999,999 rather than clamping them.
 */
const HASH = /^\$([56])\$(?:rounds=([1-9]\d{3,8})\$)?([./0-9A-Za-z]{0,16})\$([./0-9A-Za-z]+)$/;

function parseHash(hash: string): Parsed | undefined {
  const m = HASH.exec(hash);
  if (m === null) return undefined;
  const scheme = m[1] === '6' ? SHA512 : SHA256;
  const digest = m[4] as string;
  if (digest.length !== scheme.encodedLength) return undefined;
  const named = m[2];
  const rounds = named === undefined ? DEFAULT_ROUNDS : Number(named);
  return {
    scheme,
    roundsPart: named === undefined ? '' : `rounds=${rounds}$`,
    rounds,
    salt: m[3] as string,
    digest,
  };
}

/** A fresh salt: 16 characters of crypt's alphabet from `randomBytes` (6 bits each). */
function randomSalt(): string {
  const bytes = crypto().randomBytes(MAX_SALT);
  let salt = '';
  for (const byte of bytes) salt += ALPHABET[byte & 0x3f];
  return salt;
}

/** Options of {@link hashPassword}. */
export interface HashOptions {
  /**
   * The salt: up to 16 characters of `./0-9A-Za-z` (longer is cut to 16);
   * 16 random ones when unset.
   */
  readonly salt?: string | undefined;
  /**
   * Rounds of SHA-512, an integer from 1000 to 999,999,999; unset, the
   * default 5000, and the hash names none.
   */
  readonly rounds?: number | undefined;
}

/**
 * A SHA-512-crypt hash of `password` (its UTF-8 bytes):
 * `$6$<salt>$<86 characters>`, or `$6$rounds=N$<salt>$...` when `rounds`
 * is given. The same string crypt(3) writes for the same salt and rounds.
 * Throws a `RangeError` for a salt with characters outside `./0-9A-Za-z`
 * or rounds outside 1000 to 999,999,999, which crypt refuses.
 */
export function hashPassword(password: string, options: HashOptions = {}): string {
  const salt = (options.salt ?? randomSalt()).slice(0, MAX_SALT);
  if (!/^[./0-9A-Za-z]*$/.test(salt)) {
    throw new RangeError('salt: only the characters ./0-9A-Za-z may be used');
  }
  const rounds = options.rounds ?? DEFAULT_ROUNDS;
  if (!Number.isInteger(rounds) || rounds < MIN_ROUNDS || rounds > MAX_ROUNDS) {
    throw new RangeError(`rounds: ${String(rounds)} is not an integer from 1000 to 999999999`);
  }
  const roundsPart = options.rounds === undefined ? '' : `rounds=${rounds}$`;
  const digest = digestOf(SHA512, Buffer.from(password, 'utf8'), Buffer.from(salt), rounds);
  return `$6$${roundsPart}${salt}$${digest}`;
}

/**
 * True when `password` (a string, taken as UTF-8, or its bytes) matches
 * `hash`, a SHA-512-crypt (`$6$`) or SHA-256-crypt (`$5$`) hash. The
 * result is compared in constant time. False, never a throw, for a hash
 * of another scheme or one that is malformed.
 */
export function verifyPassword(password: string | Uint8Array, hash: string): boolean {
  const parsed = parseHash(hash);
  if (parsed === undefined) return false;
  return matches(
    parsed,
    hash,
    digestOf(parsed.scheme, bytesOf(password), Buffer.from(parsed.salt), parsed.rounds),
  );
}

function bytesOf(password: string | Uint8Array): Buffer {
  return typeof password === 'string' ? Buffer.from(password, 'utf8') : Buffer.from(password);
}

/** The hash made from `digest` compared with the one given, in constant time. */
function matches(parsed: Parsed, hash: string, digest: string): boolean {
  const made = Buffer.from(`$${parsed.scheme.id}$${parsed.roundsPart}${parsed.salt}$${digest}`);
  const given = Buffer.from(hash);
  return made.length === given.length && crypto().timingSafeEqual(made, given);
}

/**
 * {@link verifyPassword} in slices of at most about `sliceMs` of CPU time,
 * the event loop handed back between them (`setImmediate`), so a check
 * that costs tens of milliseconds never holds other clients up for longer
 * than one slice. Resolves with what {@link verifyPassword} returns for the
 * same arguments; never rejects.
 */
export function verifyPasswordSliced(
  password: string | Uint8Array,
  hash: string,
  sliceMs = 1,
): Promise<boolean> {
  const parsed = parseHash(hash);
  if (parsed === undefined) return Promise.resolve(false);
  const steps = digestSteps(
    parsed.scheme,
    bytesOf(password),
    Buffer.from(parsed.salt),
    parsed.rounds,
  );
  return new Promise((resolve) => {
    const slice = () => {
      const until = process.hrtime.bigint() + BigInt(Math.round(sliceMs * 1e6));
      for (;;) {
        const step = steps.next();
        if (step.done === true) {
          resolve(matches(parsed, hash, step.value));
          return;
        }
        if (process.hrtime.bigint() >= until) break;
      }
      setImmediate(slice);
    };
    slice();
  });
}
