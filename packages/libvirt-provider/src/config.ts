/**
 * The config block of a libvirt provider: its type, its defaults (one
 * object) and its schema, validated whole with every problem's path.
 *
 * @module
 */
import type { ConfigIssue, ConfigResult, ConfigSchema, ProviderDeps } from '@proxy-op/contract';
import { DEFAULT_SOCKET } from '@proxy-op/libvirt-rpc';
import type { Budgets } from './budgets.js';
import { isRecord, type Path, Reader } from './config-reader.js';
import type { ConfigCompat } from './flavour.js';
import { HOST_NAME_RE } from './id.js';
import type { Transport } from './seam.js';

/** What a libvirt provider module takes besides the contract's dependencies. */
export interface LibvirtDeps extends ProviderDeps {
  /**
   * Opens connections instead of SSH to the hosts (tests, and tools that
   * reach libvirtd their own way). The engine still reads the SSH
   * material, bounds, traces and logs every call.
   */
  readonly transport?: Transport | undefined;
  /** Overrides of the budgets (tests shrink them). */
  readonly budgets?: Partial<Budgets> | undefined;
}

/** One hypervisor host, reached over SSH. */
export interface HostConfig {
  /** The host's name in IDs, `placement.zone` and its instances' `location.zone` (a lowercase DNS label). */
  readonly name: string;
  /** Where SSH reaches it: a host name or an IP address. */
  readonly address: string;
  /** The SSH port. Default 22. */
  readonly port: number;
  /** The SSH user; it needs read-write access to libvirtd's socket. */
  readonly user: string;
  /** libvirtd's read-write socket on the host. Default `/var/run/libvirt/libvirt-sock`. */
  readonly socket: string;
  /** The storage pool images, overlays and seeds go to. Default `default`. */
  readonly pool: string;
  /** The Linux bridge the guests' NIC joins; QEMU user networking when unset. */
  readonly bridge?: string | undefined;
  /** The libvirt URI to open on the host. Default `qemu:///system`. */
  readonly uri: string;
  /** The domain type: `kvm` (hardware virtualisation) or `qemu` (software emulation). Default `kvm`. */
  readonly domainType: 'kvm' | 'qemu';
  /**
   * The region the host is in, in the operator's own terms (a site or data
   * centre name), reported in each of its instances' `location.region`.
   * Unset: no region is reported.
   */
  readonly region?: string | undefined;
  /**
   * The country the host is in, as an upper-case ISO 3166-1 alpha-2 code
   * (`DE`), reported in each of its instances' `location.country`. Unset:
   * no country is reported.
   */
  readonly country?: string | undefined;
}

/** A base image of the catalogue, named by its key (`placement.image`). */
export interface ImageEntry {
  /** Where the image is downloaded from (http or https). */
  readonly url: string;
  /** The image's SHA-256, lowercase hex; a download that does not match is never cached. */
  readonly sha256: string;
  /** The image's format. Default `qcow2`. */
  readonly format: 'qcow2' | 'raw';
  /** How it boots. Default `bios`. */
  readonly firmware: 'bios' | 'uefi';
}

/** A machine type of the catalogue (`placement.machineType`). */
export interface MachineTypeEntry {
  /** Virtual CPUs of the domain. */
  readonly vcpus: number;
  /** Memory of the domain, in MiB. */
  readonly memoryMiB: number;
}

