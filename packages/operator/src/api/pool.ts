/**
 * The `ProxyPool` resource: its JSON schema (the source of its TypeScript
 * types and of its CRD's structural schema) and validation with defaults.
 * Counts that may be percentages (`maxSurge`, `maxUnavailable`, budgets) are
 * Kubernetes' int-or-string; `resolvePoolSpec` turns a validated spec
 * (`resolve.ts`) into the numbers and durations the planner works with.
 *
 * @module
 */
import { isIP } from 'node:net';
import { autoscaleProblems, autoscaleSpecSchema, autoscaleStatusSchema } from './autoscale.js';
import { bansSpecSchema } from './bans.js';
import { DURATION_PATTERN } from './duration.js';
import {
  conditionSchema,
  DNS_LABEL,
  type FromSchema,
  proxySpecSchema,
  type SchemaProblem,
  type Validated,
  validateProxySpec,
  validatorOf,
} from './proxy.js';
import { parseQuantity, scaled } from './quantity.js';

/** The label every Proxy of a pool carries: the pool's name. */
export const POOL_LABEL = 'proxy-op.io/pool';
/** The label of the template hash a Proxy was made from. */
export const TEMPLATE_HASH_LABEL = 'proxy-op.io/template-hash';
/** An annotation on a Proxy: the pool never remediates it. */
export const SKIP_REMEDIATION_ANNOTATION = 'proxy-op.io/skip-remediation';
/** An annotation on a Proxy: the pool replaces it now (whatever its health). */
export const REMEDIATE_ANNOTATION = 'proxy-op.io/remediate';

/** A count or a percentage (`3`, `"25%"`), as Kubernetes' IntOrString. */
const intOrPercent = (description: string, dflt?: number | string) =>
  ({
    'x-kubernetes-int-or-string': true,
    anyOf: [{ type: 'integer' }, { type: 'string' }],
    minimum: 0,
    pattern: '^(100|[1-9]?[0-9])%$',
    description,
    ...(dflt === undefined ? {} : { default: dflt }),
  }) as const;

const duration = (description: string, dflt?: string) =>
  ({
    type: 'string',
    pattern: DURATION_PATTERN,
    description,
    ...(dflt === undefined ? {} : { default: dflt }),
  }) as const;

const placementSchema = proxySpecSchema.properties.placement;

/** `spec.gateway`: one proxy address in front of the pool's verified Proxies. */
export const gatewaySpecSchema = {
  type: 'object',
  additionalProperties: false,
  description:
    'One proxy address in front of the pool: each request and CONNECT goes through one of its verified Proxies, whose name the answer carries in X-Proxy-Op-Upstream.',
  properties: {
    enabled: { type: 'boolean', default: false, description: 'Run the gateway.' },
    port: {
      type: 'integer',
      minimum: 1,
      maximum: 65535,
      default: 3128,
      description: 'The port clients use (the Service’s on Kubernetes).',
    },
    replicas: {
      type: 'integer',
      minimum: 1,
      default: 1,
      description: 'On Kubernetes: the Pods of its Deployment (standalone runs one process).',
    },
    address: {
      type: 'string',
      minLength: 1,
      default: '127.0.0.1',
      description:
        'Standalone: the address the gateway listens on. On Kubernetes its Pods listen on every address, behind the Service <pool>-gateway.',
    },
    allowedSources: {
      ...proxySpecSchema.properties.allowedSources,
      description: 'CIDRs allowed to use the gateway; left out: the template’s allowedSources.',
    },
    session: {
      type: 'string',
      enum: ['none', 'client', 'header'],
      default: 'none',
      description:
        'none: the least busy Proxy for each request; client: a client address stays on one Proxy; header: requests with the same sessionHeader value do (the field is not forwarded).',
    },
    sessionHeader: {
      type: 'string',
      pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$",
      default: 'X-Proxy-Op-Session',
      description: 'The request field session: header keys on.',
    },
    auth: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        type: {
          type: 'string',
          enum: ['basic', 'none'],
          default: 'basic',
          description:
            'basic: a credential the operator generates (a file beside the state, or the Secret <pool>-gateway); none: allowedSources alone guard the gateway.',
        },
      },
    },
  },
} as const;

