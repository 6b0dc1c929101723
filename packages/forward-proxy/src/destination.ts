/**
 * The destination policy (`@proxy-op/egress`) where the proxy applies it:
 * once before a request goes anywhere ({@link Destinations.check}: the
 * host as the request names it, literal addresses in every spelling, names
 * against the name entries and the ports), and once more on the addresses
 * a name resolves to, which are the addresses the proxy dials
 * ({@link Destinations.lookupFor}: the `lookup` of `net.connect`, which
 * resolves the name itself with `dns.lookup`, refuses it when any address
 * is refused, and hands `net.connect` the checked addresses, so nothing
 * resolves the name again between the check and the connection).
 *
 * A gateway (a proxy with parents) does not dial the destination: it
 * checks what it can see, the host before resolution, and its parents,
 * which resolve, judge the addresses.
 *
 * @module
 */
import type { LookupAddress, LookupAllOptions, LookupOneOptions } from 'node:dns';
import type { LookupFunction } from 'node:net';
import {
  compileEgressPolicy,
  type EgressKind,
  type EgressMatcher,
  type EgressPolicy,
  type ListeningAddress,
  type RefusalRule,
} from '@proxy-op/egress';

/** How often the host's own addresses are read again, at most, in ms. */
const OWN_ADDRESSES_MS = 10_000;

/** The error a refused destination's connection fails with (its `code`), and its rule. */
export const REFUSED = 'PROXY_OP_DESTINATION_REFUSED';

/** A connection refused by the policy after resolution. */
export interface RefusedError extends Error {
  readonly code: typeof REFUSED;
  readonly rule: RefusalRule;
}

/** The rule of a connection error the policy caused, or undefined for any other error. */
export function refusalOf(err: unknown): RefusalRule | undefined {
  const e = err as Partial<RefusedError> | undefined;
  return e?.code === REFUSED ? e.rule : undefined;
}

/** The body of the proxy's answer to a refused destination: the rule, never an address. */
export function refusalText(rule: RefusalRule): string {
  return `proxy-op: destination refused (${rule})\n`;
}

/** `node:dns`, loaded when a name is first resolved (`net` loads it for names anyway). */
let dns: typeof import('node:dns') | undefined;

/** The host's own addresses, read from its interfaces at most every {@link OWN_ADDRESSES_MS}. */
function ownAddressesReader(): () => readonly string[] {
  let at = Number.NEGATIVE_INFINITY;
  let list: readonly string[] = [];
  return () => {
    const now = Date.now();
    if (now - at < OWN_ADDRESSES_MS) return list;
    at = now;
    const next: string[] = [];
    const os = process.getBuiltinModule('node:os');
    for (const addrs of Object.values(os.networkInterfaces())) {
      for (const a of addrs ?? []) next.push(a.address);
    }
    next.sort();
    if (next.join() !== list.join()) list = next;
    return list;
  };
}

/** The proxy's destination policy. */
export class Destinations {
  #matcher: EgressMatcher;
  readonly #policy: EgressPolicy | undefined;
  readonly #own = ownAddressesReader();

  /** Throws a `TypeError` naming the problems of a bad policy (`egress.allow[2]: ...`). */
  constructor(policy: EgressPolicy | undefined) {
    this.#policy = policy;
    this.#matcher = compileEgressPolicy(policy, { ownAddresses: this.#own });
  }

  /** Sets where the proxy listens (known once it is bound): a request there is refused. */
  listening(addresses: readonly ListeningAddress[]): void {
    this.#matcher = compileEgressPolicy(this.#policy, {
      ownAddresses: this.#own,
      listening: addresses,
    });
  }

  /**
   * The check before the request goes anywhere: undefined when it may go
   * on, else the rule that refuses it.
   */
  check(host: string, port: number, kind: EgressKind): RefusalRule | undefined {
    return this.#matcher.checkHost(host, port, kind);
  }

  /**
   * The host to dial: a literal address in any spelling as its standard
   * form (`2852039166` is `169.254.169.254`, dialled as such), a name as it is.
   */
  dialHost(host: string): string {
    return this.#matcher.literalAddress(host) ?? host;
  }

  /**
   * The `lookup` of a connection to `port` for `kind`: resolves the name
   * with `dns.lookup` (every address), checks each one with the name, and
   * fails with a {@link RefusedError} when any is refused; else passes on
   * the checked addresses, which are what `net.connect` dials.
   */
  lookupFor(port: number, kind: EgressKind): LookupFunction {
    const matcher = this.#matcher;
    return ((
      hostname: string,
      options: LookupOneOptions | LookupAllOptions,
      callback: (
        err: NodeJS.ErrnoException | null,
        address: string | LookupAddress[],
        family?: number,
      ) => void,
    ) => {
      dns ??= process.getBuiltinModule('node:dns');
      dns.lookup(
        hostname,
        { family: options.family ?? 0, hints: options.hints ?? 0, all: true, order: 'verbatim' },
        (err, addresses) => {
          if (err === null && addresses.length === 0) {
            err = Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), {
              code: 'ENOTFOUND',
            });
          }
          if (err !== null) {
            callback(err, options.all === true ? [] : '', 0);
            return;
          }
          for (const a of addresses) {
            const rule = matcher.checkAddress(a.address, port, kind, hostname);
            if (rule !== undefined) {
              const refused = Object.assign(new Error(`destination refused (${rule})`), {
                code: REFUSED,
                rule,
              });
              callback(refused as NodeJS.ErrnoException, options.all === true ? [] : '', 0);
              return;
            }
          }
          if (options.all === true) callback(null, addresses);
          else {
            const first = addresses[0] as LookupAddress;
            callback(null, first.address, first.family);
          }
        },
      );
    }) as LookupFunction;
  }
}