/** The validated config block, defaults filled in. */
export interface LibvirtConfig {
  /** The libvirt hosts, in config order (the Checker's targets). */
  readonly hosts: readonly HostConfig[];
  /** The SSH private key (OpenSSH or PEM, no passphrase); read on every dial. */
  readonly sshKeyFile: string;
  /** The known_hosts file the host keys are checked against; read on every dial. */
  readonly knownHostsFile?: string | undefined;
  /** Accept any host key (tests only; logged as a warning). */
  readonly insecureIgnoreHostKey: boolean;
  /** Each guest's disk (its overlay) in GiB; at least the image's own size. Default 10. */
  readonly diskSizeGb: number;
  /** Vendor data added to every seed. */
  readonly vendorData?: string | undefined;
  /** Whether the seed's vendor data installs qemu-guest-agent. Default true. */
  readonly installGuestAgent: boolean;
  /** Whether each guest's serial console is logged to `/var/log/libvirt/qemu/<name>-console.log`. Default true. */
  readonly consoleLog: boolean;
  /** The image catalogue (`placement.image`), by name. */
  readonly images: Readonly<Record<string, ImageEntry>>;
  /** The machine type catalogue (`placement.machineType`), by name. */
  readonly machineTypes: Readonly<Record<string, MachineTypeEntry>>;
}

/** The defaults the schema fills in. */
export const CONFIG_DEFAULTS = Object.freeze({
  port: 22,
  socket: DEFAULT_SOCKET,
  pool: 'default',
  uri: 'qemu:///system',
  domainType: 'kvm',
  sshKeyFile: '/etc/proxy-op/libvirt-ssh/ssh-privatekey',
  knownHostsFile: '/etc/proxy-op/libvirt-ssh/known_hosts',
  insecureIgnoreHostKey: false,
  diskSizeGb: 10,
  installGuestAgent: true,
  consoleLog: true,
  imageFormat: 'qcow2',
  imageFirmware: 'bios',
} as const);

const KEY_RE = /^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$/;
const ADDRESS_RE = /^[A-Za-z0-9]([A-Za-z0-9.:-]*[A-Za-z0-9])?$/;
const USER_RE = /^[a-z_][a-z0-9_.-]{0,31}$/;
const POOL_RE = /^[A-Za-z0-9_][A-Za-z0-9_.:+-]*$/;
const BRIDGE_RE = /^[A-Za-z0-9_.:-]{1,15}$/;
const URI_RE = /^[a-z][a-z0-9+]*:\/\/[^\s]*$/;
const SHA256_RE = /^[0-9a-fA-F]{64}$/;
/** A region name as the contract's `Location` admits one. */
const REGION_RE = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$/;
const COUNTRY_RE = /^[A-Z]{2}$/;
const TOP_KEYS = new Set([
  'hosts',
  'sshKeyFile',
  'knownHostsFile',
  'insecureIgnoreHostKey',
  'diskSizeGb',
  'vendorData',
  'installGuestAgent',
  'consoleLog',
  'images',
  'machineTypes',
]);
const HOST_KEYS = new Set([
  'name',
  'address',
  'port',
  'user',
  'socket',
  'pool',
  'bridge',
  'uri',
  'domainType',
  'region',
  'country',
]);
const IMAGE_KEYS = new Set(['url', 'sha256', 'format', 'firmware']);
const MACHINE_KEYS = new Set(['vcpus', 'memoryMiB']);

