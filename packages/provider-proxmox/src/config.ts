/**
 * The `proxmox` config block: its type, its defaults and its schema.
 *
 * @module
 */
import type { ConfigIssue, ConfigResult, ConfigSchema, ProviderDeps } from '@proxy-op/contract';
import type { Budgets } from './budgets.js';
import type { ProxmoxApi } from './seam.js';

/** What the Proxmox module takes besides the contract's dependencies. */
export interface ProxmoxDeps extends ProviderDeps {
  /**
   * A seam to use instead of the HTTPS client, for tests and for tools that
   * wrap the API themselves. The provider bounds and logs its calls as it
   * does the client's.
   */
  readonly api?: ProxmoxApi | undefined;
  /** Overrides of the wait budgets (tests shrink them). */
  readonly budgets?: Partial<Budgets> | undefined;
}

/** A template VM the provider clones, named by a catalogue key. */
export interface TemplateEntry {
  /** The template's VMID (at least 100). */
  readonly vmid: number;
}

/** A machine type of the catalogue: what a VM gets. */
export interface MachineTypeEntry {
  /** Virtual CPU cores (above zero). */
  readonly cores: number;
  /** Memory in MiB (above zero). */
  readonly memoryMiB: number;
  /** The boot disk's size in GiB; grown to it when larger than the template's, never shrunk. */
  readonly diskGiB?: number | undefined;
}

/** The VMID range new VMs are allocated from, both ends included. */
export interface VmidRange {
  /** The lowest VMID. */
  readonly min: number;
  /** The highest VMID. */
  readonly max: number;
}

/** The validated `proxmox` config block, defaults filled in. */
export interface ProxmoxConfig {
  /** The API's base URL, `https://host:8006`; `/api2/json` is appended. */
  readonly url: string;
  /** A file holding one line `user@realm!tokenid=secret`; read on every request. */
  readonly tokenFile: string;
  /** A PEM bundle of the CA that signed the node certificate; the system roots when unset. */
  readonly caFile?: string | undefined;
  /** Turns off TLS verification (logged as a warning when the provider is built). */
  readonly insecureSkipTLSVerify: boolean;
  /** Node names as Proxmox knows them; placement.zone picks one. */
  readonly nodes: readonly string[];
  /** The storage seed ISOs are uploaded to and deleted from. */
  readonly isoStorage: string;
  /** Where clones' disks go; the template's own storage when unset. */
  readonly storage?: string | undefined;
  /** Replaces `bridge=` in the cloned net0 when set. */
  readonly bridge?: string | undefined;
  /** Replaces or appends `tag=` in the cloned net0 when set (1 to 4094). */
  readonly vlanTag?: number | undefined;
  /** The VMID range; defaults to 100000 to 199999. */
  readonly vmidRange: VmidRange;
  /** Templates by catalogue key (placement.image). */
  readonly templates: Readonly<Record<string, TemplateEntry>>;
  /** Machine types by catalogue key (placement.machineType). */
  readonly machineTypes: Readonly<Record<string, MachineTypeEntry>>;
  /** One request's timeout, response included, in seconds; 0 means none. Default 30. */
  readonly requestTimeoutSeconds: number;
  /** Vendor data added to every seed. */
  readonly vendorData?: string | undefined;
  /** Whether the seed's vendor data installs qemu-guest-agent. Default true. */
  readonly installGuestAgent: boolean;
}

/** The defaults the schema fills in. */
export const CONFIG_DEFAULTS = Object.freeze({
  insecureSkipTLSVerify: false,
  vmidRange: Object.freeze({ min: 100_000, max: 199_999 }),
  requestTimeoutSeconds: 30,
  installGuestAgent: true,
} as const);

const NODE_RE = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;
const STORAGE_RE = /^[a-zA-Z][a-zA-Z0-9_.-]*$/;
const KEY_RE = /^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$/;
const KNOWN_KEYS = new Set([
  'url',
  'tokenFile',
  'caFile',
  'insecureSkipTLSVerify',
  'nodes',
  'isoStorage',
  'storage',
  'bridge',
  'vlanTag',
  'vmidRange',
  'templates',
  'machineTypes',
  'requestTimeoutSeconds',
  'vendorData',
  'installGuestAgent',
]);

type Path = (string | number)[];

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isInt(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v);
}

