/**
 * The `gcp` provider's config block: its schema (Standard Schema shape),
 * the defaults of every field in one object, messages naming each field
 * path, and the provider's dependencies besides the contract's.
 *
 * @module
 */
import { isIPv4 } from 'node:net';
import type { ConfigIssue, ConfigSchema, ProviderDeps } from '@proxy-op/contract';
import type { GcpAuth } from './auth.js';
import type { ComputeSeam, GcpTimeouts } from './seam.js';

/** The opt-in firewall rule that opens the proxy port to the allowed sources. */
export interface GcpFirewall {
  /** Make one rule per instance, created and deleted with it (default false). */
  readonly enabled: boolean;
  /**
   * Sources used when the request's cloud-init names none (the operator's
   * rendered Squid config always names them); default none, so a rule is
   * never opened to the world by accident.
   */
  readonly sourceRanges: readonly string[];
  /** The rule's priority, 0 to 65535 (default 1000). */
  readonly priority: number;
}

/**
 * How instances are provisioned: `STANDARD`, or `SPOT` (cheaper, and
 * Compute Engine may take them back at any time, by stopping or deleting
 * them as `instanceTerminationAction` says).
 */
export interface GcpScheduling {
  /** `STANDARD` (the default) or `SPOT`. */
  readonly provisioningModel: 'STANDARD' | 'SPOT';
  /** What Compute Engine does to a Spot instance it takes back: `STOP` (the default) or `DELETE`. */
  readonly instanceTerminationAction: 'STOP' | 'DELETE';
}

/** The `gcp` provider's config block after defaults. */
export interface GcpConfig {
  /** The project the instances live in (required). */
  readonly project: string;
  /** The zones Proxies may be placed in, in order; the first is the default (required). */
  readonly zones: readonly string[];
  /** The machine types Proxies may ask for (`placement.machineType`). */
  readonly machineTypes: readonly string[];
  /** Image catalogue: a key Proxies name (`placement.image`) to an image or image family path. */
  readonly images: Readonly<Record<string, string>>;
  /** The VPC network, by name or `projects/<p>/global/networks/<n>` (default `default`). */
  readonly network: string;
  /** The subnetwork, by name (in the zone's region) or full path; unset: the network's auto subnet. */
  readonly subnetwork?: string | undefined;
  /** The network tag every instance carries (default `proxy-op`), for rules of your own. */
  readonly networkTag: string;
  /** Boot disk size in GB (default 10). */
  readonly diskSizeGb: number;
  /** Boot disk type (default `pd-balanced`). */
  readonly diskType: string;
  /**
   * Which address Get reports: the ephemeral external NAT address
   * (`external`, the default) or the internal one (`internal`: no external
   * address is made, for operators inside the VPC).
   */
  readonly addressMode: 'external' | 'internal';
  /** The opt-in firewall rule. */
  readonly firewall: GcpFirewall;
  /** Standard or Spot instances. */
  readonly scheduling: GcpScheduling;
  /** The Compute API endpoint (default `https://compute.googleapis.com`). */
  readonly endpoint: string;
  /** A service-account key file; unset: Application Default Credentials. */
  readonly credentialsFile?: string | undefined;
  /** Per-call budgets. */
  readonly timeouts: GcpTimeouts;
  /** Whether trace lines carry request bodies (never the user-data; default false). */
  readonly logPayloads: boolean;
}

/** What the `gcp` provider is built with, besides the contract's dependencies. */
export interface GcpDeps extends ProviderDeps {
  /**
   * The credentials: a `GoogleAuth` or an `AuthClient` of
   * `google-auth-library`. Unset: `gcp.credentialsFile`, else Application
   * Default Credentials.
   */
  readonly auth?: GcpAuth | undefined;
  /**
   * The Compute calls to use instead of `@google-cloud/compute` (tests wrap
   * or fake it). The provider decorates it with its spans and log lines;
   * the per-call budgets of `timeouts` are the production seam's, so this
   * one is bounded by the caller's signal only.
   */
  readonly seam?: ComputeSeam | undefined;
}

