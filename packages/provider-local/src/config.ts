/**
 * The `local` provider's config block: its type, its defaults (one frozen
 * object), its schema (Standard Schema shape, messages naming each field
 * path), and the module's deps.
 *
 * @module
 */
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import type { ConfigIssue, ConfigSchema, ProviderDeps } from '@proxy-op/contract';
import { cidrProblem } from '@proxy-op/contract';
import { type EgressPolicy, egressPolicyProblems } from '@proxy-op/egress';
import { DEFAULT_LIMITS, type ProxyLimits } from '@proxy-op/forward-proxy';
import { loopbackRangeProblem } from './cidr.js';
import type { LocalSeam } from './seam.js';

/** Per-call time budgets of the provider, in milliseconds. */
export interface LocalTimeouts {
  /** From spawning a proxy until it answers (default 10000). */
  readonly startMs: number;
  /** From SIGTERM until the process must have exited; then SIGKILL (default 5000). */
  readonly stopMs: number;
  /** One health probe of a proxy (default 1000). */
  readonly probeMs: number;
  /** One state-folder or process-table operation (default 5000): a stuck mount fails Transient instead of hanging. */
  readonly fileMs: number;
  /**
   * How long a proxy keeps a verified credential before it checks the
   * password file again (Squid's `credentialsttl`); a changed line ends it
   * at once, a removed user is refused after it (default 60 000).
   */
  readonly credentialsTtlMs: number;
}

/** The `local` provider's config block after defaults. */
export interface LocalConfig {
  /**
   * The state folder: one JSON file per instance, plus its password file
   * and logs (default `$XDG_STATE_HOME/proxy-op/local`, or
   * `~/.local/state/proxy-op/local`). It must be private: a folder (not a
   * link) this process's user owns that neither its group nor others can
   * write; a missing one is created with mode 0700.
   */
  readonly stateDir: string;
  /** The loopback range instances get addresses from (default `127.0.0.0/24`). */
  readonly addressRange: string;
  /** Sources allowed when the request names none (default `127.0.0.0/8`). */
  readonly allowedSources: readonly string[];
  /**
   * The destination policy of the proxies whose request has no `egress`
   * (`@proxy-op/egress`). Unset, the forward proxy's safe default applies:
   * nothing on this host (loopback, its own addresses), no link-local,
   * metadata, private, multicast or broadcast address, `CONNECT` to 443 only.
   */
  readonly egress?: EgressPolicy | undefined;
  /** The one zone this provider has; `placement.zone` must be empty or this (default `local`). */
  readonly zone: string;
  /** The Node.js binary that runs the proxies (default: the one running the provider). */
  readonly nodePath: string;
  /** Per-call budgets. */
  readonly timeouts: LocalTimeouts;
  /** The proxies' resource bounds. */
  readonly limits: ProxyLimits;
}

/** What the `local` module takes besides the contract's dependencies. */
export interface LocalDeps extends ProviderDeps {
  /**
   * The backend calls to use instead of the real files and processes
   * (tests wrap the production seam). The provider bounds each call by its
   * budget and decorates it itself.
   */
  readonly seam?: LocalSeam | undefined;
}

/**
 * The default state folder: `proxy-op/local` in the user's XDG state
 * folder (`$XDG_STATE_HOME`, when it is an absolute path, else
 * `~/.local/state`), a place of the user's own rather than the shared temp
 * folder, where another user could make the folder first.
 */
export function defaultStateDir(
  env: Readonly<Record<string, string | undefined>> = process.env,
  home: string = homedir(),
): string {
  const xdg = env.XDG_STATE_HOME;
  const base = xdg !== undefined && isAbsolute(xdg) ? xdg : join(home, '.local', 'state');
  return join(base, 'proxy-op', 'local');
}

/** The defaults of every field, the one defaults object (frozen). */
export const CONFIG_DEFAULTS = Object.freeze({
  stateDir: defaultStateDir(),
  addressRange: '127.0.0.0/24',
  allowedSources: Object.freeze(['127.0.0.0/8']),
  zone: 'local',
  nodePath: process.execPath,
  timeouts: Object.freeze({
    startMs: 10_000,
    stopMs: 5_000,
    probeMs: 1_000,
    fileMs: 5_000,
    credentialsTtlMs: 60_000,
  }),
  limits: Object.freeze({ ...DEFAULT_LIMITS }),
}) satisfies LocalConfig;

