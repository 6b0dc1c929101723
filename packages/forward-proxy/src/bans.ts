/**
 * Bans a gateway sees or is told of: rules that tell a target's refusal of
 * an exit address from an ordinary answer (the target hosts, the status
 * codes, optionally a header), and the quarantine they feed, per parent and
 * target host, with an expiry. A quarantined parent takes no request for
 * that host until its quarantine ends, and serves every other host
 * meanwhile.
 *
 * @module
 */

/** A rule, as `parents.bans.rules` gives it. */
export interface BanRule {
  /** What names it in the answer's `X-Proxy-Op-Ban` and the metrics (default `rule-N`). */
  readonly name?: string | undefined;
  /** Target hosts, as globs (`*.example.com`, `shop.example.*`; `*` matches within and across labels). */
  readonly hosts: readonly string[];
  /** Answer status codes that are a ban (`403`, `429`). */
  readonly status: readonly number[];
  /** A header the answer must also carry, its value matching `pattern` (a regular expression, case-insensitive). */
  readonly header?: { readonly name: string; readonly pattern: string } | undefined;
  /** How long the parent is kept from the host, in ms. */
  readonly quarantineMs: number;
}

/** How a gateway handles bans. */
export interface BanOptions {
  /** The rules, tried in order. */
  readonly rules?: readonly BanRule[] | undefined;
  /** Times a banned request is sent again on another parent (default 2). */
  readonly retries?: number | undefined;
}

/** A rule, compiled. */
interface Compiled {
  readonly name: string;
  readonly hosts: readonly RegExp[];
  readonly status: ReadonlySet<number>;
  readonly header: { readonly name: string; readonly pattern: RegExp } | undefined;
  readonly quarantineMs: number;
}

const NAME = /^[A-Za-z0-9._-]{1,63}$/;
const HOST_GLOB = /^[A-Za-z0-9*.-]{1,253}$/;
const FIELD = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$/;

/** A glob over host names as a regular expression (case-insensitive, whole name). */
function globRegExp(glob: string): RegExp {
  const body = glob
    .toLowerCase()
    .split('*')
    .map((part) => part.replace(/[.]/g, '\\.'))
    .join('.*');
  return new RegExp(`^${body}$`);
}

/** Checks ban rules: a `TypeError` names the field of a bad one and the fix. */
export function checkBanRules(rules: readonly BanRule[]): void {
  compileBanRules(rules);
}

/** The compiled rules; a `TypeError` names the field of a bad one and the fix. */
function compileBanRules(rules: readonly BanRule[]): Compiled[] {
  return rules.map((r, i) => {
    const at = `parents.bans.rules[${i}]`;
    const name = r.name ?? `rule-${i + 1}`;
    if (!NAME.test(name)) {
      throw new TypeError(
        `${at}.name is ${JSON.stringify(r.name)}; give 1 to 63 letters, digits, . _ or -`,
      );
    }
    if (!Array.isArray(r.hosts) || r.hosts.length === 0) {
      throw new TypeError(`${at}.hosts: give at least one host glob (example.com, *.example.com)`);
    }
    for (const h of r.hosts) {
      if (typeof h !== 'string' || !HOST_GLOB.test(h)) {
        throw new TypeError(
          `${at}.hosts: ${JSON.stringify(h)} is not a host glob; use letters, digits, . - and *`,
        );
      }
    }
    if (!Array.isArray(r.status) || r.status.length === 0) {
      throw new TypeError(`${at}.status: give at least one status code (403, 429)`);
    }
    for (const s of r.status) {
      if (!Number.isInteger(s) || s < 200 || s > 599) {
        throw new TypeError(`${at}.status: ${String(s)} is not a final status code (200 to 599)`);
      }
    }
    let header: Compiled['header'];
    if (r.header !== undefined) {
      if (typeof r.header.name !== 'string' || !FIELD.test(r.header.name)) {
        throw new TypeError(`${at}.header.name is not a field name`);
      }
      try {
        header = { name: r.header.name.toLowerCase(), pattern: new RegExp(r.header.pattern, 'i') };
      } catch {
        throw new TypeError(`${at}.header.pattern is not a regular expression`);
      }
    }
    if (!Number.isFinite(r.quarantineMs) || r.quarantineMs <= 0) {
      throw new TypeError(`${at}.quarantineMs: give a number of ms above 0`);
    }
    return {
      name,
      hosts: r.hosts.map(globRegExp),
      status: new Set(r.status),
      header,
      quarantineMs: r.quarantineMs,
    };
  });
}

