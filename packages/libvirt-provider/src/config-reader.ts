/**
 * Reading a raw config block field by field, collecting every problem with
 * its path instead of stopping at the first.
 *
 * @module
 */
import type { ConfigIssue } from '@proxy-op/contract';

/** A field path from the block's root. */
export type Path = (string | number)[];

/** A plain object (not null, not an array). */
export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** An integer number. */
export function isInt(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v);
}

/** Collects issues while reading fields of one object at `base`. */
export class Reader {
  constructor(
    readonly issues: ConfigIssue[],
    readonly obj: Record<string, unknown>,
    readonly base: Path,
  ) {}

  bad(key: string | number | undefined, message: string): void {
    this.issues.push({ path: key === undefined ? this.base : [...this.base, key], message });
  }

  unknown(allowed: ReadonlySet<string>): void {
    for (const k of Object.keys(this.obj)) if (!allowed.has(k)) this.bad(k, 'is not a known field');
  }

  str(key: string, opts: { re?: RegExp; what?: string; dflt?: string } = {}): string | undefined {
    const v = this.obj[key];
    if (v === undefined) {
      if (opts.dflt === undefined) this.bad(key, 'is required');
      return opts.dflt;
    }
    if (typeof v !== 'string' || v === '') {
      this.bad(key, 'must be a non-empty string');
      return undefined;
    }
    if (opts.re !== undefined && !opts.re.test(v)) {
      this.bad(key, `${JSON.stringify(v)} is not ${opts.what ?? 'valid'}`);
      return undefined;
    }
    return v;
  }

  optStr(key: string, re?: RegExp, what?: string): string | undefined {
    if (this.obj[key] === undefined) return undefined;
    return this.str(key, {
      ...(re === undefined ? {} : { re }),
      ...(what === undefined ? {} : { what }),
    });
  }

  bool(key: string, dflt: boolean): boolean {
    const v = this.obj[key];
    if (v === undefined) return dflt;
    if (typeof v !== 'boolean') {
      this.bad(key, 'must be true or false');
      return dflt;
    }
    return v;
  }

  int(key: string, min: number, max: number, dflt?: number): number | undefined {
    const v = this.obj[key];
    if (v === undefined) {
      if (dflt === undefined) this.bad(key, 'is required');
      return dflt;
    }
    if (!isInt(v) || v < min || v > max) {
      this.bad(key, `must be an integer from ${min} to ${max}`);
      return undefined;
    }
    return v;
  }

  oneOf<T extends string>(key: string, allowed: readonly T[], dflt: T): T {
    const v = this.obj[key];
    if (v === undefined) return dflt;
    if (typeof v !== 'string' || !(allowed as readonly string[]).includes(v)) {
      this.bad(key, `must be one of ${allowed.join(', ')}`);
      return dflt;
    }
    return v as T;
  }
}
