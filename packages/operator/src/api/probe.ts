/**
 * The probes' part of the Proxy resource: `spec.remediation` (opt-in
 * replacement of a Proxy whose probes fail) and `status.probe` (the last
 * probes through its data plane). `schema.ts` puts them into the Proxy's
 * schemas, which the types and the CRDs come from.
 *
 * @module
 */
import { DEFAULTS } from '../defaults.js';
import { DURATION_PATTERN, formatDuration } from './duration.js';

/** `spec.remediation`: present, the instance is replaced after failing its probes for `unhealthyTimeout`. */
export const remediationSchema = {
  type: 'object',
  additionalProperties: false,
  description:
    'Replace the instance once its probes have failed for unhealthyTimeout, unless more than the provider’s probe.maxUnhealthy fail at once.',
  properties: {
    unhealthyTimeout: {
      type: 'string',
      pattern: DURATION_PATTERN,
      default: formatDuration(DEFAULTS.unhealthyTimeoutMs),
      description: 'How long the probes fail before the instance is replaced (500ms, 10s, 5m, 1h).',
    },
  },
} as const;

const latencySchema = {
  type: 'object',
  properties: {
    connectMs: { type: 'number' },
    firstByteMs: { type: 'number' },
    totalMs: { type: 'number' },
  },
} as const;

/** `status.probe`: written on a change of state, and at most every `--probe-status-refresh` otherwise. */
export const probeStatusSchema = {
  type: 'object',
  description:
    'The probes through the data plane, as of lastProbeTime: written when the outcome, the failing step or the egress IP changes, otherwise at most every --probe-status-refresh.',
  properties: {
    target: { type: 'string', description: 'The URL the tunnel reaches.' },
    lastProbeTime: { type: 'string', format: 'date-time' },
    result: { type: 'string', enum: ['Passed', 'Failed'] },
    latency: latencySchema,
    p50TotalMs: { type: 'number', description: 'The median total latency of the last probes.' },
    consecutiveFailures: { type: 'integer', minimum: 0 },
    lastPassTime: { type: 'string', format: 'date-time' },
    lastFailure: {
      type: 'object',
      properties: {
        time: { type: 'string', format: 'date-time' },
        check: { type: 'string', enum: ['get', 'connect', 'socks5', 'auth'] },
        step: { type: 'string', enum: ['connect', 'tunnel', 'status', 'nonce', 'auth'] },
        message: { type: 'string' },
      },
    },
  },
} as const;
