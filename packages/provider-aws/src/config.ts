/**
 * The `aws` provider's config block: its schema (Standard Schema shape),
 * the defaults of every field in one object, messages naming each field
 * path, and the provider's dependencies besides the contract's.
 *
 * @module
 */
import type { ConfigIssue, ConfigSchema, ProviderDeps } from '@proxy-op/contract';
import { cidrProblem } from '@proxy-op/contract/cidr';
import type { AwsCredentials } from './credentials.js';
import type { Ec2Seam } from './seam.js';

/** The security group each proxy gets: its sources and the groups added beside it. */
export interface AwsSecurityGroup {
  /**
   * The sources the proxy port is opened to when a request names none (the
   * operator always passes the Proxy's `allowedSources`); default none, so
   * a port is never opened to the world by accident.
   */
  readonly sourceRanges: readonly string[];
  /** Groups of your own every instance also gets (SSH from a bastion, say); default none. */
  readonly extraGroupIds: readonly string[];
}

/** Per-call time budgets, in milliseconds (contract §4.16). */
export interface AwsTimeouts {
  /** One read: a Describe call, every page of it (default 30000). */
  readonly readMs: number;
  /** One write: RunInstances, TerminateInstances, a security group change (default 60000). */
  readonly writeMs: number;
}

/**
 * How long the provider allows for EC2's eventual consistency: an instance
 * it launched that Describe calls do not show yet is waited for (up to
 * `waitMs` per operation) and then reported Transient, for `windowMs`
 * after the launch, instead of as missing.
 */
export interface AwsConsistency {
  /** How long after RunInstances an instance missing from an answer counts as not visible yet (default 120000). */
  readonly windowMs: number;
  /** How long one operation waits for it to show before it answers Transient (default 5000). */
  readonly waitMs: number;
}

/** The `aws` provider's config block after defaults. */
export interface AwsConfig {
  /** The region the instances live in (required), `eu-central-1`. */
  readonly region: string;
  /** The VPC of the subnets, where the security groups are made (required). */
  readonly vpcId: string;
  /**
   * The availability zones Proxies may be placed in, each with the subnet its
   * instances go into, in order; the first is the default (required).
   */
  readonly subnets: Readonly<Record<string, string>>;
  /** Image catalogue: a key Proxies name (`placement.image`) to an AMI ID of the region (required). */
  readonly images: Readonly<Record<string, string>>;
  /** The instance types Proxies may ask for (`placement.machineType`). */
  readonly instanceTypes: readonly string[];
  /**
   * Which address Get reports: `public` (the default: the public IPv4
   * address, or the IPv6 address where the instance has no public IPv4
   * one) or `private` (no public address is made, for operators inside the
   * VPC).
   */
  readonly addressMode: 'public' | 'private';
  /** Give each instance an IPv6 address from its subnet (default false). */
  readonly ipv6: boolean;
  /** `on-demand` (the default) or `spot` (cheaper, and EC2 may take the instance back at any time). */
  readonly market: 'on-demand' | 'spot';
  /** The most a Spot Instance may cost per hour, in USD (`0.01`); unset: the On-Demand price. */
  readonly spotMaxPrice?: string | undefined;
  /** The security group of each proxy. */
  readonly securityGroup: AwsSecurityGroup;
  /** The EC2 endpoint (a VPC endpoint, a test double); unset: the region's. */
  readonly endpoint?: string | undefined;
  /**
   * A credentials file in the shared credentials format, read on every
   * request (a mounted Secret); unset: the SDK's default chain.
   */
  readonly credentialsFile?: string | undefined;
  /** The profile of `credentialsFile` to read (default `default`). */
  readonly credentialsProfile: string;
  /** Attempts of one call by the SDK, the first included (default 3); the call's budget bounds them all. */
  readonly maxAttempts: number;
  /** Per-call budgets. */
  readonly timeouts: AwsTimeouts;
  /** Eventual consistency just after a launch. */
  readonly consistency: AwsConsistency;
}

