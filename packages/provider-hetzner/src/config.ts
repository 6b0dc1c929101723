/**
 * The `hetzner` provider's config block: its schema (Standard Schema
 * shape), the defaults of every field in one object, messages naming each
 * field path, and the provider's dependencies besides the contract's.
 *
 * @module
 */
import {
  type ConfigIssue,
  type ConfigSchema,
  cidrProblem,
  type ProviderDeps,
} from '@proxy-op/contract';
import type { HetznerSeam, HetznerTimeouts } from './seam.js';

/** The firewall each server gets, opening the proxy port to the allowed sources only. */
export interface HetznerFirewall {
  /** Make one firewall per server, created before it and deleted after it (default true). */
  readonly enabled: boolean;
  /**
   * Sources used when a request names none (`allowedSources`); default
   * none, so a port is never opened to the world by accident.
   */
  readonly sourceRanges: readonly string[];
}

/** The `hetzner` provider's config block after defaults. */
export interface HetznerConfig {
  /** The file holding the project's API token, read for every request (required). */
  readonly tokenFile: string;
  /** The locations Proxies may be placed in (`fsn1`, `nbg1`, `hel1`, `ash`, `hil`, `sin`), in order; the first is the default (required). */
  readonly locations: readonly string[];
  /** The server types Proxies may ask for (`placement.machineType`). */
  readonly serverTypes: readonly string[];
  /** Image catalogue: a key Proxies name (`placement.image`) to an image name or ID. */
  readonly images: Readonly<Record<string, string>>;
  /** SSH keys of the project (names or IDs) put on every server; none by default. */
  readonly sshKeys: readonly string[];
  /** The per-server firewall. */
  readonly firewall: HetznerFirewall;
  /** The API's base URL (default `https://api.hetzner.cloud/v1`). */
  readonly endpoint: string;
  /** Per-call budgets and Delete's waits. */
  readonly timeouts: HetznerTimeouts;
  /** Whether trace lines carry request bodies (never the user data; default false). */
  readonly logPayloads: boolean;
}

/** What the `hetzner` provider is built with, besides the contract's dependencies. */
export interface HetznerDeps extends ProviderDeps {
  /**
   * The API calls to use instead of the production adapter (tests fake or
   * wrap it). The provider decorates it with its spans and log lines; the
   * per-call budgets of `timeouts` are the production seam's, so this one
   * is bounded by the caller's signal only.
   */
  readonly seam?: HetznerSeam | undefined;
}

/** Every default, in one place (frozen). `tokenFile` and `locations` have none. */
export const CONFIG_DEFAULTS = Object.freeze({
  serverTypes: Object.freeze(['cx23', 'cx33'] as const),
  images: Object.freeze({ 'ubuntu-24.04': 'ubuntu-24.04' } as const),
  sshKeys: Object.freeze([] as const),
  firewall: Object.freeze({ enabled: true, sourceRanges: Object.freeze([] as const) }),
  endpoint: 'https://api.hetzner.cloud/v1',
  timeouts: Object.freeze({ readMs: 30_000, writeMs: 60_000, pollMs: 1_000, deleteWaitMs: 90_000 }),
  logPayloads: false,
} as const) satisfies Omit<HetznerConfig, 'tokenFile' | 'locations'>;

/** A location name: `fsn1`, `ash`. */
export const LOCATION_RE = /^[a-z]{2,8}[0-9]{0,3}$/;
/** A datacenter name: `fsn1-dc14`, `ash-dc1`. */
export const DATACENTER_RE = /^([a-z]{2,8}[0-9]{0,3})-dc[0-9]{1,3}$/;
/** A server type name: `cx23`, `cpx11`, `ccx13`. */
const SERVER_TYPE_RE = /^[a-z][a-z0-9-]{0,31}$/;
/** An image name (`ubuntu-24.04`, `debian-12`) or a numeric image ID. */
const IMAGE_RE = /^(?:[0-9]{1,18}|[a-z0-9][a-z0-9._-]{0,62})$/;
/** A key of the image catalogue. */
const KEY_RE = /^[a-z0-9]([a-z0-9._-]{0,61}[a-z0-9])?$/;
/** An SSH key name or ID of the project. */
const SSH_KEY_RE = /^[^\s,]{1,128}$/;

