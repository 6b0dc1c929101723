/**
 * The `Proxy` and `ProviderHealth` resources: their JSON schemas (the one
 * source the TypeScript types are derived from, and the structural schemas
 * the CRDs carry) and validation with defaults.
 *
 * @module
 */
import { cidrProblem } from '@proxy-op/contract';
import { type EgressPolicy, egressPolicyProblems } from '@proxy-op/egress';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { authSchema, credentialsStatusSchema } from './auth.js';
import { probeStatusSchema, remediationSchema } from './probe.js';

/** The API group of the operator's resources. */
export const GROUP = 'proxy-op.io';
/** The API version of the operator's resources. */
export const VERSION = 'v1alpha1';
/** `apiVersion` of the operator's resources. */
export const API_VERSION = `${GROUP}/${VERSION}`;
/** The finalizer the operator puts on every Proxy before its first Create. */
export const FINALIZER = 'proxy-op.io/instance';

/** A DNS label (RFC 1123), as names and provider names are. */
export const DNS_LABEL = '^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$';
const DNS_SUBDOMAIN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';
const OCTET = '(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])';
/** An IPv4 or IPv6 CIDR. */
const CIDR = `^(${OCTET}(\\.${OCTET}){3}/(3[0-2]|[12]?[0-9])|[0-9a-fA-F:.]*:[0-9a-fA-F:.]*/(12[0-8]|1[01][0-9]|[1-9]?[0-9]))$`;

/** One status condition, as every resource of the operator writes them. */
export const conditionSchema = {
  type: 'object',
  required: ['type', 'status', 'lastTransitionTime'],
  properties: {
    type: {
      type: 'string',
      enum: [
        'Ready',
        'ProviderConfigured',
        'Latched',
        'QuotaExceeded',
        'DataPlane',
        'RemediationAllowed',
        'Credentials',
      ],
    },
    status: { type: 'string', enum: ['True', 'False', 'Unknown'] },
    reason: { type: 'string' },
    message: { type: 'string' },
    lastTransitionTime: { type: 'string', format: 'date-time' },
    observedGeneration: { type: 'integer', minimum: 0 },
  },
} as const;

/** A port or a range `lo-hi`, as Kubernetes' int-or-string. */
const portSpec = {
  'x-kubernetes-int-or-string': true,
  anyOf: [{ type: 'integer' }, { type: 'string' }],
  // Each applies to its own type only: the bounds to a port, the pattern to a range.
  minimum: 1,
  maximum: 65535,
  pattern: '^[0-9]{1,5}-[0-9]{1,5}$',
} as const;

/**
 * `spec.egress`: where the proxy may connect, on top of the defaults that
 * refuse loopback, private, link-local and metadata addresses and the
 * proxy host's own (after name resolution), CONNECT to anything but 443
 * and plain HTTP below 1025 but 80 and 443.
 */
const egressSchema = {
  type: 'object',
  additionalProperties: false,
  description:
    'Where the proxy may connect. By default it refuses loopback, private, link-local and cloud metadata addresses and its host’s own (checked after name resolution), CONNECT to anything but 443, and plain HTTP to ports below 1025 but 80 and 443.',
  properties: {
    allow: {
      type: 'array',
      items: { type: 'string', minLength: 1 },
      description:
        'Destinations allowed although a default refuses them: a CIDR, an address, a host name or *.suffix, each with an optional :port or :lo-hi (10.0.0.0/8, db.internal:5432, [fd00::1]:443).',
    },
    deny: {
      type: 'array',
      items: { type: 'string', minLength: 1 },
      description: 'Destinations refused on top of the defaults, written as in allow.',
    },
    connectPorts: {
      type: 'array',
      items: portSpec,
      description: 'The ports CONNECT may reach (default [443]).',
    },
    httpPorts: {
      type: 'array',
      items: portSpec,
      description: 'The ports plain HTTP may reach (default [80, 443, "1025-65535"]).',
    },
  },
} as const;

/** The structural schema of a Proxy's `spec`. */
export const proxySpecSchema = {
  type: 'object',
  required: ['provider', 'allowedSources'],
  additionalProperties: false,
  properties: {
    provider: {
      type: 'string',
      pattern: DNS_LABEL,
      maxLength: 63,
      description: 'The name of a configured provider.',
    },
    placement: {
      type: 'object',
      additionalProperties: false,
      default: {},
      description: 'Where and on what the instance runs; each provider documents its fields.',
      properties: {
        region: { type: 'string', minLength: 1 },
        zone: { type: 'string', minLength: 1 },
        machineType: { type: 'string', minLength: 1 },
        image: { type: 'string', minLength: 1 },
      },
    },
    port: {
      type: 'integer',
      minimum: 1,
      maximum: 65535,
      default: 3128,
      description: 'The TCP port Squid listens on.',
    },
    allowedSources: {
      type: 'array',
      minItems: 1,
      items: { type: 'string', pattern: CIDR },
      description: 'CIDRs allowed to use the proxy; everyone else is denied.',
    },
    cloudInit: {
      type: 'string',
      minLength: 1,
      description: 'User data that replaces the generated Squid cloud-init.',
    },
    remediation: remediationSchema,
    auth: authSchema,
    egress: egressSchema,
  },
} as const;

