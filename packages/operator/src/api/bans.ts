/**
 * `ProxyPool.spec.bans`: rules by which the pool's gateway tells a
 * target's ban of a Proxy's address from an ordinary answer, and keeps that
 * Proxy from that host for a while (retrying what it can on another one).
 *
 * @module
 */
import { DURATION_PATTERN } from './duration.js';

/** The schema of `spec.bans`. */
export const bansSpecSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['rules'],
  description:
    "Ban rules the pool's gateway applies to plain-HTTP answers: a match keeps the Proxy from that host for the rule's quarantine, and a request that can be sent again goes to another Proxy. Needs gateway.enabled.",
  properties: {
    rules: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['hosts', 'status', 'quarantine'],
        properties: {
          name: { type: 'string', pattern: '^[A-Za-z0-9._-]{1,63}$' },
          hosts: {
            type: 'array',
            minItems: 1,
            items: { type: 'string', pattern: '^[A-Za-z0-9*.-]{1,253}$' },
            description: 'Target hosts, as globs (*.example.com).',
          },
          status: {
            type: 'array',
            minItems: 1,
            items: { type: 'integer', minimum: 200, maximum: 599 },
            description: 'Answer status codes that are a ban (403, 429).',
          },
          header: {
            type: 'object',
            additionalProperties: false,
            required: ['name', 'pattern'],
            properties: {
              name: { type: 'string', minLength: 1 },
              pattern: {
                type: 'string',
                minLength: 1,
                description: 'A regular expression, case-insensitive.',
              },
            },
          },
          quarantine: {
            type: 'string',
            pattern: DURATION_PATTERN,
            description: 'How long the Proxy is kept from the host (30m).',
          },
        },
      },
    },
    retries: {
      type: 'integer',
      minimum: 0,
      maximum: 10,
      default: 2,
      description: 'Times a banned request is sent again on another Proxy.',
    },
  },
} as const;