const FIELDS = [
  'stateDir',
  'addressRange',
  'allowedSources',
  'egress',
  'zone',
  'nodePath',
  'timeouts',
  'limits',
] as const;
const LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** The `local` provider's config schema: every field optional, defaults filled in. */
export const configSchema: ConfigSchema<LocalConfig> = {
  '~standard': {
    version: 1,
    vendor: '@proxy-op/provider-local',
    validate(input) {
      const d: LocalConfig = CONFIG_DEFAULTS;
      if (input === undefined || input === null) return { value: d };
      if (typeof input !== 'object' || Array.isArray(input)) {
        return { issues: [{ message: `must be an object with ${FIELDS.join(', ')}` }] };
      }
      const o = input as Record<string, unknown>;
      const issues: ConfigIssue[] = [];
      for (const key of Object.keys(o)) {
        if (!(FIELDS as readonly string[]).includes(key)) {
          issues.push({
            message: `unknown field; expected one of ${FIELDS.join(', ')}`,
            path: [key],
          });
        }
      }
      const path = (field: string, fallback: string): string => {
        const v = o[field];
        if (v === undefined) return fallback;
        if (typeof v !== 'string' || !isAbsolute(v)) {
          issues.push({ message: 'must be an absolute path', path: [field] });
          return fallback;
        }
        return v;
      };
      const stateDir = path('stateDir', d.stateDir);
      const nodePath = path('nodePath', d.nodePath);
      let addressRange = d.addressRange;
      if (o.addressRange !== undefined) {
        const problem = loopbackRangeProblem(o.addressRange);
        if (problem !== undefined) issues.push({ message: problem, path: ['addressRange'] });
        else addressRange = o.addressRange as string;
      }
      let allowedSources = d.allowedSources;
      if (o.allowedSources !== undefined) {
        if (!Array.isArray(o.allowedSources) || o.allowedSources.length === 0) {
          issues.push({ message: 'must be a non-empty list of CIDRs', path: ['allowedSources'] });
        } else {
          o.allowedSources.forEach((c, i) => {
            const problem = cidrProblem(c);
            if (problem !== undefined)
              issues.push({ message: problem, path: ['allowedSources', i] });
          });
          allowedSources = o.allowedSources as string[];
        }
      }
      let egress: EgressPolicy | undefined;
      if (o.egress !== undefined) {
        const problems = egressPolicyProblems(o.egress, 'egress');
        for (const line of problems) issues.push(egressIssue(line));
        if (problems.length === 0) egress = o.egress as EgressPolicy;
      }
      let zone = d.zone;
      if (o.zone !== undefined) {
        if (typeof o.zone !== 'string' || !LABEL.test(o.zone)) {
          issues.push({ message: 'must be a lowercase DNS label', path: ['zone'] });
        } else zone = o.zone;
      }
      const numbers = <T extends object>(field: string, defaults: T, min: number): T => {
        const v = o[field];
        if (v === undefined) return defaults;
        if (typeof v !== 'object' || v === null || Array.isArray(v)) {
          issues.push({
            message: `must be an object with ${Object.keys(defaults).join(', ')}`,
            path: [field],
          });
          return defaults;
        }
        const out: Record<string, number> = { ...(defaults as Record<string, number>) };
        for (const [k, n] of Object.entries(v)) {
          if (!(k in defaults)) {
            issues.push({
              message: `unknown field; expected one of ${Object.keys(defaults).join(', ')}`,
              path: [field, k],
            });
          } else if (typeof n !== 'number' || !Number.isInteger(n) || n < min) {
            issues.push({ message: `must be an integer of at least ${min}`, path: [field, k] });
          } else out[k] = n;
        }
        return out as T;
      };
      const timeouts = numbers('timeouts', d.timeouts, 1);
      const limits = numbers('limits', d.limits, 1);
      if (issues.length > 0) return { issues };
      return {
        value: {
          stateDir,
          addressRange,
          allowedSources,
          ...(egress === undefined ? {} : { egress }),
          zone,
          nodePath,
          timeouts,
          limits,
        },
      };
    },
  },
};

/**
 * One line of `egressPolicyProblems(policy, 'egress')` (`egress.allow[2]: ...`)
 * as an issue whose path is the field's (`['egress', 'allow', 2]`), so the
 * problem is named under the block's own path (`providers[0].local.egress.allow[2]`).
 */
function egressIssue(line: string): ConfigIssue {
  const at = line.indexOf(': ');
  const path: (string | number)[] = [];
  for (const m of line.slice(0, at).matchAll(/([^.[\]]+)|\[(\d+)\]/g)) {
    path.push(m[2] === undefined ? (m[1] as string) : Number(m[2]));
  }
  return { message: line.slice(at + 2), path };
}
