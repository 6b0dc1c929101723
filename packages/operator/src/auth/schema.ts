/**
 * The credentials' part of the Proxy resource: `spec.auth` (Basic
 * authentication on top of `allowedSources`, generated and rotated by the
 * operator, or brought in a Secret) and `status.credentials` (where the
 * credential is kept and how far its rotation got; never the credential).
 *
 * @module
 */
import { DEFAULTS } from '../defaults.js';
import { DURATION_PATTERN, formatDuration } from '../duration.js';

const DNS_SUBDOMAIN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';

/** `spec.auth`: how the proxy's clients authenticate. */
export const authSchema = {
  type: 'object',
  additionalProperties: false,
  description:
    'Basic authentication on top of allowedSources (a client must be allowed and authenticated). Left out: basic, except for a Proxy whose instance was made without credentials, which keeps none until its spec changes.',
  properties: {
    type: {
      type: 'string',
      enum: ['basic', 'none'],
      default: 'basic',
      description: 'basic: a credential per Proxy; none: allowedSources alone guard the proxy.',
    },
    secretRef: {
      type: 'object',
      required: ['name'],
      additionalProperties: false,
      description:
        'Use the credential of this Secret (kubernetes.io/basic-auth, in the Proxy’s namespace) instead of a generated one; the operator never rotates it.',
      properties: { name: { type: 'string', pattern: DNS_SUBDOMAIN, maxLength: 253 } },
    },
    rotateEvery: {
      type: 'string',
      pattern: DURATION_PATTERN,
      description:
        'Issue a new generated credential this often (500ms, 10s, 5m, 1h); never when unset.',
    },
    overlap: {
      type: 'string',
      pattern: DURATION_PATTERN,
      default: formatDuration(DEFAULTS.credentialOverlapMs),
      description:
        'How long the proxy accepts the old credential after the Secret names the new one (longer than the proxy’s credential TTL).',
    },
  },
} as const;

/** `status.credentials`: where the credential is and the rotation's state, never the credential. */
export const credentialsStatusSchema = {
  type: 'object',
  description: 'Where the Proxy’s credential is kept and how far its rotation got.',
  properties: {
    secretName: {
      type: 'string',
      description: 'The Secret (or, standalone, the file) that holds the credential.',
    },
    rotatedTime: { type: 'string', format: 'date-time' },
    overlapUntil: {
      type: 'string',
      format: 'date-time',
      description: 'Until when the proxy also accepts the previous credential.',
    },
    appliedHash: {
      type: 'string',
      description: 'A hash of the password file the instance last took (not of any password).',
    },
    urlEndpoint: {
      type: 'string',
      description: 'The endpoint the URL kept with the credential was made for.',
    },
    rotateRequest: {
      type: 'string',
      description: 'The last value of the proxy-op.io/rotate-credentials annotation acted on.',
    },
  },
} as const;
