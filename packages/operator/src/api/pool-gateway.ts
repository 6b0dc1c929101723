/**
 * The gateway's part of the ProxyPool resource: `spec.gateway` (one proxy
 * address in front of the pool, run by the operator) and `status.gateway`
 * (where it is and whether a client gets through).
 *
 * @module
 */
import { proxySpecSchema } from './proxy.js';

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