/** The structural schema of a Proxy's `status`. */
export const proxyStatusSchema = {
  type: 'object',
  properties: {
    phase: {
      type: 'string',
      enum: ['Pending', 'Provisioning', 'Ready', 'Unhealthy', 'Replacing', 'Deleting', 'Failed'],
    },
    providerID: { type: 'string' },
    instanceProvider: {
      type: 'string',
      description: 'The provider that holds providerID (the spec may since name another).',
    },
    ip: { type: 'string' },
    endpoint: { type: 'string' },
    egressIP: { type: 'string', description: 'The source address the probe target saw.' },
    probe: probeStatusSchema,
    credentials: credentialsStatusSchema,
    instanceState: {
      type: 'string',
      enum: ['Provisioning', 'Running', 'Stopped', 'Terminated', 'Preempted'],
    },
    location: {
      type: 'object',
      description:
        "Where the instance runs, as its provider reports it (the backend's region and zone names, an ISO 3166-1 alpha-2 country).",
      properties: {
        region: { type: 'string' },
        zone: { type: 'string' },
        country: { type: 'string', pattern: '^[A-Z]{2}$' },
      },
    },
    cost: {
      type: 'object',
      description:
        "What the instance costs, from its provider's price in the providers file: per hour, and billed since `since` (its creation) by the provider's billing.",
      required: ['currency', 'perHour', 'since'],
      properties: {
        currency: { type: 'string', pattern: '^[A-Z]{3}$' },
        perHour: { type: 'number', minimum: 0 },
        since: { type: 'string', format: 'date-time' },
      },
    },
    specHash: { type: 'string' },
    latchedSpecHash: { type: 'string' },
    observedGeneration: { type: 'integer', minimum: 0 },
    conditions: { type: 'array', items: conditionSchema },
    lastError: {
      type: 'object',
      required: ['class', 'message'],
      properties: {
        class: { type: 'string', enum: ['NotFound', 'Transient', 'Permanent', 'QuotaExceeded'] },
        message: { type: 'string' },
      },
    },
  },
} as const;

/** The schema of a Proxy manifest as a user writes it (`kubectl apply`, or a file in standalone mode). */
export const proxyManifestSchema = {
  type: 'object',
  required: ['apiVersion', 'kind', 'metadata', 'spec'],
  properties: {
    apiVersion: { type: 'string', const: API_VERSION },
    kind: { type: 'string', const: 'Proxy' },
    metadata: {
      type: 'object',
      required: ['name'],
      properties: {
        name: { type: 'string', pattern: DNS_SUBDOMAIN, maxLength: 253 },
        namespace: { type: 'string', pattern: DNS_LABEL, maxLength: 63, default: 'default' },
        uid: { type: 'string' },
        labels: { type: 'object', additionalProperties: { type: 'string' } },
        annotations: { type: 'object', additionalProperties: { type: 'string' } },
      },
    },
    spec: proxySpecSchema,
    status: proxyStatusSchema,
  },
} as const;

/** The structural schema of a ProviderHealth `status`. */
export const providerHealthStatusSchema = {
  type: 'object',
  required: ['type', 'ready', 'targets'],
  properties: {
    type: { type: 'string' },
    ready: { type: 'boolean' },
    targets: {
      type: 'array',
      items: {
        type: 'object',
        required: ['target', 'address', 'ready', 'reason', 'message', 'lastTransitionTime'],
        properties: {
          target: { type: 'string' },
          address: { type: 'string' },
          ready: { type: 'boolean' },
          reason: { type: 'string' },
          message: { type: 'string' },
          details: {
            type: 'object',
            additionalProperties: { type: ['string', 'number', 'boolean'] },
          },
          lastTransitionTime: { type: 'string', format: 'date-time' },
        },
      },
    },
    lastCheckTime: { type: 'string', format: 'date-time' },
  },
} as const;

// ---- types derived from the schemas ----

type Simplify<T> = { -readonly [K in keyof T]: T[K] } & {};
type Required_<P, R> = {
  [K in keyof P as K extends R ? K : P[K] extends { default: unknown } ? K : never]: FromSchema<
    P[K]
  >;
};
type Optional_<P, R> = {
  [K in keyof P as K extends R
    ? never
    : P[K] extends { default: unknown }
      ? never
      : K]?: FromSchema<P[K]>;
};

