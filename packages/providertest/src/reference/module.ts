/**
 * The reference provider's module: its config schema, profile and
 * `providerModule`, as a provider package exports them.
 *
 * @module
 */
import type { ConfigIssue, ConfigSchema, Profile, ProviderModule } from '@proxy-op/contract';
import {
  classify,
  type MemoryConfig,
  type MemoryId,
  MemoryImplementation,
  type MemoryProviderDeps,
} from './provider.js';

const KEY = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const DEFAULTS: MemoryConfig = {
  zones: ['zone-a'],
  machineTypes: ['small'],
  images: ['debian-13'],
};

/** The reference provider's config schema: three lists of catalogue keys, each defaulted. */
export const configSchema: ConfigSchema<MemoryConfig> = {
  '~standard': {
    version: 1,
    vendor: '@proxy-op/providertest',
    validate(input) {
      if (input === undefined || input === null) return { value: DEFAULTS };
      if (typeof input !== 'object' || Array.isArray(input)) {
        return { issues: [{ message: 'must be an object with zones, machineTypes and images' }] };
      }
      const o = input as Record<string, unknown>;
      const issues: ConfigIssue[] = [];
      for (const key of Object.keys(o)) {
        if (!(key in DEFAULTS)) {
          issues.push({
            message: `unknown field; expected one of ${Object.keys(DEFAULTS).join(', ')}`,
            path: [key],
          });
        }
      }
      const list = (key: keyof MemoryConfig): readonly string[] => {
        const v = o[key];
        if (v === undefined) return DEFAULTS[key];
        if (!Array.isArray(v) || v.length === 0) {
          issues.push({ message: 'must be a non-empty list of names', path: [key] });
          return [];
        }
        const seen = new Set<string>();
        v.forEach((item, i) => {
          if (typeof item !== 'string' || !KEY.test(item)) {
            issues.push({
              message: `${JSON.stringify(item)} is not a lowercase DNS label`,
              path: [key, i],
            });
          } else if (seen.has(item)) {
            issues.push({ message: `"${item}" is listed twice`, path: [key, i] });
          }
          seen.add(String(item));
        });
        return v as string[];
      };
      const value = {
        zones: list('zones'),
        machineTypes: list('machineTypes'),
        images: list('images'),
      };
      return issues.length > 0 ? { issues } : { value };
    },
  },
};

/** The reference provider's choices on the contract's axes. */
export const profile: Profile = {
  readiness: 'immediate',
  createReturn: 'blocking',
  deleteReturn: 'waits',
  ipSource: 'assigned-at-create',
  gcMark: 'written-metadata',
  createdAt: 'written-at-create',
  listPartial: 'single-call',
  quota: 'detected',
  notFound: 'error-code',
  primaryKey: 'name-is-key',
  provisioningState: 'create-blocks',
  asyncOps: ['backend-lock'],
  secondaryResources: 'explicit',
  credentials: 'mounted-files',
  clientKind: 'in-process',
  timeouts: 'signal-only',
  logging: 'tiered',
  childSpans: 'span-decorator',
  backendTest: 'local-peer',
  credentialRotation: 'in-place',
  // Billed and reclaimable as a cloud's spot instances are, so that the kit's checks of
  // location, billing, preemption and IPv6 ranges run against the reference too.
  billing: { period: 'second', minimumSeconds: 60 },
  preemption: 'possible',
  ipv6Egress: 'range',
};

/** The reference provider as a provider module (type `memory`). */
export const providerModule: ProviderModule<MemoryConfig, MemoryProviderDeps, MemoryId> = {
  type: 'memory',
  configSchema,
  profile,
  classify,
  create: (name, config, deps) => {
    if (deps?.backend === undefined) {
      throw new TypeError('memory provider: deps.backend is required');
    }
    if (typeof deps.credential !== 'function') {
      throw new TypeError('memory provider: deps.credential must be a function');
    }
    return new MemoryImplementation(name, config, deps);
  },
};