const FIELDS = [
  'tokenFile',
  'locations',
  'serverTypes',
  'images',
  'sshKeys',
  'firewall',
  'endpoint',
  'timeouts',
  'logPayloads',
] as const;

const TIMEOUT_FIELDS = ['readMs', 'writeMs', 'pollMs', 'deleteWaitMs'] as const;

/** The location of a datacenter: `fsn1-dc14` → `fsn1`; undefined for a name that is not one. */
export function locationOfDatacenter(datacenter: string): string | undefined {
  return DATACENTER_RE.exec(datacenter)?.[1];
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
  if (url.search !== '' || url.hash !== '') return `"${v}" must have no query or fragment`;
  if (url.username !== '' || url.password !== '') return 'must not carry credentials';
  return undefined;
}

type Bad = (path: (string | number)[], message: string) => void;

/** A list of unique strings matching `re`, or its fallback when unset. */
function stringList(
  o: Record<string, unknown>,
  key: 'locations' | 'serverTypes' | 'sshKeys',
  re: RegExp,
  what: string,
  fallback: readonly string[] | undefined,
  bad: Bad,
  allowEmpty = false,
): readonly string[] {
  const v = o[key];
  if (v === undefined) {
    if (fallback === undefined) bad([key], 'is required');
    return fallback ?? [];
  }
  if (!Array.isArray(v) || (!allowEmpty && v.length === 0)) {
    bad([key], `must be a ${allowEmpty ? '' : 'non-empty '}list of ${what}`);
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
}

function imagesOf(v: unknown, bad: Bad): Record<string, string> {
  if (v === undefined) return { ...CONFIG_DEFAULTS.images };
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    bad(['images'], 'must map image keys to image names or IDs');
    return {};
  }
  const images: Record<string, string> = {};
  const entries = Object.entries(v as Record<string, unknown>);
  if (entries.length === 0) bad(['images'], 'must map at least one image key');
  for (const [k, image] of entries) {
    if (!KEY_RE.test(k)) bad(['images', k], 'the key is not a lowercase name');
    else if (typeof image !== 'string' || !IMAGE_RE.test(image)) {
      bad(['images', k], `${JSON.stringify(image)} is not an image name (ubuntu-24.04) or ID`);
    } else images[k] = image;
  }
  return images;
}

function firewallOf(v: unknown, bad: Bad): HetznerFirewall {
  const d = CONFIG_DEFAULTS.firewall;
  if (v === undefined) return d;
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    bad(['firewall'], 'must be an object with enabled and sourceRanges');
    return d;
  }
  const f = v as Record<string, unknown>;
  for (const key of Object.keys(f)) {
    if (key !== 'enabled' && key !== 'sourceRanges') {
      bad(['firewall', key], 'unknown field; expected enabled, sourceRanges');
    }
  }
  let enabled: boolean = d.enabled;
  if (f.enabled !== undefined) {
    if (typeof f.enabled !== 'boolean') bad(['firewall', 'enabled'], 'must be a boolean');
    else enabled = f.enabled;
  }
  let sourceRanges: readonly string[] = d.sourceRanges;
  if (f.sourceRanges !== undefined) {
    if (!Array.isArray(f.sourceRanges)) {
      bad(['firewall', 'sourceRanges'], 'must be a list of CIDRs');
    } else {
      f.sourceRanges.forEach((c, i) => {
        const problem = cidrProblem(c);
        if (problem !== undefined) bad(['firewall', 'sourceRanges', i], problem);
      });
      sourceRanges = f.sourceRanges as string[];
    }
  }
  return { enabled, sourceRanges };
}