/**
 * The TypeScript type of a value that validated against schema `S` (with
 * defaults filled in: a property with a `default` is always present).
 */
export type FromSchema<S> = S extends { readonly enum: readonly (infer E)[] }
  ? E
  : S extends { readonly anyOf: readonly (infer A)[] }
    ? FromSchema<A>
    : S extends { readonly const: infer C }
      ? C
      : S extends { readonly type: 'string' }
        ? string
        : S extends { readonly type: 'integer' | 'number' }
          ? number
          : S extends { readonly type: 'boolean' }
            ? boolean
            : S extends { readonly type: 'array'; readonly items: infer I }
              ? FromSchema<I>[]
              : S extends { readonly type: 'object'; readonly properties: infer P }
                ? Simplify<
                    Required_<
                      P,
                      S extends { readonly required: readonly (infer R)[] } ? R : never
                    > &
                      Optional_<
                        P,
                        S extends { readonly required: readonly (infer R)[] } ? R : never
                      >
                  >
                : S extends {
                      readonly type: 'object';
                      readonly additionalProperties: infer A;
                    }
                  ? Record<string, FromSchema<A>>
                  : unknown;

/** A Proxy's spec, after validation and defaults. */
export type ProxySpec = FromSchema<typeof proxySpecSchema>;
/** A Proxy's status, as the operator writes it. */
export type ProxyStatus = FromSchema<typeof proxyStatusSchema>;
/** `status.probe`: the last probes through the data plane. */
export type ProbeStatus = NonNullable<ProxyStatus['probe']>;
/** One status condition. */
export type Condition = FromSchema<typeof conditionSchema>;
/** A condition type of a Proxy. */
export type ConditionType = Condition['type'];
/** A Proxy's phase. */
export type Phase = NonNullable<ProxyStatus['phase']>;
/** A Proxy manifest as a user writes it, after validation and defaults. */
export type ProxyManifest = FromSchema<typeof proxyManifestSchema>;
/** A ProviderHealth's status. */
export type ProviderHealthStatus = FromSchema<typeof providerHealthStatusSchema>;
/** One target of a ProviderHealth. */
export type TargetHealth = ProviderHealthStatus['targets'][number];

/** The metadata the operator reads from a stored Proxy. */
export interface ProxyMetadata {
  /** The Proxy's namespace. */
  readonly namespace: string;
  /** The Proxy's name. */
  readonly name: string;
  /** The Proxy's UID: its instance's mark carries it. */
  readonly uid: string;
  /** Bumped by the store on every spec change. */
  readonly generation: number;
  /** When the Proxy was created (RFC 3339). */
  readonly creationTimestamp: string;
  /** Set once the Proxy is being deleted; it stays until the finalizers are gone. */
  readonly deletionTimestamp?: string | undefined;
  /** The Proxy's finalizers. */
  readonly finalizers: readonly string[];
  /** The Proxy's annotations (`proxy-op.io/rotate-credentials` among them). */
  readonly annotations?: Readonly<Record<string, string>> | undefined;
  /** The Proxy's labels (a pool's Proxies carry the pool's and the template hash). */
  readonly labels?: Readonly<Record<string, string>> | undefined;
  /** The objects that own the Proxy (a ProxyPool). */
  readonly ownerReferences?: readonly OwnerReference[] | undefined;
}

/** An owner reference, as Kubernetes writes them. */
export interface OwnerReference {
  /** The owner's `apiVersion`. */
  readonly apiVersion: string;
  /** The owner's kind (`ProxyPool`). */
  readonly kind: string;
  /** The owner's name. */
  readonly name: string;
  /** The owner's UID. */
  readonly uid: string;
  /** True for the owner that manages the object. */
  readonly controller?: boolean | undefined;
  /** The owner cannot be deleted in the foreground before this object is. */
  readonly blockOwnerDeletion?: boolean | undefined;
}

/** A Proxy as a store holds it. */
export interface ProxyObject {
  /** What the operator reads of the object's metadata. */
  readonly metadata: ProxyMetadata;
  /** The desired proxy, validated, defaults filled in. */
  readonly spec: ProxySpec;
  /** What the operator last wrote. */
  readonly status: ProxyStatus;
}

/** A ProviderHealth resource (cluster-scoped; one per configured provider). */
export interface ProviderHealth {
  /** The configured provider's name. */
  readonly name: string;
  /** The last check's outcome. */
  readonly status: ProviderHealthStatus;
}

// ---- validation ----