/** Validates a raw block; returns the config or the issues, each with its path. */
export function validateProxmoxConfig(input: unknown): ConfigResult<ProxmoxConfig> {
  const issues: ConfigIssue[] = [];
  const bad = (path: Path, message: string) => issues.push({ path, message });
  if (!isRecord(input)) return { issues: [{ message: 'must be an object', path: [] }] };
  for (const key of Object.keys(input)) {
    if (!KNOWN_KEYS.has(key)) bad([key], 'is not a known field');
  }

  const str = (key: string, required: boolean): string | undefined => {
    const v = input[key];
    if (v === undefined) {
      if (required) bad([key], 'is required');
      return undefined;
    }
    if (typeof v !== 'string' || v === '') {
      bad([key], 'must be a non-empty string');
      return undefined;
    }
    return v;
  };
  const bool = (key: string, dflt: boolean): boolean => {
    const v = input[key];
    if (v === undefined) return dflt;
    if (typeof v !== 'boolean') bad([key], 'must be true or false');
    return v === true;
  };

  const url = str('url', true);
  if (url !== undefined) {
    let parsed: URL | undefined;
    try {
      parsed = new URL(url);
    } catch {
      bad(['url'], `"${url}" is not a URL`);
    }
    if (parsed !== undefined) {
      if (parsed.protocol !== 'https:') bad(['url'], `must be an https URL, not "${url}"`);
      else if (parsed.hostname === '') bad(['url'], 'must name a host');
      else if (parsed.pathname !== '/' && parsed.pathname !== '')
        bad(['url'], `must have no path (got "${parsed.pathname}"); /api2/json is appended`);
      else if (parsed.search !== '' || parsed.hash !== '' || parsed.username !== '')
        bad(['url'], 'must have no query, fragment or credentials');
    }
  }
  const tokenFile = str('tokenFile', true);
  const caFile = str('caFile', false);
  const insecureSkipTLSVerify = bool(
    'insecureSkipTLSVerify',
    CONFIG_DEFAULTS.insecureSkipTLSVerify,
  );
  const installGuestAgent = bool('installGuestAgent', CONFIG_DEFAULTS.installGuestAgent);

  const nodes: string[] = [];
  const rawNodes = input.nodes;
  if (rawNodes === undefined) bad(['nodes'], 'is required: list at least one node');
  else if (!Array.isArray(rawNodes) || rawNodes.length === 0)
    bad(['nodes'], 'must be a non-empty list of node names');
  else {
    rawNodes.forEach((n: unknown, i) => {
      if (typeof n !== 'string' || !NODE_RE.test(n)) {
        bad(
          ['nodes', i],
          `${JSON.stringify(n)} is not a node name (lowercase letters, digits, "-")`,
        );
      } else if (nodes.includes(n)) bad(['nodes', i], `"${n}" is listed twice`);
      else nodes.push(n);
    });
  }

  const storageId = (key: string, required: boolean): string | undefined => {
    const v = str(key, required);
    if (v !== undefined && !STORAGE_RE.test(v)) {
      bad(
        [key],
        `"${v}" is not a Proxmox storage id (a letter, then letters, digits, "_", ".", "-")`,
      );
      return undefined;
    }
    return v;
  };
  const isoStorage = storageId('isoStorage', true);
  const storage = storageId('storage', false);
  const bridge = str('bridge', false);
  if (bridge !== undefined && /[,=\s]/.test(bridge))
    bad(['bridge'], `"${bridge}" is not a bridge name`);

  let vlanTag: number | undefined;
  if (input.vlanTag !== undefined) {
    if (!isInt(input.vlanTag) || input.vlanTag < 1 || input.vlanTag > 4094)
      bad(['vlanTag'], 'must be an integer from 1 to 4094');
    else vlanTag = input.vlanTag;
  }

  let vmidRange: VmidRange = CONFIG_DEFAULTS.vmidRange;
  if (input.vmidRange !== undefined) {
    const r = input.vmidRange;
    if (!isRecord(r)) bad(['vmidRange'], 'must be an object with min and max');
    else {
      const min = r.min ?? CONFIG_DEFAULTS.vmidRange.min;
      const max = r.max ?? CONFIG_DEFAULTS.vmidRange.max;
      let ok = true;
      if (!isInt(min) || min < 100) {
        bad(['vmidRange', 'min'], 'must be an integer of at least 100');
        ok = false;
      }
      if (!isInt(max) || max > 999_999_999) {
        bad(['vmidRange', 'max'], 'must be an integer of at most 999999999');
        ok = false;
      }
      if (ok && (min as number) >= (max as number))
        bad(['vmidRange', 'min'], `must be below vmidRange.max (${String(min)} >= ${String(max)})`);
      else if (ok) vmidRange = { min: min as number, max: max as number };
    }
  }

  const templates: Record<string, TemplateEntry> = {};
  const rawTemplates = input.templates;
  if (!isRecord(rawTemplates) || Object.keys(rawTemplates).length === 0) {
    bad(['templates'], 'must map at least one image key to { vmid }');
  } else {
    for (const [key, t] of Object.entries(rawTemplates)) {
      if (!KEY_RE.test(key)) bad(['templates', key], 'is not a valid catalogue key');
      if (!isRecord(t) || !isInt(t.vmid) || t.vmid < 100) {
        bad(['templates', key, 'vmid'], 'must be an integer VMID of at least 100');
      } else templates[key] = { vmid: t.vmid };
    }
  }

  const machineTypes: Record<string, MachineTypeEntry> = {};
  const rawTypes = input.machineTypes;
  if (!isRecord(rawTypes) || Object.keys(rawTypes).length === 0) {
    bad(['machineTypes'], 'must map at least one machine type key to { cores, memoryMiB }');
  } else {
    for (const [key, m] of Object.entries(rawTypes)) {
      if (!KEY_RE.test(key)) bad(['machineTypes', key], 'is not a valid catalogue key');
      if (!isRecord(m)) {
        bad(['machineTypes', key], 'must be an object with cores and memoryMiB');
        continue;
      }
      let ok = true;
      if (!isInt(m.cores) || m.cores <= 0) {
        bad(['machineTypes', key, 'cores'], 'must be an integer above zero');
        ok = false;
      }
      if (!isInt(m.memoryMiB) || m.memoryMiB <= 0) {
        bad(['machineTypes', key, 'memoryMiB'], 'must be an integer above zero');
        ok = false;
      }
      if (m.diskGiB !== undefined && (!isInt(m.diskGiB) || m.diskGiB < 0)) {
        bad(['machineTypes', key, 'diskGiB'], 'must be an integer, not negative');
        ok = false;
      }
      if (ok) {
        machineTypes[key] = {
          cores: m.cores as number,
          memoryMiB: m.memoryMiB as number,
          ...(m.diskGiB === undefined || m.diskGiB === 0 ? {} : { diskGiB: m.diskGiB as number }),
        };
      }
    }
  }

  let requestTimeoutSeconds: number = CONFIG_DEFAULTS.requestTimeoutSeconds;
  if (input.requestTimeoutSeconds !== undefined) {
    const v = input.requestTimeoutSeconds;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0)
      bad(['requestTimeoutSeconds'], 'must be a number of seconds, not negative');
    else requestTimeoutSeconds = v;
  }
  let vendorData: string | undefined;
  if (input.vendorData !== undefined) {
    if (typeof input.vendorData !== 'string') bad(['vendorData'], 'must be a string');
    else if (input.vendorData !== '') vendorData = input.vendorData;
  }

  if (
    issues.length > 0 ||
    url === undefined ||
    tokenFile === undefined ||
    isoStorage === undefined
  ) {
    return { issues };
  }
  return {
    value: {
      url: url.replace(/\/$/, ''),
      tokenFile,
      ...(caFile === undefined ? {} : { caFile }),
      insecureSkipTLSVerify,
      nodes,
      isoStorage,
      ...(storage === undefined ? {} : { storage }),
      ...(bridge === undefined ? {} : { bridge }),
      ...(vlanTag === undefined ? {} : { vlanTag }),
      vmidRange,
      templates,
      machineTypes,
      requestTimeoutSeconds,
      ...(vendorData === undefined ? {} : { vendorData }),
      installGuestAgent,
    },
  };
}

/**
 * The `proxmox` block's schema, in the Standard Schema shape: hand it to
 * `createProvider` or `validateConfig`. Every issue names its field path.
 */
export const configSchema: ConfigSchema<ProxmoxConfig> = {
  '~standard': {
    version: 1,
    vendor: '@proxy-op/provider-proxmox',
    validate: validateProxmoxConfig,
  },
};