/** What the `aws` provider is built with, besides the contract's dependencies. */
export interface AwsDeps extends ProviderDeps {
  /**
   * The credentials, as the SDK takes them (an identity, or a function
   * resolving one). Unset: `aws.credentialsFile`, else the SDK's default
   * chain.
   */
  readonly credentials?: AwsCredentials | undefined;
  /**
   * The EC2 calls to use instead of `@aws-sdk/client-ec2` (tests wrap or
   * fake it). The provider decorates it with its spans and log lines; the
   * per-call budgets of `timeouts` are the production seam's, so this one
   * is bounded by the caller's signal only.
   */
  readonly seam?: Ec2Seam | undefined;
}

/** Every default, in one place (frozen). `region`, `vpcId`, `subnets` and `images` have none. */
export const CONFIG_DEFAULTS = Object.freeze({
  instanceTypes: Object.freeze(['t3.micro', 't3.small', 't3.medium'] as const),
  addressMode: 'public',
  ipv6: false,
  market: 'on-demand',
  securityGroup: Object.freeze({
    sourceRanges: Object.freeze([] as const),
    extraGroupIds: Object.freeze([] as const),
  }),
  credentialsProfile: 'default',
  maxAttempts: 3,
  timeouts: Object.freeze({ readMs: 30_000, writeMs: 60_000 }),
  consistency: Object.freeze({ windowMs: 120_000, waitMs: 5_000 }),
} as const) satisfies Omit<AwsConfig, 'region' | 'vpcId' | 'subnets' | 'images'>;

/** A region name: `eu-central-1`, `us-gov-west-1`, `ap-southeast-5`. */
export const REGION_RE = /^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-\d{1,2}$/;
/** An availability zone name: the region and a letter, `eu-central-1a`. */
export const ZONE_RE = /^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-\d{1,2}[a-z]$/;
/** An instance name: a DNS label (what the contract's names are). */
export const NAME_RE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const id = (prefix: string) => new RegExp(`^${prefix}-([0-9a-f]{8}|[0-9a-f]{17})$`);
const VPC_RE = id('vpc');
const SUBNET_RE = id('subnet');
const AMI_RE = id('ami');
const GROUP_RE = id('sg');
const INSTANCE_TYPE_RE = /^[a-z][a-z0-9-]*\.[a-z0-9]+$/;
const KEY_RE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const PRICE_RE = /^\d{1,5}(\.\d{1,8})?$/;
const PROFILE_RE = /^[A-Za-z0-9_.-]{1,64}$/;

const FIELDS = [
  'region',
  'vpcId',
  'subnets',
  'images',
  'instanceTypes',
  'addressMode',
  'ipv6',
  'market',
  'spotMaxPrice',
  'securityGroup',
  'endpoint',
  'credentialsFile',
  'credentialsProfile',
  'maxAttempts',
  'timeouts',
  'consistency',
] as const;

type Bad = (path: (string | number)[], message: string) => void;

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
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
    return `"${v}" must have no path, query or fragment`;
  }
  if (url.username !== '' || url.password !== '') return 'must not carry credentials';
  return undefined;
}

/** An object of named keys to IDs (`subnets`, `images`), checked entry by entry. */
function idMap(
  v: unknown,
  key: string,
  keyOk: (k: string) => string | undefined,
  valueRe: RegExp,
  what: string,
  bad: Bad,
): Record<string, string> {
  if (v === undefined) {
    bad([key], 'is required');
    return {};
  }
  if (!isRecord(v) || Object.keys(v).length === 0) {
    bad([key], `must map at least one key to ${what}`);
    return {};
  }
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(v)) {
    const problem = keyOk(k);
    if (problem !== undefined) bad([key, k], problem);
    else if (typeof x !== 'string' || !valueRe.test(x))
      bad([key, k], `${JSON.stringify(x)} is not ${what}`);
    else out[k] = x;
  }
  return out;
}

