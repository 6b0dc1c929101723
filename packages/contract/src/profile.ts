/**
 * The profile: the provider's choice on each of the contract's axes,
 * exported as data so documentation and the conformance kit can read it.
 * Axes are numbered as in the contract (§4.1 to §4.23); §4.20 to §4.23 may
 * be left out and then read as `replace`, `none`, `never` and `none`.
 *
 * @module
 */

/** The axes and the choices each admits. */
export interface Profile {
  /** §4.1 How long until a created instance serves. */
  readonly readiness: 'immediate' | 'provisioning-window';
  /** §4.2 Whether `create` returns once submitted or once running. */
  readonly createReturn: 'submit' | 'blocking';
  /** §4.3 Whether `delete` waits until everything is gone or returns once accepted. */
  readonly deleteReturn: 'waits' | 'returns-early';
  /** §4.4 Where the IP comes from. */
  readonly ipSource: 'assigned-at-create' | 'discovered';
  /** §4.5 How the ownership mark is stored. */
  readonly gcMark: 'native-labels' | 'written-metadata';
  /** §4.6 Where `createdAt` comes from. */
  readonly createdAt: 'backend-timestamp' | 'written-at-create';
  /** §4.7 What `listByTag` does when part of the backend cannot be read. */
  readonly listPartial: 'single-call' | 'fail-whole' | 'omit-unreachable';
  /** §4.8 Whether quota or capacity shortages are detected (QuotaExceeded). */
  readonly quota: 'absent' | 'detected';
  /** §4.9 How a missing instance is recognised. */
  readonly notFound: 'status-404' | 'error-code' | 'list-and-miss';
  /** §4.10 Whether the name is the key or an ID is allocated (deterministically from the UID). */
  readonly primaryKey: 'name-is-key' | 'allocated-id';
  /** §4.11 Where Provisioning comes from. */
  readonly provisioningState: 'native' | 'create-blocks';
  /** §4.12 Asynchronous work the backend tracks: task handles, locks; empty for none. */
  readonly asyncOps: readonly ('task-handle' | 'backend-lock')[];
  /** §4.13 Resources created beside the instance and how they go away. */
  readonly secondaryResources: 'none' | 'cascade' | 'explicit';
  /** §4.14 Where credentials come from. */
  readonly credentials: 'none' | 'mounted-files' | 'environment' | 'workload-identity';
  /** §4.15 What talks to the backend. */
  readonly clientKind: 'vendor-sdk' | 'thin-client' | 'rpc-over-ssh' | 'in-process';
  /** §4.16 How calls are bounded: by the caller's signal only, or by a budget per call kind too. */
  readonly timeouts: 'signal-only' | 'per-call';
  /** §4.17 Logging tiers: silent at info, outcomes and calls at debug, detail at trace. */
  readonly logging: 'tiered';
  /** §4.18 How child spans per backend call are made. */
  readonly childSpans: 'transport-wrapper' | 'sdk-instrumentation' | 'span-decorator';
  /** §4.19 How the provider is tested against a real backend. */
  readonly backendTest: 'local-peer' | 'integration-env' | 'cluster-e2e' | 'manual-runbook';
  /**
   * §4.20 How a proxy's credentials change: `in-place` (the provider has
   * `updateAuth`, and a running proxy takes the new password file) or
   * `replace` (the operator replaces the instance, make-before-break).
   * Omitted: `replace`.
   */
  readonly credentialRotation?: 'in-place' | 'replace' | undefined;
  /**
   * §4.21 How the backend bills a running instance: `none` (your own
   * hardware, a cluster you already pay for), or by the `period` with at
   * least `minimumSeconds` billed per instance. The price is not the
   * provider's to know: it comes from the operator's providers file.
   * Omitted: `none`.
   */
  readonly billing?: Billing | undefined;
  /**
   * §4.22 Whether the backend can take an instance back (spot and
   * preemptible instances): `possible` (Get and ListByTag then report such an
   * instance as `Preempted`) or `never`. Omitted: `never`.
   */
  readonly preemption?: 'possible' | 'never' | undefined;
  /**
   * §4.23 Whether a Running instance gets an IPv6 range to send from
   * (`range`: Get reports it as `ipv6Range`) or not (`none`). Omitted: `none`.
   */
  readonly ipv6Egress?: 'range' | 'none' | undefined;
}

/** §4.21 A billing model: not billed, or billed by a period with a minimum. */
export type Billing =
  | 'none'
  | {
      /** The unit the backend bills in: each started unit is paid in full. */
      readonly period: 'second' | 'minute' | 'hour';
      /** Seconds billed at least, however short the instance's life (0 for none). */
      readonly minimumSeconds: number;
    };

/** A profile's §4.21 choice, `none` when it makes none. */
export function billingOf(profile: Profile): Billing {
  return profile.billing ?? 'none';
}