/** One validation problem: a path (`spec.port`) and a message. */
export interface SchemaProblem {
  /** Where the problem is (`spec.port`). */
  readonly path: string;
  /** What is wrong. */
  readonly message: string;
}

/** The outcome of a validation: the value with defaults, or every problem. */
export type Validated<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly problems: readonly SchemaProblem[] };

const ajv = new Ajv({ allErrors: true, useDefaults: true, strict: false });
ajv.addFormat('date-time', (s: string) => !Number.isNaN(Date.parse(s)));
const manifestValidator = ajv.compile(proxyManifestSchema);
const specValidator = ajv.compile(proxySpecSchema);

/** A path of `spec.egress`'s port lists: one problem for the forms they take, not one per form. */
const EGRESS_PORT = /^spec\.egress\.(connectPorts|httpPorts)\[\d+\]$/;

function problemsOf(errors: readonly ErrorObject[] | null | undefined, root: string) {
  const out = (errors ?? []).map((e): SchemaProblem => {
    const segs = e.instancePath
      .split('/')
      .slice(1)
      .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
    let path = root;
    for (const s of segs) path += /^\d+$/.test(s) ? `[${s}]` : path === '' ? s : `.${s}`;
    let message = e.message ?? 'is invalid';
    if (e.keyword === 'additionalProperties') {
      const extra = (e.params as { additionalProperty?: string }).additionalProperty;
      message = `unknown field "${extra}"`;
    } else if (e.keyword === 'enum') {
      message = `must be one of ${(e.params as { allowedValues: unknown[] }).allowedValues.join(', ')}`;
    } else if (e.keyword === 'const') {
      message = `must be ${JSON.stringify((e.params as { allowedValue: unknown }).allowedValue)}`;
    } else if (e.keyword === 'pattern' && path.includes('allowedSources')) {
      message = 'must be a CIDR such as 10.0.0.0/8 or fd00::/8';
    }
    if (EGRESS_PORT.test(path))
      message = 'must be a port (1 to 65535) or a range such as 8000-8999';
    return { path: path === '' ? '(root)' : path, message };
  });
  return out.filter(
    (p, i) => !EGRESS_PORT.test(p.path) || out.findIndex((q) => q.path === p.path) === i,
  );
}

/**
 * The sources the pattern lets through but that are no address (such as
 * `1:2:3/64`): the pattern cannot check IPv6 fully.
 */
function sourceProblems(spec: unknown): SchemaProblem[] {
  const sources = (spec as { allowedSources?: unknown } | undefined)?.allowedSources;
  if (!Array.isArray(sources)) return [];
  return sources.flatMap((cidr, i) => {
    const problem = cidrProblem(cidr);
    return problem === undefined ? [] : [{ path: `spec.allowedSources[${i}]`, message: problem }];
  });
}

/** What the schema cannot say of `spec.egress`: entries that read as nothing, ranges upside down. */
function egressProblems(spec: unknown): SchemaProblem[] {
  const egress = (spec as { egress?: EgressPolicy } | undefined)?.egress;
  if (egress === undefined) return [];
  return egressPolicyProblems(egress, 'spec.egress').map((line) => {
    const i = line.indexOf(': ');
    return { path: line.slice(0, i), message: line.slice(i + 2) };
  });
}

/**
 * A validator of `schema` with the operator's rules (defaults filled in, every
 * problem as `path: message` under `root`); the input is not modified.
 */
export function validatorOf<T>(schema: object, root: string): (input: unknown) => Validated<T> {
  const v = ajv.compile(schema);
  return (input) => run<T>(v, input, root);
}

function run<T>(validator: ValidateFunction, input: unknown, root: string): Validated<T> {
  const copy: unknown = structuredClone(input);
  if (!validator(copy)) return { ok: false, problems: problemsOf(validator.errors, root) };
  const spec = root === '' ? (copy as { spec?: unknown }).spec : copy;
  const problems = [...sourceProblems(spec), ...egressProblems(spec)];
  if (problems.length > 0) return { ok: false, problems };
  return { ok: true, value: copy as T };
}

/** Validates a Proxy manifest, filling in defaults (namespace, port, placement). The input is not modified. */
export function validateProxyManifest(input: unknown): Validated<ProxyManifest> {
  return run<ProxyManifest>(manifestValidator, input, '');
}

/** Validates a Proxy spec, filling in defaults. The input is not modified. */
export function validateProxySpec(input: unknown): Validated<ProxySpec> {
  return run<ProxySpec>(specValidator, input, 'spec');
}

/** Renders problems as `path: message` lines. */
export function formatProblems(problems: readonly SchemaProblem[]): string[] {
  return problems.map((p) => `${p.path}: ${p.message}`);
}