/** A block of named positive whole numbers (`timeouts`, `consistency`), each defaulted. */
function numbers<K extends string>(
  key: string,
  v: unknown,
  defaults: Readonly<Record<K, number>>,
  bad: Bad,
): Record<K, number> {
  const out = { ...defaults } as Record<K, number>;
  if (v === undefined) return out;
  const names = Object.keys(defaults) as K[];
  if (!isRecord(v)) {
    bad([key], `must be an object with ${names.join(', ')}`);
    return out;
  }
  for (const k of Object.keys(v)) {
    if (!names.includes(k as K)) bad([key, k], `unknown field; expected ${names.join(', ')}`);
  }
  for (const k of names) {
    const x = v[k];
    if (x === undefined) continue;
    if (!Number.isInteger(x) || (x as number) < 1) {
      bad([key, k], 'must be a whole number of milliseconds above zero');
    } else out[k] = x as number;
  }
  return out;
}

function securityGroupOf(v: unknown, bad: Bad): AwsSecurityGroup {
  const d = CONFIG_DEFAULTS.securityGroup;
  if (v === undefined) return d;
  if (!isRecord(v)) {
    bad(['securityGroup'], 'must be an object with sourceRanges and extraGroupIds');
    return d;
  }
  for (const k of Object.keys(v)) {
    if (k !== 'sourceRanges' && k !== 'extraGroupIds') {
      bad(['securityGroup', k], 'unknown field; expected sourceRanges, extraGroupIds');
    }
  }
  const list = (k: 'sourceRanges' | 'extraGroupIds', check: (x: unknown) => string | undefined) => {
    const x = v[k];
    if (x === undefined) return d[k];
    if (!Array.isArray(x)) {
      bad(['securityGroup', k], 'must be a list');
      return d[k];
    }
    x.forEach((item, i) => {
      const problem = check(item);
      if (problem !== undefined) bad(['securityGroup', k, i], problem);
    });
    return x as string[];
  };
  return {
    sourceRanges: list('sourceRanges', cidrProblem),
    extraGroupIds: list('extraGroupIds', (x) =>
      typeof x === 'string' && GROUP_RE.test(x)
        ? undefined
        : `${JSON.stringify(x)} is not a security group ID (sg-...)`,
    ),
  };
}

