/**
 * The credentials' part of the Proxy resource: `spec.auth` (Basic
 * authentication on top of `allowedSources`, generated and rotated by the
 * operator, or brought in a Secret) and `status.credentials` (where the
 * credential is kept and how far its rotation got; never the credential).
 *
 * @module
 */
import { DEFAULTS } from '../defaults.js';
import { DURATION_PATTERN, formatDuration } from './duration.js';

const DNS_SUBDOMAIN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';

/** The annotation whose every new value rotates a generated credential now. */
export const ROTATE_ANNOTATION = 'proxy-op.io/rotate-credentials';

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
    slot: {
      type: 'integer',
      enum: [0, 1],
      description:
        'Which of the Proxy’s two instance names the instance has (a make-before-break rotation alternates them).',
    },
    successor: {
      type: 'object',
      required: ['slot'],
      description:
        'The instance being made with the next credential, on a provider that cannot change a running proxy’s credentials.',
      properties: {
        slot: { type: 'integer', enum: [0, 1] },
        providerID: { type: 'string' },
      },
    },
    retiring: {
      type: 'object',
      required: ['providerID', 'provider'],
      description:
        'The instance a make-before-break rotation replaced: it serves the previous credential until the overlap ends, then it is deleted.',
      properties: {
        providerID: { type: 'string' },
        provider: { type: 'string' },
      },
    },
  },
} as const;