/** `status.gateway`. */
export const gatewayStatusSchema = {
  type: 'object',
  description: 'The gateway, when spec.gateway.enabled: where it is and whether it serves.',
  required: ['url', 'ready'],
  properties: {
    url: { type: 'string', description: 'http://address:port, without credentials.' },
    ready: {
      type: 'boolean',
      description:
        'A client gets through it: it listens and has a verified Proxy to send clients to.',
    },
    secretName: {
      type: 'string',
      description: 'The Secret (or, standalone, the file) that holds its client credential.',
    },
    message: { type: 'string', description: 'Why it is not ready.' },
  },
} as const;

/** The structural schema of a ProxyPool's `spec`. */
export const poolSpecSchema = {
  type: 'object',
  required: ['template'],
  additionalProperties: false,
  properties: {
    replicas: {
      type: 'integer',
      minimum: 0,
      default: 1,
      description: 'How many Proxies the pool keeps (the scale subresource sets it).',
    },
    paused: {
      type: 'boolean',
      default: false,
      description: 'While true the pool creates, rolls, rotates and remediates nothing.',
    },
    template: {
      type: 'object',
      required: ['spec'],
      additionalProperties: false,
      description:
        "Every Proxy of the pool: its labels and spec (spread may override the spec's provider and placement).",
      properties: {
        metadata: {
          type: 'object',
          additionalProperties: false,
          properties: {
            labels: { type: 'object', additionalProperties: { type: 'string' } },
          },
        },
        spec: proxySpecSchema,
      },
    },
    strategy: {
      type: 'object',
      additionalProperties: false,
      default: {},
      description: 'How a template change rolls out (both zero is refused).',
      properties: {
        maxSurge: intOrPercent(
          'Proxies above replicas while rolling (a percentage of replicas rounds up).',
          1,
        ),
        maxUnavailable: intOrPercent(
          'Proxies below replicas that may be unavailable while rolling (a percentage rounds down).',
          0,
        ),
      },
    },
    minReadySeconds: {
      type: 'integer',
      minimum: 0,
      default: 0,
      description: 'How long a Proxy is Ready before it counts as available.',
    },
    deletePolicy: {
      type: 'string',
      enum: ['Random', 'Newest', 'Oldest'],
      default: 'Random',
      description: 'Which Proxies go on a scale-down (unhealthy ones always go first).',
    },
    rotation: {
      type: 'object',
      additionalProperties: false,
      description: 'Replace every Proxy once it is maxAge old, make-before-break.',
      properties: {
        maxAge: duration('The age at which a Proxy is replaced (5m, 24h).'),
        jitter: {
          type: 'string',
          pattern: '^(100|[1-9]?[0-9])%$',
          default: '10%',
          description:
            'Each Proxy expires up to this share of maxAge early, so Proxies made together do not expire together.',
        },
        drainSeconds: {
          type: 'integer',
          minimum: 0,
          default: 30,
          description:
            'How long a Proxy out of the endpoint list stays up for the clients still on it.',
        },
        budget: intOrPercent('How many Proxies rotate at once.', 1),
      },
    },
    remediation: {
      type: 'object',
      additionalProperties: false,
      default: {},
      description:
        "Replace a Proxy whose probes fail (Cluster API's MachineHealthCheck semantics).",
      properties: {
        unhealthyTimeout: duration('How long a Proxy is not Ready before it is replaced.', '5m'),
        startupTimeout: duration('How long a new Proxy may take to become Ready.', '10m'),
        maxInFlight: intOrPercent('How many Proxies are replaced at once.', 1),
        maxUnhealthy: intOrPercent(
          'Above this many unhealthy Proxies nothing is replaced (the target or the network is more likely at fault); a percentage rounds down but allows at least one.',
          '40%',
        ),
      },
    },
    gateway: gatewaySpecSchema,
    autoscale: autoscaleSpecSchema,
    bans: bansSpecSchema,
    spread: {
      type: 'array',
      description:
        'Place the Proxies over providers by weight; without it every Proxy uses the template’s provider.',
      items: {
        type: 'object',
        required: ['provider'],
        additionalProperties: false,
        properties: {
          provider: { type: 'string', pattern: DNS_LABEL, maxLength: 63 },
          weight: { type: 'integer', minimum: 1, default: 1 },
          placement: placementSchema,
        },
      },
    },
  },
} as const;