/** The rules and the quarantine of one gateway. */
export class Bans {
  readonly #rules: Compiled[];
  /** Times a banned request is sent again on another parent. */
  readonly retries: number;
  /** `parent name \0 host` to the end of its quarantine (`clock()` ms). */
  readonly #until = new Map<string, number>();
  /** Bans seen or reported, by `host \0 rule` (`report` for reports). */
  readonly #counts = new Map<string, number>();

  constructor(o: BanOptions) {
    this.#rules = compileBanRules(o.rules ?? []);
    const r = o.retries ?? 2;
    if (!Number.isInteger(r) || r < 0 || r > 10) {
      throw new TypeError(`parents.bans.retries is ${String(o.retries)}; give 0 to 10`);
    }
    this.retries = r;
  }

  /** The rule an answer of `host` matches (`names`/`values`: its fields, names lowercased), or undefined. */
  match(
    host: string,
    status: number,
    names: readonly string[],
    values: readonly string[],
  ): string | undefined {
    const h = host.toLowerCase();
    for (const r of this.#rules) {
      if (!r.status.has(status) || !r.hosts.some((g) => g.test(h))) continue;
      if (r.header !== undefined) {
        const { name, pattern } = r.header;
        if (!names.some((n, i) => n === name && pattern.test(values[i] ?? ''))) continue;
      }
      return r.name;
    }
    return undefined;
  }

  /**
   * The rule parent `name`'s answer for `host` matches, having kept the
   * parent from the host for the rule's quarantine; undefined when none does.
   */
  judge(
    name: string,
    host: string,
    res: {
      readonly status: number;
      readonly fields: { readonly lower: readonly string[]; readonly values: readonly string[] };
    },
    now: number,
  ): string | undefined {
    const rule = this.match(host, res.status, res.fields.lower, res.fields.values);
    if (rule === undefined) return undefined;
    const ms = this.#rules.find((r) => r.name === rule)?.quarantineMs ?? 0;
    this.quarantine(name, host, ms, now, rule);
    return rule;
  }

  /** Keeps parent `name` from `host` for `ms` from `now`, counting the ban under `rule`. */
  quarantine(name: string, host: string, ms: number, now: number, rule: string): void {
    const key = `${name}\0${host.toLowerCase()}`;
    this.#until.set(key, Math.max(this.#until.get(key) ?? 0, now + ms));
    const c = `${host.toLowerCase()}\0${rule}`;
    this.#counts.set(c, (this.#counts.get(c) ?? 0) + 1);
  }

  /** Whether parent `name` is kept from `host` now. */
  held(name: string, host: string | undefined, now: number): boolean {
    if (host === undefined || this.#until.size === 0) return false;
    const key = `${name}\0${host.toLowerCase()}`;
    const until = this.#until.get(key);
    if (until === undefined) return false;
    if (until > now) return true;
    this.#until.delete(key);
    return false;
  }

  /** The quarantines in force: parent, host, and the ms they have left. */
  inForce(now: number): { upstream: string; host: string; leftMs: number }[] {
    const out: { upstream: string; host: string; leftMs: number }[] = [];
    for (const [key, until] of this.#until) {
      if (until <= now) {
        this.#until.delete(key);
        continue;
      }
      const [upstream, host] = key.split('\0') as [string, string];
      out.push({ upstream, host, leftMs: Math.round(until - now) });
    }
    return out;
  }

  /** The bans counted, by host and rule. */
  counts(): { host: string; rule: string; count: number }[] {
    return [...this.#counts].map(([k, count]) => {
      const [host, rule] = k.split('\0') as [string, string];
      return { host, rule, count };
    });
  }
}
