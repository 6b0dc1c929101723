/**
 * A pool's gateway as the pool controller asks for it: what `spec.gateway`
 * resolves to ({@link gatewayPlan}), and the seam that runs it
 * ({@link PoolGateways}): a process the standalone operator supervises
 * (`standalone/gateways.ts`), or a Deployment and Service on Kubernetes.
 * The controller hands each pass's plan over and writes what it answers
 * into `status.gateway`.
 *
 * @module
 */

import type { EgressPolicy } from '@proxy-op/egress';
import { canonicalJson } from '../api/canonical-json.js';
import { durationMs } from '../api/duration.js';
import type { PoolGatewayStatus, PoolObject } from '../api/pool.js';
import { realmOf } from '../credentials/credential.js';
import { DEFAULTS } from '../defaults.js';
import type { Demand } from './autoscale.js';

/** What a pool's gateway is to be. */
export interface GatewayPlan {
  /** The pool's namespace. */
  readonly namespace: string;
  /** The pool's name. */
  readonly pool: string;
  /** The pool's UID (what its gateway objects are owned by). */
  readonly uid: string;
  /** Where clients reach it. */
  readonly address: string;
  readonly port: number;
  /** On Kubernetes, its Pods. */
  readonly replicas: number;
  /** Who may use it. */
  readonly allowedSources: readonly string[];
  readonly session: 'none' | 'client' | 'header';
  readonly sessionHeader: string;
  /** Whether clients authenticate with a generated credential. */
  readonly auth: 'basic' | 'none';
  /** How long an upstream out of the list keeps its tunnels (the rotation's drain). */
  readonly drainSeconds: number;
  /** The pool's destination policy (its template's `egress`): the gateway refuses what it can see of it before resolution. */
  readonly egress?: EgressPolicy | undefined;
  /** With `spec.bans`: the gateway's rules (durations in ms), and its admin credential for reports. */
  readonly bans?:
    | {
        readonly rules: readonly {
          readonly name?: string | undefined;
          readonly hosts: readonly string[];
          readonly status: readonly number[];
          readonly header?: { readonly name: string; readonly pattern: string } | undefined;
          readonly quarantineMs: number;
        }[];
        readonly retries: number;
      }
    | undefined;
  /** With `spec.autoscale`: how the gateway holds work while the pool has no Proxy. */
  readonly wake?: { readonly timeout: string; readonly maxWaiting: number } | undefined;
}

/** The gateway of `pool`, or undefined when it has none (a paused pool keeps its gateway). */
export function gatewayPlan(pool: PoolObject): GatewayPlan | undefined {
  const g = pool.spec.gateway;
  if (g?.enabled !== true) return undefined;
  return {
    namespace: pool.metadata.namespace,
    pool: pool.metadata.name,
    uid: pool.metadata.uid,
    address: g.address,
    port: g.port,
    replicas: g.replicas,
    allowedSources: g.allowedSources ?? pool.spec.template.spec.allowedSources,
    session: g.session,
    sessionHeader: g.sessionHeader,
    auth: g.auth.type,
    drainSeconds: pool.spec.rotation?.drainSeconds ?? DEFAULTS.gatewayDrainMs / 1000,
    ...(pool.spec.template.spec.egress === undefined
      ? {}
      : { egress: pool.spec.template.spec.egress }),
    ...(pool.spec.bans === undefined
      ? {}
      : {
          bans: {
            rules: pool.spec.bans.rules.map(({ quarantine, ...r }) => ({
              ...r,
              quarantineMs: durationMs(quarantine) ?? 1_800_000,
            })),
            retries: pool.spec.bans.retries,
          },
        }),
    ...(pool.spec.autoscale === undefined
      ? {}
      : {
          wake: {
            timeout: pool.spec.autoscale.wakeTimeout,
            maxWaiting: pool.spec.autoscale.maxWaiting,
          },
        }),
  };
}

/** Where a gateway process finds its files and listens. */
export interface GatewayPlaces {
  /** The pool's upstreams file. */
  readonly upstreams: string;
  /** `ADDRESS:PORT` (an IPv6 address in brackets). */
  readonly listen: string;
  /** The clients' password file (with `auth: basic`). */
  readonly passwordFile: string;
  /** The admin password file of the ban endpoint (with `bans`). */
  readonly adminPasswordFile?: string | undefined;
}

/** The arguments of `proxy-op gateway` for a plan. */
export function gatewayArgs(plan: GatewayPlan, at: GatewayPlaces): string[] {
  return [
    'gateway',
    plan.pool,
    '-n',
    plan.namespace,
    '--upstreams',
    at.upstreams,
    '--listen',
    at.listen,
    '--allowed-sources',
    plan.allowedSources.join(','),
    '--session',
    plan.session,
    '--session-header',
    plan.sessionHeader,
    '--drain',
    `${plan.drainSeconds}s`,
    ...(plan.egress === undefined ? [] : ['--egress', JSON.stringify(plan.egress)]),
    ...(plan.bans === undefined
      ? []
      : [
          '--bans',
          JSON.stringify(plan.bans),
          ...(at.adminPasswordFile === undefined
            ? []
            : ['--admin-password-file', at.adminPasswordFile]),
        ]),
    ...(plan.wake === undefined
      ? []
      : ['--wake-timeout', plan.wake.timeout, '--max-waiting', String(plan.wake.maxWaiting)]),
    ...(plan.auth === 'basic'
      ? ['--password-file', at.passwordFile, '--realm', realmOf(plan.namespace, plan.pool)]
      : []),
  ];
}

/** Two plans that run the same gateway. */
export function samePlan(a: GatewayPlan | undefined, b: GatewayPlan | undefined): boolean {
  return canonicalJson(a ?? null) === canonicalJson(b ?? null);
}

/** Where pools' gateways run. */
export interface PoolGateways {
  /**
   * Brings the gateway of pool `key` to `plan` (undefined: none, and what
   * it kept is removed); answers its status. `verified`: the pool's
   * published upstreams. Never throws for a gateway that fails to start:
   * the status says why (a write the API refuses does throw).
   */
  sync(
    key: string,
    plan: GatewayPlan | undefined,
    verified: number,
  ): Promise<PoolGatewayStatus | undefined>;
  /** The pool is gone: what runs for it stops (objects it owns go with it, as owner references have them go). */
  gone(key: string): Promise<void>;
  /**
   * What the gateway of pool `key` sees now (for `spec.autoscale`);
   * undefined when it cannot tell (not running, not answering).
   */
  demand?(key: string): Promise<Demand | undefined>;
  /** Subscribes to changes the controller does not cause (a gateway up, or gone); gets the pool's key. */
  watch(listener: (key: string) => void): () => void;
  /** Stops what runs (standalone: the processes); the pools' objects stay. */
  stop(): Promise<void>;
}