function readHost(issues: ConfigIssue[], raw: unknown, i: number): HostConfig | undefined {
  const base: Path = ['hosts', i];
  if (!isRecord(raw)) {
    issues.push({ path: base, message: 'must be an object with name, address and user' });
    return undefined;
  }
  const r = new Reader(issues, raw, base);
  const before = issues.length;
  r.unknown(HOST_KEYS);
  const name = r.str('name', {
    re: HOST_NAME_RE,
    what: 'a host name (a lowercase DNS label: a-z, 0-9 and "-")',
  });
  const address = r.str('address', { re: ADDRESS_RE, what: 'a host name or IP address' });
  const port = r.int('port', 1, 65535, CONFIG_DEFAULTS.port);
  const user = r.str('user', { re: USER_RE, what: 'a user name' });
  const socket = r.str('socket', {
    re: /^\/\S*$/,
    what: 'an absolute path',
    dflt: CONFIG_DEFAULTS.socket,
  });
  const pool = r.str('pool', {
    re: POOL_RE,
    what: 'a storage pool name',
    dflt: CONFIG_DEFAULTS.pool,
  });
  const bridge = r.optStr('bridge', BRIDGE_RE, 'a bridge interface name');
  const uri = r.str('uri', { re: URI_RE, what: 'a libvirt URI', dflt: CONFIG_DEFAULTS.uri });
  const domainType = r.oneOf('domainType', ['kvm', 'qemu'] as const, CONFIG_DEFAULTS.domainType);
  const region = r.optStr(
    'region',
    REGION_RE,
    'a region name (letters, digits, ".", "_", ":", "/", "-"; at most 128)',
  );
  const country = r.optStr(
    'country',
    COUNTRY_RE,
    'an upper-case ISO 3166-1 alpha-2 country code (DE, US)',
  );
  if (issues.length > before) return undefined;
  return {
    name: name as string,
    address: address as string,
    port: port as number,
    user: user as string,
    socket: socket as string,
    pool: pool as string,
    ...(bridge === undefined ? {} : { bridge }),
    uri: uri as string,
    domainType,
    ...(region === undefined ? {} : { region }),
    ...(country === undefined ? {} : { country }),
  };
}

function readImages(issues: ConfigIssue[], raw: unknown): Record<string, ImageEntry> {
  const out: Record<string, ImageEntry> = {};
  if (!isRecord(raw) || Object.keys(raw).length === 0) {
    issues.push({
      path: ['images'],
      message: 'must map at least one image key to { url, sha256 }',
    });
    return out;
  }
  for (const [key, entry] of Object.entries(raw)) {
    if (!KEY_RE.test(key)) {
      issues.push({
        path: ['images', key],
        message: 'is not a valid catalogue key (letters, digits, ".", "_", "-"; at most 63)',
      });
    }
    if (!isRecord(entry)) {
      issues.push({ path: ['images', key], message: 'must be an object with url and sha256' });
      continue;
    }
    const r = new Reader(issues, entry, ['images', key]);
    const before = issues.length;
    r.unknown(IMAGE_KEYS);
    const url = r.str('url');
    if (url !== undefined) {
      let u: URL | undefined;
      try {
        u = new URL(url);
      } catch {
        r.bad('url', `${JSON.stringify(url)} is not a URL`);
      }
      if (u !== undefined && u.protocol !== 'http:' && u.protocol !== 'https:') {
        r.bad('url', 'must be an http or https URL');
      } else if (u !== undefined && (u.username !== '' || u.password !== '')) {
        r.bad('url', 'must not carry credentials');
      }
    }
    const sha256 = r.str('sha256', { re: SHA256_RE, what: 'a SHA-256 in hex (64 digits)' });
    const format = r.oneOf('format', ['qcow2', 'raw'] as const, CONFIG_DEFAULTS.imageFormat);
    const firmware = r.oneOf('firmware', ['bios', 'uefi'] as const, CONFIG_DEFAULTS.imageFirmware);
    if (issues.length === before && url !== undefined && sha256 !== undefined) {
      out[key] = { url, sha256: sha256.toLowerCase(), format, firmware };
    }
  }
  return out;
}

function readMachineTypes(issues: ConfigIssue[], raw: unknown): Record<string, MachineTypeEntry> {
  const out: Record<string, MachineTypeEntry> = {};
  if (!isRecord(raw) || Object.keys(raw).length === 0) {
    issues.push({
      path: ['machineTypes'],
      message: 'must map at least one machine type key to { vcpus, memoryMiB }',
    });
    return out;
  }
  for (const [key, entry] of Object.entries(raw)) {
    if (!KEY_RE.test(key)) {
      issues.push({ path: ['machineTypes', key], message: 'is not a valid catalogue key' });
    }
    if (!isRecord(entry)) {
      issues.push({
        path: ['machineTypes', key],
        message: 'must be an object with vcpus and memoryMiB',
      });
      continue;
    }
    const r = new Reader(issues, entry, ['machineTypes', key]);
    r.unknown(MACHINE_KEYS);
    const vcpus = r.int('vcpus', 1, 1024);
    const memoryMiB = r.int('memoryMiB', 16, 16 * 1024 * 1024);
    if (vcpus !== undefined && memoryMiB !== undefined) out[key] = { vcpus, memoryMiB };
  }
  return out;
}

