const encoder = new TextEncoder();

/** Content given as bytes, or as a string to be encoded as UTF-8. */
export type Content = Uint8Array | string;

/**
 * Bytes for `value`: a Uint8Array as it is (not copied), a string as UTF-8.
 * Anything else is programmer misuse and throws TypeError naming `where`.
 */
export function toBytes(value: unknown, where: string): Uint8Array {
  if (typeof value === 'string') return encoder.encode(value);
  if (value instanceof Uint8Array) return value;
  throw new TypeError(`${where} must be a Uint8Array or a string, got ${describe(value)}`);
}

/** UTF-8 bytes of a string. */
export function utf8(text: string): Uint8Array {
  return encoder.encode(text);
}

/** True when `bytes` is well-formed UTF-8. */
export function isUtf8(bytes: Uint8Array): boolean {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    return true;
  } catch {
    return false;
  }
}

/** Concatenates byte arrays into a new one. */
export function concat(parts: readonly Uint8Array[]): Uint8Array {
  let size = 0;
  for (const p of parts) size += p.byteLength;
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

/** The index of `needle` in `haystack`, or -1. */
export function indexOf(haystack: Uint8Array, needle: Uint8Array): number {
  const n = needle.byteLength;
  if (n === 0) return 0;
  const first = needle[0];
  const last = haystack.byteLength - n;
  outer: for (let i = haystack.indexOf(first as number); i !== -1 && i <= last; ) {
    for (let j = 1; j < n; j++) {
      if (haystack[i + j] !== needle[j]) {
        i = haystack.indexOf(first as number, i + 1);
        continue outer;
      }
    }
    return i;
  }
  return -1;
}

/** A short description of a value's type for TypeError messages. */
export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return `an instance of ${value.constructor?.name ?? 'Object'}`;
  return typeof value;
}