const endpointSchema = {
  type: 'object',
  required: ['name', 'url', 'provider', 'since'],
  properties: {
    name: { type: 'string', description: 'The Proxy.' },
    url: { type: 'string', description: 'http://ip:port, without credentials.' },
    egressIP: { type: 'string' },
    provider: { type: 'string' },
    since: { type: 'string', format: 'date-time', description: 'When the Proxy was created.' },
  },
} as const;

/** The structural schema of a ProxyPool's `status`. */
export const poolStatusSchema = {
  type: 'object',
  properties: {
    replicas: { type: 'integer', description: 'Proxies of the pool, draining ones included.' },
    readyReplicas: { type: 'integer' },
    updatedReplicas: { type: 'integer', description: 'Proxies of the current template.' },
    availableReplicas: { type: 'integer', description: 'Ready for minReadySeconds and published.' },
    observedGeneration: { type: 'integer', minimum: 0 },
    selector: { type: 'string', description: 'The label selector of the pool’s Proxies.' },
    templateHash: { type: 'string' },
    endpoints: { type: 'array', items: endpointSchema },
    draining: {
      type: 'array',
      description: 'Proxies out of the endpoint list, deleted once their drain ends.',
      items: {
        type: 'object',
        required: ['name', 'until'],
        properties: {
          name: { type: 'string' },
          until: { type: 'string', format: 'date-time' },
        },
      },
    },
    cost: {
      type: 'array',
      description:
        "What the pool's Proxies cost per hour now, by currency: the sum of their status.cost (Proxies whose provider has no price are not in it).",
      items: {
        type: 'object',
        required: ['currency', 'perHour', 'proxies'],
        properties: {
          currency: { type: 'string' },
          perHour: { type: 'number', minimum: 0 },
          proxies: {
            type: 'integer',
            minimum: 0,
            description: 'The Proxies priced in this currency.',
          },
        },
      },
    },
    gateway: gatewayStatusSchema,
    autoscale: autoscaleStatusSchema,
    remediationBackoffUntil: { type: 'string', format: 'date-time' },
    remediations: { type: 'integer', description: 'Replacements in a row without a Ready one.' },
    conditions: {
      type: 'array',
      items: {
        ...conditionSchema,
        properties: {
          ...conditionSchema.properties,
          type: {
            type: 'string',
            enum: ['Available', 'Progressing', 'RemediationAllowed', 'SpreadDegraded'],
          },
        },
      },
    },
  },
} as const;

/** A ProxyPool manifest. */
export const poolManifestSchema = {
  type: 'object',
  required: ['apiVersion', 'kind', 'metadata', 'spec'],
  properties: {
    apiVersion: { const: 'proxy-op.io/v1alpha1' },
    kind: { const: 'ProxyPool' },
    metadata: {
      type: 'object',
      required: ['name'],
      properties: {
        name: { type: 'string', pattern: DNS_LABEL, maxLength: 63 },
        namespace: { type: 'string', pattern: DNS_LABEL, maxLength: 63, default: 'default' },
        labels: { type: 'object', additionalProperties: { type: 'string' } },
        annotations: { type: 'object', additionalProperties: { type: 'string' } },
      },
    },
    spec: poolSpecSchema,
  },
} as const;

/** A ProxyPool's spec, after validation and defaults. */
export type PoolSpec = FromSchema<typeof poolSpecSchema>;
/** A ProxyPool's status, as the operator writes it. */
export type PoolStatus = FromSchema<typeof poolStatusSchema>;
/** A ProxyPool manifest, after validation. */
export type PoolManifest = FromSchema<typeof poolManifestSchema>;
/** One published endpoint. */
export type PoolEndpoint = FromSchema<typeof endpointSchema>;
/** A pool's gateway as its status reports it. */
export type PoolGatewayStatus = FromSchema<typeof gatewayStatusSchema>;
/** A pool condition. */
export type PoolCondition = NonNullable<PoolStatus['conditions']>[number];