/** Validates a raw block (after the flavour's compatibility layer); the config or every issue with its path. */
export function validateLibvirtConfig(input: unknown): ConfigResult<LibvirtConfig> {
  const issues: ConfigIssue[] = [];
  if (!isRecord(input)) return { issues: [{ message: 'must be an object', path: [] }] };
  const r = new Reader(issues, input, []);
  r.unknown(TOP_KEYS);

  const hosts: HostConfig[] = [];
  const rawHosts = input.hosts;
  if (!Array.isArray(rawHosts) || rawHosts.length === 0) {
    issues.push({ path: ['hosts'], message: 'must list at least one host' });
  } else {
    const seen = new Set<unknown>();
    rawHosts.forEach((h: unknown, i) => {
      const name = isRecord(h) ? h.name : undefined;
      if (typeof name === 'string' && seen.has(name)) {
        issues.push({ path: ['hosts', i, 'name'], message: `"${name}" is listed twice` });
        return;
      }
      seen.add(name);
      const host = readHost(issues, h, i);
      if (host !== undefined) hosts.push(host);
    });
  }

  const sshKeyFile = r.str('sshKeyFile', {
    re: /^\S+$/,
    what: 'a file path',
    dflt: CONFIG_DEFAULTS.sshKeyFile,
  });
  const insecureIgnoreHostKey = r.bool(
    'insecureIgnoreHostKey',
    CONFIG_DEFAULTS.insecureIgnoreHostKey,
  );
  let knownHostsFile: string | undefined;
  if (insecureIgnoreHostKey) {
    if (input.knownHostsFile !== undefined) {
      r.bad('knownHostsFile', 'cannot be combined with insecureIgnoreHostKey: choose one');
    }
  } else {
    knownHostsFile = r.str('knownHostsFile', {
      re: /^\S+$/,
      what: 'a file path',
      dflt: CONFIG_DEFAULTS.knownHostsFile,
    });
  }
  const diskSizeGb = r.int('diskSizeGb', 1, 65_536, CONFIG_DEFAULTS.diskSizeGb);
  let vendorData: string | undefined;
  if (input.vendorData !== undefined) {
    if (typeof input.vendorData !== 'string') r.bad('vendorData', 'must be a string');
    else if (input.vendorData !== '') vendorData = input.vendorData;
  }
  const installGuestAgent = r.bool('installGuestAgent', CONFIG_DEFAULTS.installGuestAgent);
  const consoleLog = r.bool('consoleLog', CONFIG_DEFAULTS.consoleLog);
  const images = readImages(issues, input.images);
  const machineTypes = readMachineTypes(issues, input.machineTypes);

  if (issues.length > 0) return { issues };
  return {
    value: {
      hosts,
      sshKeyFile: sshKeyFile as string,
      ...(knownHostsFile === undefined ? {} : { knownHostsFile }),
      insecureIgnoreHostKey,
      diskSizeGb: diskSizeGb as number,
      ...(vendorData === undefined ? {} : { vendorData }),
      installGuestAgent,
      consoleLog,
      images,
      machineTypes,
    },
  };
}

/**
 * The config schema of a flavour, in the Standard Schema shape: the
 * flavour's compatibility layer first, then `validateLibvirtConfig`.
 */
export function libvirtConfigSchema(
  vendor: string,
  compat?: ConfigCompat,
): ConfigSchema<LibvirtConfig> {
  return {
    '~standard': {
      version: 1,
      vendor,
      validate: (input: unknown) =>
        validateLibvirtConfig(compat === undefined ? input : compat(input)),
    },
  };
}