function validate(o: Record<string, unknown>, bad: Bad): AwsConfig {
  for (const key of Object.keys(o)) {
    if (!(FIELDS as readonly string[]).includes(key)) {
      bad([key], `unknown field; expected one of ${FIELDS.join(', ')}`);
    }
  }
  let region = '';
  if (o.region === undefined) bad(['region'], 'is required');
  else if (typeof o.region !== 'string' || !REGION_RE.test(o.region)) {
    bad(['region'], `${JSON.stringify(o.region)} is not a region name (eu-central-1)`);
  } else region = o.region;

  let vpcId = '';
  if (o.vpcId === undefined) bad(['vpcId'], 'is required');
  else if (typeof o.vpcId !== 'string' || !VPC_RE.test(o.vpcId)) {
    bad(['vpcId'], `${JSON.stringify(o.vpcId)} is not a VPC ID (vpc-...)`);
  } else vpcId = o.vpcId;

  const subnets = idMap(
    o.subnets,
    'subnets',
    (zone) =>
      !ZONE_RE.test(zone)
        ? `"${zone}" is not an availability zone name (eu-central-1a)`
        : region !== '' && !(zone.startsWith(region) && zone.length === region.length + 1)
          ? `"${zone}" is not a zone of region ${region}`
          : undefined,
    SUBNET_RE,
    'a subnet ID (subnet-...)',
    bad,
  );
  const images = idMap(
    o.images,
    'images',
    (k) => (KEY_RE.test(k) ? undefined : 'the key is not a lowercase DNS label'),
    AMI_RE,
    'an AMI ID (ami-...)',
    bad,
  );

  let instanceTypes: readonly string[] = CONFIG_DEFAULTS.instanceTypes;
  if (o.instanceTypes !== undefined) {
    const v = o.instanceTypes;
    if (!Array.isArray(v) || v.length === 0) {
      bad(['instanceTypes'], 'must be a non-empty list of instance types');
    } else {
      const seen = new Set<string>();
      v.forEach((t, i) => {
        if (typeof t !== 'string' || !INSTANCE_TYPE_RE.test(t)) {
          bad(['instanceTypes', i], `${JSON.stringify(t)} is not an instance type (t3.micro)`);
        } else if (seen.has(t)) bad(['instanceTypes', i], `"${t}" is listed twice`);
        seen.add(String(t));
      });
      instanceTypes = v as string[];
    }
  }

  const oneOf = <T extends string>(key: string, v: unknown, choices: readonly T[], d: T): T => {
    if (v === undefined) return d;
    if (!choices.includes(v as T)) {
      bad([key], `must be one of ${choices.map((c) => `"${c}"`).join(', ')}`);
      return d;
    }
    return v as T;
  };
  const addressMode = oneOf(
    'addressMode',
    o.addressMode,
    ['public', 'private'],
    CONFIG_DEFAULTS.addressMode,
  );
  const market = oneOf('market', o.market, ['on-demand', 'spot'], CONFIG_DEFAULTS.market);

  let ipv6: boolean = CONFIG_DEFAULTS.ipv6;
  if (o.ipv6 !== undefined) {
    if (typeof o.ipv6 !== 'boolean') bad(['ipv6'], 'must be a boolean');
    else ipv6 = o.ipv6;
  }

  let spotMaxPrice: string | undefined;
  if (o.spotMaxPrice !== undefined) {
    if (typeof o.spotMaxPrice !== 'string' || !PRICE_RE.test(o.spotMaxPrice)) {
      bad(
        ['spotMaxPrice'],
        `${JSON.stringify(o.spotMaxPrice)} is not a price in USD per hour ("0.0125")`,
      );
    } else if (market !== 'spot') {
      bad(['spotMaxPrice'], 'applies to Spot Instances only; set market to "spot" or leave it out');
    } else spotMaxPrice = o.spotMaxPrice;
  }

  const securityGroup = securityGroupOf(o.securityGroup, bad);

  let endpoint: string | undefined;
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
  let credentialsProfile: string = CONFIG_DEFAULTS.credentialsProfile;
  if (o.credentialsProfile !== undefined) {
    if (typeof o.credentialsProfile !== 'string' || !PROFILE_RE.test(o.credentialsProfile)) {
      bad(['credentialsProfile'], `${JSON.stringify(o.credentialsProfile)} is not a profile name`);
    } else credentialsProfile = o.credentialsProfile;
  }

  let maxAttempts: number = CONFIG_DEFAULTS.maxAttempts;
  if (o.maxAttempts !== undefined) {
    if (
      !Number.isInteger(o.maxAttempts) ||
      (o.maxAttempts as number) < 1 ||
      (o.maxAttempts as number) > 10
    ) {
      bad(['maxAttempts'], 'must be a whole number from 1 to 10');
    } else maxAttempts = o.maxAttempts as number;
  }

  const timeouts = numbers('timeouts', o.timeouts, CONFIG_DEFAULTS.timeouts, bad);
  const consistency = numbers('consistency', o.consistency, CONFIG_DEFAULTS.consistency, bad);

  return {
    region,
    vpcId,
    subnets,
    images,
    instanceTypes,
    addressMode,
    ipv6,
    market,
    spotMaxPrice,
    securityGroup,
    endpoint,
    credentialsFile,
    credentialsProfile,
    maxAttempts,
    timeouts,
    consistency,
  };
}

/** The `aws` provider's config schema: `region`, `vpcId`, `subnets` and `images` required, the rest defaulted. */
export const configSchema: ConfigSchema<AwsConfig> = {
  '~standard': {
    version: 1,
    vendor: '@proxy-op/provider-aws',
    validate(input) {
      if (!isRecord(input)) {
        return {
          issues: [{ message: 'must be an object with region, vpcId, subnets and images' }],
        };
      }
      const issues: ConfigIssue[] = [];
      const value = validate(input, (path, message) => issues.push({ message, path }));
      return issues.length > 0 ? { issues } : { value };
    },
  },
};