/** The Ubuntu 24.04 LTS image family: it runs cloud-init, which the proxy software needs. */
export const UBUNTU_2404 = 'projects/ubuntu-os-cloud/global/images/family/ubuntu-2404-lts-amd64';

/** Every default, in one place (frozen). `project` and `zones` have none. */
export const CONFIG_DEFAULTS = Object.freeze({
  machineTypes: Object.freeze(['e2-micro', 'e2-small', 'e2-medium'] as const),
  images: Object.freeze({ 'ubuntu-2404': UBUNTU_2404 } as const),
  network: 'default',
  networkTag: 'proxy-op',
  diskSizeGb: 10,
  diskType: 'pd-balanced',
  addressMode: 'external',
  firewall: Object.freeze({
    enabled: false,
    sourceRanges: Object.freeze([] as const),
    priority: 1000,
  }),
  scheduling: Object.freeze({ provisioningModel: 'STANDARD', instanceTerminationAction: 'STOP' }),
  endpoint: 'https://compute.googleapis.com',
  timeouts: Object.freeze({ readMs: 30_000, writeMs: 60_000 }),
  logPayloads: false,
} as const) satisfies Omit<GcpConfig, 'project' | 'zones'>;

/** A project ID, optionally domain-scoped (`example.com:my-project`). */
export const PROJECT_RE = /^(?:[a-z0-9][-a-z0-9.]{0,61}[a-z0-9]:)?[a-z][-a-z0-9]{4,28}[a-z0-9]$/;
/** A zone name: `us-central1-a`. */
export const ZONE_RE = /^[a-z]+-[a-z]+[0-9]+-[a-z]$/;
/** A Compute resource name (RFC 1035): instances, networks, rules, tags. */
export const NAME_RE = /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/;
const MACHINE_TYPE_RE = /^[a-z][-a-z0-9]{0,61}[a-z0-9]$/;
const IMAGE_RE =
  /^projects\/[a-z0-9.:-]+\/global\/images\/(?:family\/)?[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/;
const NETWORK_RE = /^projects\/[a-z0-9.:-]+\/global\/networks\/[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/;
const SUBNETWORK_RE =
  /^projects\/[a-z0-9.:-]+\/regions\/[a-z]+-[a-z]+[0-9]+\/subnetworks\/[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/;
const KEY_RE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

const FIELDS = [
  'project',
  'zones',
  'machineTypes',
  'images',
  'network',
  'subnetwork',
  'networkTag',
  'diskSizeGb',
  'diskType',
  'addressMode',
  'firewall',
  'scheduling',
  'endpoint',
  'credentialsFile',
  'timeouts',
  'logPayloads',
] as const;

/** The region of a zone: `us-central1-a` → `us-central1`. */
export function regionOf(zone: string): string {
  return zone.replace(/-[a-z]$/, '');
}

/** Why `cidr` is not an IPv4 CIDR (`203.0.113.0/24`) or address, or undefined when it is one. */
export function ipv4CidrProblem(cidr: unknown): string | undefined {
  if (typeof cidr !== 'string') return 'must be a string';
  const [addr = '', prefix, ...rest] = cidr.split('/');
  if (rest.length > 0 || !isIPv4(addr)) return `"${cidr}" is not an IPv4 CIDR (a.b.c.d/n)`;
  if (prefix !== undefined && (!/^\d{1,2}$/.test(prefix) || Number(prefix) > 32)) {
    return `"${cidr}" has a prefix length that is not 0 to 32`;
  }
  return undefined;
}

/** The endpoint's parts as the Compute client takes them. */
export interface EndpointParts {
  readonly host: string;
  readonly port: number;
  readonly protocol: 'http' | 'https';
}

/** Splits an endpoint URL (`https://compute.googleapis.com`, `http://127.0.0.1:8080`). */
export function endpointParts(endpoint: string): EndpointParts {
  const url = new URL(endpoint);
  const protocol = url.protocol === 'http:' ? 'http' : 'https';
  const port = url.port === '' ? (protocol === 'http' ? 80 : 443) : Number(url.port);
  return { host: url.hostname.replace(/^\[|\]$/g, ''), port, protocol };
}

function endpointProblem(v: unknown): string | undefined {
  if (typeof v !== 'string') return 'must be an http or https URL';
  let url: URL;
  try {
    url = new URL(v);
  } catch {
    return `"${v}" is not a URL`;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    return `"${v}" must be an http or https URL`;
  }
  if ((url.pathname !== '/' && url.pathname !== '') || url.search !== '' || url.hash !== '') {
    return `"${v}" must have no path, query or fragment (the client adds /compute/v1/)`;
  }
  if (url.username !== '' || url.password !== '') return 'must not carry credentials';
  return undefined;
}

/** The `scheduling` block, defaulted field by field; problems go to `bad`. */
function schedulingOf(
  v: unknown,
  bad: (path: (string | number)[], message: string) => void,
): GcpScheduling {
  const d = CONFIG_DEFAULTS.scheduling;
  if (v === undefined) return d;
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    bad(['scheduling'], 'must be an object with provisioningModel and instanceTerminationAction');
    return d;
  }
  const s = v as Record<string, unknown>;
  for (const key of Object.keys(s)) {
    if (key !== 'provisioningModel' && key !== 'instanceTerminationAction') {
      bad(
        ['scheduling', key],
        'unknown field; expected provisioningModel, instanceTerminationAction',
      );
    }
  }
  const model = s.provisioningModel ?? d.provisioningModel;
  if (model !== 'STANDARD' && model !== 'SPOT') {
    bad(['scheduling', 'provisioningModel'], 'must be "STANDARD" or "SPOT"');
  }
  const action = s.instanceTerminationAction ?? d.instanceTerminationAction;
  if (action !== 'STOP' && action !== 'DELETE') {
    bad(['scheduling', 'instanceTerminationAction'], 'must be "STOP" or "DELETE"');
  } else if (model === 'STANDARD' && s.instanceTerminationAction !== undefined) {
    bad(
      ['scheduling', 'instanceTerminationAction'],
      'applies to Spot instances only; set provisioningModel to "SPOT" or leave it out',
    );
  }
  return {
    provisioningModel: model === 'SPOT' ? 'SPOT' : 'STANDARD',
    instanceTerminationAction: action === 'DELETE' ? 'DELETE' : 'STOP',
  };
}

/** The `gcp` provider's config schema: `project` and `zones` required, every other field defaulted. */
export const configSchema: ConfigSchema<GcpConfig> = {
  '~standard': {
    version: 1,
    vendor: '@proxy-op/provider-gcp',
    validate(input) {
      if (input === null || typeof input !== 'object' || Array.isArray(input)) {
        return { issues: [{ message: 'must be an object with project and zones' }] };
      }
      const o = input as Record<string, unknown>;
      const issues: ConfigIssue[] = [];
      const bad = (path: (string | number)[], message: string) => issues.push({ message, path });
      for (const key of Object.keys(o)) {
        if (!(FIELDS as readonly string[]).includes(key)) {
          bad([key], `unknown field; expected one of ${FIELDS.join(', ')}`);
        }
      }

      let project = '';
      if (o.project === undefined) bad(['project'], 'is required');
      else if (typeof o.project !== 'string' || !PROJECT_RE.test(o.project)) {
        bad(['project'], `${JSON.stringify(o.project)} is not a project ID`);
      } else project = o.project;

      const list = (
        key: 'zones' | 'machineTypes',
        re: RegExp,
        what: string,
        fallback: readonly string[] | undefined,
      ): readonly string[] => {
        const v = o[key];
        if (v === undefined) {
          if (fallback === undefined) bad([key], 'is required');
          return fallback ?? [];
        }
        if (!Array.isArray(v) || v.length === 0) {
          bad([key], `must be a non-empty list of ${what}`);
          return [];
        }
        const seen = new Set<string>();
        v.forEach((item, i) => {
          if (typeof item !== 'string' || !re.test(item)) {
            bad([key, i], `${JSON.stringify(item)} is not ${what}`);
          } else if (seen.has(item)) bad([key, i], `"${item}" is listed twice`);
          seen.add(String(item));
        });
        return v as string[];
      };
      const zones = list('zones', ZONE_RE, 'a zone name (us-central1-a)', undefined);
      const machineTypes = list(
        'machineTypes',
        MACHINE_TYPE_RE,
        'a machine type name (e2-small)',
        CONFIG_DEFAULTS.machineTypes,
      );

      let images: Record<string, string> = { ...CONFIG_DEFAULTS.images };
      if (o.images !== undefined) {
        if (o.images === null || typeof o.images !== 'object' || Array.isArray(o.images)) {
          bad(['images'], 'must map image keys to image paths');
        } else {
          images = {};
          const entries = Object.entries(o.images as Record<string, unknown>);
          if (entries.length === 0) bad(['images'], 'must map at least one image key');
          for (const [k, v] of entries) {
            if (!KEY_RE.test(k)) bad(['images', k], 'the key is not a lowercase DNS label');
            else if (typeof v !== 'string' || !IMAGE_RE.test(v)) {
              bad(
                ['images', k],
                `${JSON.stringify(v)} is not projects/<project>/global/images/<image> or projects/<project>/global/images/family/<family>`,
              );
            } else images[k] = v;
          }
        }
      }

      const name = (key: 'network' | 'networkTag' | 'diskType', full?: RegExp): string => {
        const v = o[key];
        if (v === undefined) return CONFIG_DEFAULTS[key];
        if (typeof v !== 'string' || !(NAME_RE.test(v) || (full?.test(v) ?? false))) {
          bad([key], `${JSON.stringify(v)} is not a Compute resource name`);
          return CONFIG_DEFAULTS[key];
        }
        return v;
      };
      const network = name('network', NETWORK_RE);
      const networkTag = name('networkTag');
      const diskType = name('diskType');
      let subnetwork: string | undefined;
      if (o.subnetwork !== undefined) {
        if (
          typeof o.subnetwork !== 'string' ||
          !(NAME_RE.test(o.subnetwork) || SUBNETWORK_RE.test(o.subnetwork))
        ) {
          bad(
            ['subnetwork'],
            `${JSON.stringify(o.subnetwork)} is not a subnetwork name or projects/<p>/regions/<r>/subnetworks/<n>`,
          );
        } else subnetwork = o.subnetwork;
      }

      let diskSizeGb: number = CONFIG_DEFAULTS.diskSizeGb;
      if (o.diskSizeGb !== undefined) {
        if (!Number.isInteger(o.diskSizeGb) || (o.diskSizeGb as number) < 10) {
          bad(['diskSizeGb'], 'must be an integer of at least 10');
        } else diskSizeGb = o.diskSizeGb as number;
      }

      let addressMode: GcpConfig['addressMode'] = CONFIG_DEFAULTS.addressMode;
      if (o.addressMode !== undefined) {
        if (o.addressMode !== 'external' && o.addressMode !== 'internal') {
          bad(['addressMode'], 'must be "external" or "internal"');
        } else addressMode = o.addressMode;
      }

      let firewall: GcpFirewall = CONFIG_DEFAULTS.firewall;
      if (o.firewall !== undefined) {
        const f = o.firewall as Record<string, unknown>;
        if (f === null || typeof f !== 'object' || Array.isArray(f)) {
          bad(['firewall'], 'must be an object with enabled, sourceRanges, priority');
        } else {
          for (const key of Object.keys(f)) {
            if (!['enabled', 'sourceRanges', 'priority'].includes(key)) {
              bad(['firewall', key], 'unknown field; expected enabled, sourceRanges, priority');
            }
          }
          let enabled: boolean = CONFIG_DEFAULTS.firewall.enabled;
          if (f.enabled !== undefined) {
            if (typeof f.enabled !== 'boolean') bad(['firewall', 'enabled'], 'must be a boolean');
            else enabled = f.enabled;
          }
          let sourceRanges: readonly string[] = CONFIG_DEFAULTS.firewall.sourceRanges;
          if (f.sourceRanges !== undefined) {
            if (!Array.isArray(f.sourceRanges)) {
              bad(['firewall', 'sourceRanges'], 'must be a list of IPv4 CIDRs');
            } else {
              f.sourceRanges.forEach((c, i) => {
                const problem = ipv4CidrProblem(c);
                if (problem !== undefined) bad(['firewall', 'sourceRanges', i], problem);
              });
              sourceRanges = f.sourceRanges as string[];
            }
          }
          let priority: number = CONFIG_DEFAULTS.firewall.priority;
          if (f.priority !== undefined) {
            if (
              !Number.isInteger(f.priority) ||
              (f.priority as number) < 0 ||
              (f.priority as number) > 65535
            ) {
              bad(['firewall', 'priority'], 'must be an integer from 0 to 65535');
            } else priority = f.priority as number;
          }
          firewall = { enabled, sourceRanges, priority };
        }
      }

      const scheduling = schedulingOf(o.scheduling, bad);

      let endpoint: string = CONFIG_DEFAULTS.endpoint;
      if (o.endpoint !== undefined) {
        const problem = endpointProblem(o.endpoint);
        if (problem !== undefined) bad(['endpoint'], problem);
        else endpoint = (o.endpoint as string).replace(/\/$/, '');
      }

      let credentialsFile: string | undefined;
      if (o.credentialsFile !== undefined) {
        if (typeof o.credentialsFile !== 'string' || o.credentialsFile === '') {
          bad(['credentialsFile'], 'must be a file path');
        } else credentialsFile = o.credentialsFile;
      }

      let timeouts: GcpTimeouts = CONFIG_DEFAULTS.timeouts;
      if (o.timeouts !== undefined) {
        const t = o.timeouts as Record<string, unknown>;
        if (t === null || typeof t !== 'object' || Array.isArray(t)) {
          bad(['timeouts'], 'must be an object with readMs and writeMs');
        } else {
          const ms = (key: keyof GcpTimeouts): number => {
            const v = t[key];
            if (v === undefined) return CONFIG_DEFAULTS.timeouts[key];
            if (!Number.isInteger(v) || (v as number) < 1) {
              bad(['timeouts', key], 'must be a whole number of milliseconds above zero');
              return CONFIG_DEFAULTS.timeouts[key];
            }
            return v as number;
          };
          for (const key of Object.keys(t)) {
            if (key !== 'readMs' && key !== 'writeMs') {
              bad(['timeouts', key], 'unknown field; expected readMs, writeMs');
            }
          }
          timeouts = { readMs: ms('readMs'), writeMs: ms('writeMs') };
        }
      }

      let logPayloads: boolean = CONFIG_DEFAULTS.logPayloads;
      if (o.logPayloads !== undefined) {
        if (typeof o.logPayloads !== 'boolean') bad(['logPayloads'], 'must be a boolean');
        else logPayloads = o.logPayloads;
      }

      if (issues.length > 0) return { issues };
      return {
        value: {
          project,
          zones,
          machineTypes,
          images,
          network,
          subnetwork,
          networkTag,
          diskSizeGb,
          diskType,
          addressMode,
          firewall,
          scheduling,
          endpoint,
          credentialsFile,
          timeouts,
          logPayloads,
        },
      };
    },
  },
};
