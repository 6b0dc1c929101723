/**
 * Secret values a provider reads at run time (tokens, keys, passwords from
 * mounted files), and their redaction from messages, errors and log lines
 * in every form a backend or a library is likely to echo them: plain,
 * base64 (standard and URL alphabets, at any byte offset, as in a Basic
 * authorization header), hexadecimal and URL-encoded.
 *
 * @module
 */
import type { Logger } from './logger.js';

/** What a redacted value is replaced by. */
export const REDACTED = '[redacted]';

/** Secrets shorter than this are not tracked: redacting them would mangle ordinary text. */
export const MIN_SECRET_LENGTH = 6;

const MAX_DEPTH = 8;

/**
 * The secret values of one provider. The operation shell hands one to the
 * provider (`deps.secrets`); the provider adds every credential it reads,
 * and the shell redacts them from errors, log lines and Checker results.
 */
export class SecretSet {
  readonly #values = new Set<string>();
  #forms: string[] = [];

  /** Tracks a secret value; values shorter than {@link MIN_SECRET_LENGTH} are ignored. */
  add(value: string | Uint8Array | undefined): void {
    if (value === undefined) return;
    const text = typeof value === 'string' ? value : Buffer.from(value).toString('utf8');
    const trimmed = text.trim();
    for (const v of new Set([text, trimmed])) {
      if (v.length < MIN_SECRET_LENGTH || this.#values.has(v)) continue;
      this.#values.add(v);
      this.#forms = [...new Set([...this.#forms, ...encodedForms(v)])].sort(
        (a, b) => b.length - a.length,
      );
    }
  }

  /** How many secret values are tracked. */
  get size(): number {
    return this.#values.size;
  }

  /** True when `text` holds a tracked secret in any of its forms. */
  leaksInto(text: string): boolean {
    for (const f of this.#forms) if (text.includes(f)) return true;
    return false;
  }

  /** `text` with every form of every tracked secret replaced by {@link REDACTED}. */
  redact(text: string): string {
    if (this.#forms.length === 0) return text;
    let out = text;
    for (const f of this.#forms) {
      if (out.includes(f)) out = out.split(f).join(REDACTED);
    }
    return out;
  }

  /**
   * `value` with secrets redacted: strings, arrays, plain objects, byte
   * arrays and errors (message, stack, own fields and the `cause` chain),
   * copied only where something had to change; an error keeps its
   * prototype, so `instanceof` and the class's getters still work.
   */
  redactValue<T>(value: T): T {
    if (this.#forms.length === 0) return value;
    return this.#deep(value, 0, new Map()) as T;
  }

  #deep(value: unknown, depth: number, seen: Map<object, unknown>): unknown {
    if (typeof value === 'string') return this.redact(value);
    if (value === null || typeof value !== 'object' || depth > MAX_DEPTH) return value;
    const known = seen.get(value);
    if (known !== undefined) return known;
    if (value instanceof Uint8Array) {
      const text = Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('latin1');
      return this.leaksInto(text) ? REDACTED : value;
    }
    if (Array.isArray(value)) {
      seen.set(value, value);
      const items = value.map((v) => this.#deep(v, depth + 1, seen));
      const changed = items.some((v, i) => v !== value[i]);
      const out = changed ? items : value;
      seen.set(value, out);
      return out;
    }
    const proto: unknown = Object.getPrototypeOf(value);
    const isError = value instanceof Error;
    if (!isError && proto !== Object.prototype && proto !== null) return value;
    seen.set(value, value);
    const names = new Set<PropertyKey>(Reflect.ownKeys(value));
    if (isError) {
      names.add('message');
      names.add('stack');
      names.add('cause');
    }
    const copy: Record<PropertyKey, PropertyDescriptor> = {};
    let changed = false;
    for (const key of names) {
      let desc = Object.getOwnPropertyDescriptor(value, key);
      if (isError && desc !== undefined && !('value' in desc) && key === 'stack') {
        // Some engines keep the stack behind an accessor: read it through the original.
        desc = { value: (value as Error).stack, writable: true, configurable: true };
      }
      if (desc === undefined || !('value' in desc)) {
        if (desc !== undefined) copy[key as string] = desc;
        continue;
      }
      const next = this.#deep(desc.value, depth + 1, seen);
      if (next !== desc.value) changed = true;
      copy[key as string] = { ...desc, value: next };
    }
    if (!changed) return value;
    const out = Object.create(proto as object | null) as object;
    for (const key of Reflect.ownKeys(copy)) {
      Object.defineProperty(out, key, copy[key as string] as PropertyDescriptor);
    }
    seen.set(value, out);
    return out;
  }
}

/**
 * The forms a secret takes when a backend or a library echoes it: as is,
 * URL-encoded, hexadecimal (both cases), and base64 in both alphabets at
 * each of the three byte alignments it can have inside a longer encoded
 * value (only the characters that depend on the secret alone).
 */
export function encodedForms(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8');
  const forms = new Set<string>([secret, encodeURIComponent(secret)]);
  forms.add(encodeURIComponent(secret).replace(/%20/g, '+'));
  const hex = bytes.toString('hex');
  forms.add(hex);
  forms.add(hex.toUpperCase());
  for (let k = 0; k < 3; k++) {
    const padded = Buffer.concat([Buffer.alloc(k), bytes]);
    const b64 = padded.toString('base64').replace(/=+$/, '');
    const first = Math.ceil((8 * k) / 6);
    const last = Math.floor((8 * (k + bytes.length) - 6) / 6);
    if (last - first + 1 < 4) continue;
    const core = b64.slice(first, last + 1);
    forms.add(core);
    forms.add(core.replace(/\+/g, '-').replace(/\//g, '_'));
  }
  return [...forms].filter((f) => f.length >= MIN_SECRET_LENGTH);
}

/**
 * A logger that redacts the secrets of `secrets` from every line's fields
 * and message before handing it to `logger`. Lines without secrets pass
 * through unchanged.
 */
export function redactingLogger(logger: Logger, secrets: SecretSet): Logger {
  const wrap =
    (fn: Logger['info']) =>
    (a: Record<string, unknown> | string, msg?: string): void => {
      if (secrets.size === 0) {
        (fn as (a: unknown, m?: string) => void)(a, msg);
        return;
      }
      if (typeof a === 'string') {
        fn(secrets.redact(a));
        return;
      }
      const fields = secrets.redactValue(a);
      if (msg === undefined) fn(fields);
      else fn(fields, secrets.redact(msg));
    };
  return {
    trace: wrap(logger.trace.bind(logger)),
    debug: wrap(logger.debug.bind(logger)),
    info: wrap(logger.info.bind(logger)),
    warn: wrap(logger.warn.bind(logger)),
    error: wrap(logger.error.bind(logger)),
    child: (bindings) => redactingLogger(logger.child(secrets.redactValue(bindings)), secrets),
  };
}
