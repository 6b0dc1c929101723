/**
 * `ProxyPool.spec.autoscale`: the pool's size follows the demand its
 * gateway sees, down to zero Proxies when nothing comes, with a wake on the
 * first request. The schema, and the checks a schema cannot make.
 *
 * @module
 */
import { DURATION_PATTERN } from './duration.js';
import type { SchemaProblem } from './proxy.js';

/** The schema of `spec.autoscale`. */
export const autoscaleSpecSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['maxReplicas'],
  description:
    "Size the pool by its gateway's demand (in-flight requests and tunnels per Proxy), down to minReplicas (0 allowed) after scaleDownAfter without demand; with it the autoscaler decides the pool's size and spec.replicas is not used. Needs gateway.enabled.",
  properties: {
    minReplicas: {
      type: 'integer',
      minimum: 0,
      default: 0,
      description: 'The fewest Proxies; 0: none while nothing comes.',
    },
    maxReplicas: { type: 'integer', minimum: 1, description: 'The most Proxies.' },
    targetInFlight: {
      type: 'integer',
      minimum: 1,
      default: 20,
      description:
        'The requests and tunnels in flight (waiting ones included) each Proxy should carry.',
    },
    scaleDownAfter: {
      type: 'string',
      pattern: DURATION_PATTERN,
      default: '5m',
      description: 'How long the demand must stay below the pool before one Proxy goes.',
    },
    wakeTimeout: {
      type: 'string',
      pattern: DURATION_PATTERN,
      default: '120s',
      description:
        'At zero Proxies, how long the gateway holds a request, tunnel or SOCKS5 connection for one to be Ready (then 503 with Retry-After).',
    },
    maxWaiting: {
      type: 'integer',
      minimum: 1,
      default: 1000,
      description:
        'At zero Proxies, the most requests the gateway holds at once (more get 503 at once).',
    },
  },
} as const;

/** The schema of `status.autoscale`: what the autoscaler decided and from what. */
export const autoscaleStatusSchema = {
  type: 'object',
  required: ['replicas', 'desiredReplicas'],
  description:
    'The autoscaler: the Proxies it keeps and what the demand asks for (the figures behind each step are in its ScaledUp and ScaledDown Events).',
  properties: {
    replicas: { type: 'integer', minimum: 0, description: 'The Proxies the pool keeps now.' },
    desiredReplicas: {
      type: 'integer',
      minimum: 0,
      description: 'What the demand asks for, within minReplicas and maxReplicas.',
    },
    belowSince: {
      type: 'string',
      format: 'date-time',
      description:
        'Since when the demand has asked for fewer Proxies (scale-down after scaleDownAfter).',
    },
    lastScaleTime: { type: 'string', format: 'date-time' },
  },
} as const;

/** The problems of an autoscale block the schema cannot see. */
export function autoscaleProblems(
  spec: {
    readonly autoscale?: { readonly minReplicas: number; readonly maxReplicas: number } | undefined;
    readonly gateway?: { readonly enabled: boolean } | undefined;
  },
  root: string,
): SchemaProblem[] {
  const a = spec.autoscale;
  if (a === undefined) return [];
  const problems: SchemaProblem[] = [];
  if (a.minReplicas > a.maxReplicas) {
    problems.push({
      path: `${root}autoscale.minReplicas`,
      message: `is ${a.minReplicas}, above maxReplicas (${a.maxReplicas}); give at most maxReplicas`,
    });
  }
  if (spec.gateway?.enabled !== true) {
    problems.push({
      path: `${root}autoscale`,
      message:
        "needs gateway.enabled: true (the demand is what the pool's gateway sees, and it holds requests while the pool wakes from zero)",
    });
  }
  return problems;
}
