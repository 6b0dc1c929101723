/**
 * Strict provider-ID formats: literal segments and named parts joined by
 * `/`, formatted and parsed by one definition.
 *
 * @module
 */
import { type Operation, PermanentError } from './errors.js';

/**
 * A strict provider-ID format: literal segments and named parts joined by
 * `/`, e.g. `['hosts', ':host', 'domains', ':name']`. Parsing accepts
 * exactly the segment count, the literals, and non-empty parts without `/`;
 * an optional per-part pattern narrows further.
 */
export interface IdFormat<K extends string> {
  /**
   * Formats an ID; throws TypeError when a part is empty, holds `/` or
   * fails its pattern, so every ID it makes, `parse` reads back.
   */
  format(parts: Readonly<Record<K, string>>): string;
  /** The parts, or undefined when `id` does not have this format. */
  parse(id: string): Record<K, string> | undefined;
  /** The parts, or a Permanent error for `provider` and `op` naming the expected shape. */
  mustParse(id: string, provider: string, op: Operation): Record<K, string>;
  /** The shape, for messages: `hosts/<host>/domains/<name>`. */
  readonly shape: string;
}

type PartName<S> = S extends `:${infer K}` ? K : never;

/** Defines a strict ID format. */
export function idFormat<const S extends readonly string[]>(
  segments: S,
  patterns: Partial<Record<PartName<S[number]>, RegExp>> = {},
): IdFormat<PartName<S[number]>> {
  type K = PartName<S[number]>;
  if (segments.length === 0) throw new TypeError('idFormat: at least one segment');
  const shape = segments.map((s) => (s.startsWith(':') ? `<${s.slice(1)}>` : s)).join('/');
  const pats = patterns as Partial<Record<string, RegExp>>;
  return {
    shape,
    format(parts) {
      return segments
        .map((s) => {
          if (!s.startsWith(':')) return s;
          const key = s.slice(1);
          const v = (parts as Record<string, string>)[key];
          if (typeof v !== 'string' || v === '' || v.includes('/')) {
            throw new TypeError(`provider ID part ${key} must be a non-empty string without "/"`);
          }
          const re = pats[key];
          if (re !== undefined && !re.test(v)) {
            throw new TypeError(`provider ID part ${key} "${v}" does not match ${String(re)}`);
          }
          return v;
        })
        .join('/');
    },
    parse(id) {
      if (typeof id !== 'string') return undefined;
      const got = id.split('/');
      if (got.length !== segments.length) return undefined;
      const out: Record<string, string> = {};
      for (let i = 0; i < segments.length; i++) {
        const want = segments[i] as string;
        const have = got[i] as string;
        if (!want.startsWith(':')) {
          if (have !== want) return undefined;
          continue;
        }
        const key = want.slice(1);
        if (have === '') return undefined;
        const re = pats[key];
        if (re !== undefined && !re.test(have)) return undefined;
        out[key] = have;
      }
      return out as Record<K, string>;
    },
    mustParse(id, provider, op) {
      const parts = this.parse(id);
      if (parts === undefined) {
        throw new PermanentError({
          provider,
          op,
          message: `malformed provider ID ${JSON.stringify(String(id)).slice(0, 200)}: expected ${shape}`,
        });
      }
      return parts;
    },
  };
}