function timeoutsOf(v: unknown, bad: Bad): HetznerTimeouts {
  const d = CONFIG_DEFAULTS.timeouts;
  if (v === undefined) return d;
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    bad(['timeouts'], `must be an object with ${TIMEOUT_FIELDS.join(', ')}`);
    return d;
  }
  const t = v as Record<string, unknown>;
  for (const key of Object.keys(t)) {
    if (!(TIMEOUT_FIELDS as readonly string[]).includes(key)) {
      bad(['timeouts', key], `unknown field; expected ${TIMEOUT_FIELDS.join(', ')}`);
    }
  }
  const ms = (key: (typeof TIMEOUT_FIELDS)[number]): number => {
    const value = t[key];
    if (value === undefined) return d[key];
    if (!Number.isInteger(value) || (value as number) < 1) {
      bad(['timeouts', key], 'must be a whole number of milliseconds above zero');
      return d[key];
    }
    return value as number;
  };
  return {
    readMs: ms('readMs'),
    writeMs: ms('writeMs'),
    pollMs: ms('pollMs'),
    deleteWaitMs: ms('deleteWaitMs'),
  };
}

/** The `hetzner` provider's config schema: `tokenFile` and `locations` required, every other field defaulted. */
export const configSchema: ConfigSchema<HetznerConfig> = {
  '~standard': {
    version: 1,
    vendor: '@proxy-op/provider-hetzner',
    validate(input) {
      if (input === null || typeof input !== 'object' || Array.isArray(input)) {
        return { issues: [{ message: 'must be an object with tokenFile and locations' }] };
      }
      const o = input as Record<string, unknown>;
      const issues: ConfigIssue[] = [];
      const bad: Bad = (path, message) => issues.push({ message, path });
      for (const key of Object.keys(o)) {
        if (!(FIELDS as readonly string[]).includes(key)) {
          bad([key], `unknown field; expected one of ${FIELDS.join(', ')}`);
        }
      }

      let tokenFile = '';
      if (o.tokenFile === undefined) bad(['tokenFile'], 'is required');
      else if (typeof o.tokenFile !== 'string' || o.tokenFile === '') {
        bad(['tokenFile'], 'must be a file path');
      } else tokenFile = o.tokenFile;

      const locations = stringList(
        o,
        'locations',
        LOCATION_RE,
        'a location name (fsn1)',
        undefined,
        bad,
      );
      const serverTypes = stringList(
        o,
        'serverTypes',
        SERVER_TYPE_RE,
        'a server type name (cx23)',
        CONFIG_DEFAULTS.serverTypes,
        bad,
      );
      const sshKeys = stringList(
        o,
        'sshKeys',
        SSH_KEY_RE,
        'an SSH key name or ID',
        CONFIG_DEFAULTS.sshKeys,
        bad,
        true,
      );
      const images = imagesOf(o.images, bad);
      const firewall = firewallOf(o.firewall, bad);

      let endpoint: string = CONFIG_DEFAULTS.endpoint;
      if (o.endpoint !== undefined) {
        const problem = endpointProblem(o.endpoint);
        if (problem !== undefined) bad(['endpoint'], problem);
        else endpoint = (o.endpoint as string).replace(/\/+$/, '');
      }

      const timeouts = timeoutsOf(o.timeouts, bad);

      let logPayloads: boolean = CONFIG_DEFAULTS.logPayloads;
      if (o.logPayloads !== undefined) {
        if (typeof o.logPayloads !== 'boolean') bad(['logPayloads'], 'must be a boolean');
        else logPayloads = o.logPayloads;
      }

      if (issues.length > 0) return { issues };
      return {
        value: {
          tokenFile,
          locations,
          serverTypes,
          images,
          sshKeys,
          firewall,
          endpoint,
          timeouts,
          logPayloads,
        },
      };
    },
  },
};