/** A profile's §4.22 choice, `never` when it makes none. */
export function preemptionOf(profile: Profile): 'possible' | 'never' {
  return profile.preemption ?? 'never';
}

/** A profile's §4.23 choice, `none` when it makes none. */
export function ipv6EgressOf(profile: Profile): 'range' | 'none' {
  return profile.ipv6Egress ?? 'none';
}

/** A profile's §4.20 choice, `replace` when it makes none. */
export function credentialRotationOf(profile: Profile): 'in-place' | 'replace' {
  return profile.credentialRotation ?? 'replace';
}

/** The axis names in contract order. */
export const PROFILE_AXES = [
  'readiness',
  'createReturn',
  'deleteReturn',
  'ipSource',
  'gcMark',
  'createdAt',
  'listPartial',
  'quota',
  'notFound',
  'primaryKey',
  'provisioningState',
  'asyncOps',
  'secondaryResources',
  'credentials',
  'clientKind',
  'timeouts',
  'logging',
  'childSpans',
  'backendTest',
  'credentialRotation',
  'billing',
  'preemption',
  'ipv6Egress',
] as const satisfies readonly (keyof Profile)[];

const CHOICES: { readonly [K in keyof Profile]-?: readonly string[] } = {
  readiness: ['immediate', 'provisioning-window'],
  createReturn: ['submit', 'blocking'],
  deleteReturn: ['waits', 'returns-early'],
  ipSource: ['assigned-at-create', 'discovered'],
  gcMark: ['native-labels', 'written-metadata'],
  createdAt: ['backend-timestamp', 'written-at-create'],
  listPartial: ['single-call', 'fail-whole', 'omit-unreachable'],
  quota: ['absent', 'detected'],
  notFound: ['status-404', 'error-code', 'list-and-miss'],
  primaryKey: ['name-is-key', 'allocated-id'],
  provisioningState: ['native', 'create-blocks'],
  asyncOps: ['task-handle', 'backend-lock'],
  secondaryResources: ['none', 'cascade', 'explicit'],
  credentials: ['none', 'mounted-files', 'environment', 'workload-identity'],
  clientKind: ['vendor-sdk', 'thin-client', 'rpc-over-ssh', 'in-process'],
  timeouts: ['signal-only', 'per-call'],
  logging: ['tiered'],
  childSpans: ['transport-wrapper', 'sdk-instrumentation', 'span-decorator'],
  backendTest: ['local-peer', 'integration-env', 'cluster-e2e', 'manual-runbook'],
  credentialRotation: ['in-place', 'replace'],
  billing: ['none', 'an object { period, minimumSeconds }'],
  preemption: ['possible', 'never'],
  ipv6Egress: ['range', 'none'],
};

/** Axes a profile may leave out, and what they read as then. */
const OPTIONAL_AXES: Partial<Record<keyof Profile, string>> = {
  credentialRotation: 'replace',
  billing: 'none',
  preemption: 'never',
  ipv6Egress: 'none',
};

const PERIODS = ['second', 'minute', 'hour'];

/** What is wrong with a §4.21 choice read from outside TypeScript, or undefined. */
function billingProblem(value: unknown): string | undefined {
  if (value === 'none') return undefined;
  const how = "must be 'none' or { period: 'second' | 'minute' | 'hour', minimumSeconds: n }";
  if (value === null || typeof value !== 'object') return `profile.billing: ${how}`;
  const b = value as Record<string, unknown>;
  if (typeof b.period !== 'string' || !PERIODS.includes(b.period)) {
    return `profile.billing.period: must be one of ${PERIODS.join(', ')}`;
  }
  const min = b.minimumSeconds;
  if (typeof min !== 'number' || !Number.isInteger(min) || min < 0) {
    return 'profile.billing.minimumSeconds: must be a whole number of seconds, 0 or more';
  }
  return undefined;
}

/**
 * Checks a profile read from outside TypeScript (a third-party module):
 * every axis present with an admitted choice. Returns one message per
 * problem, each naming the axis; empty when the profile is valid.
 */
export function profileProblems(profile: unknown): string[] {
  if (profile === null || typeof profile !== 'object') return ['profile: must be an object'];
  const p = profile as Record<string, unknown>;
  const problems: string[] = [];
  for (const axis of PROFILE_AXES) {
    const allowed = CHOICES[axis];
    const value = p[axis];
    if (value === undefined && axis in OPTIONAL_AXES) continue;
    if (axis === 'billing') {
      const problem = billingProblem(value);
      if (problem !== undefined) problems.push(problem);
    } else if (axis === 'asyncOps') {
      if (!Array.isArray(value) || value.some((v) => !allowed.includes(v as string))) {
        problems.push(
          `profile.${axis}: must be an array of ${allowed.join(', ')} (empty for none)`,
        );
      }
    } else if (typeof value !== 'string' || !allowed.includes(value)) {
      problems.push(`profile.${axis}: must be one of ${allowed.join(', ')}`);
    }
  }
  return problems;
}