/** The metadata the operator reads from a stored ProxyPool. */
export interface PoolMetadata {
  /** The pool's namespace. */
  readonly namespace: string;
  /** The pool's name. */
  readonly name: string;
  /** The pool's UID: its Proxies' owner references carry it. */
  readonly uid: string;
  /** Bumped on every spec change. */
  readonly generation: number;
  /** When the pool was created (RFC 3339). */
  readonly creationTimestamp: string;
  /** Set once the pool is being deleted. */
  readonly deletionTimestamp?: string | undefined;
}

/** A ProxyPool as a store holds it. */
export interface PoolObject {
  /** What the operator reads of the metadata. */
  readonly metadata: PoolMetadata;
  /** The spec, validated, defaults filled in. */
  readonly spec: PoolSpec;
  /** What the operator last wrote. */
  readonly status: PoolStatus;
}

const specValidator = validatorOf<PoolSpec>(poolSpecSchema, 'spec');
const manifestValidator = validatorOf<PoolManifest>(poolManifestSchema, '');

/** The problems the schema cannot say: the template's own rules, both rollout bounds zero, a provider twice. */
function semanticProblems(spec: PoolSpec, root: string): SchemaProblem[] {
  const problems: SchemaProblem[] = [];
  const t = validateProxySpec(spec.template.spec);
  if (!t.ok) {
    for (const p of t.problems)
      problems.push({ ...p, path: p.path.replace(/^spec/, `${root}template.spec`) });
  }
  const surge = parseQuantity(spec.strategy.maxSurge);
  const unavailable = parseQuantity(spec.strategy.maxUnavailable);
  if (surge !== undefined && unavailable !== undefined) {
    const r = Math.max(spec.replicas, 1);
    if (scaled(surge, r, 'up') === 0 && scaled(unavailable, r, 'down') === 0) {
      problems.push({
        path: `${root}strategy`,
        message:
          'maxSurge and maxUnavailable may not both be zero: a rollout could then make no progress (set maxSurge: 1 to replace make-before-break)',
      });
    }
  }
  const seen = new Set<string>();
  for (const [i, s] of (spec.spread ?? []).entries()) {
    if (seen.has(s.provider)) {
      problems.push({
        path: `${root}spread[${i}].provider`,
        message: `provider ${s.provider} is listed twice`,
      });
    }
    seen.add(s.provider);
  }
  const gw = spec.gateway;
  if (gw?.address !== undefined && isIP(gw.address) === 0) {
    problems.push({
      path: `${root}gateway.address`,
      message: `"${gw.address}" is not an IP address (e.g. 127.0.0.1, or 0.0.0.0 for every address)`,
    });
  }
  problems.push(...autoscaleProblems(spec, root));
  if (spec.bans !== undefined && spec.gateway?.enabled !== true) {
    problems.push({
      path: `${root}bans`,
      message: 'needs gateway.enabled: true (the gateway applies the rules)',
    });
  }
  for (const [i, r] of (spec.bans?.rules ?? []).entries()) {
    try {
      new RegExp(r.header?.pattern ?? '');
    } catch {
      problems.push({
        path: `${root}bans.rules[${i}].header.pattern`,
        message: 'is not a regular expression',
      });
    }
  }
  if (spec.rotation !== undefined && spec.rotation.maxAge === undefined) {
    problems.push({
      path: `${root}rotation.maxAge`,
      message: 'is required when rotation is set (e.g. maxAge: 24h)',
    });
  }
  return problems;
}

/** Validates a ProxyPool spec, filling in defaults. The input is not modified. */
export function validatePoolSpec(input: unknown): Validated<PoolSpec> {
  const v = specValidator(input);
  if (!v.ok) return v;
  const problems = semanticProblems(v.value, 'spec.');
  return problems.length > 0 ? { ok: false, problems } : v;
}

/** Validates a ProxyPool manifest, filling in defaults. The input is not modified. */
export function validatePoolManifest(input: unknown): Validated<PoolManifest> {
  const v = manifestValidator(input);
  if (!v.ok) return v;
  const problems = semanticProblems(v.value.spec, 'spec.');
  return problems.length > 0 ? { ok: false, problems } : v;
}

/** The numbers of a validated spec (see {@link ResolvedPoolSpec}). */
