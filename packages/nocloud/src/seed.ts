import { type Content, describe, isUtf8, toBytes, utf8 } from './bytes.js';
import { NoCloudError } from './errors.js';
import { GUEST_AGENT_SCRIPT } from './guest-agent.js';
import { buildISO } from './iso9660.js';
import { buildMultipart, isMimeMessage, type MultipartPart } from './multipart.js';

/** The volume label cloud-init's NoCloud datasource looks for. */
export const SEED_LABEL = 'cidata';

/**
 * The largest user-data, vendor-data (before and after joining) or
 * network-config a seed takes: 16 MiB each. Over it,
 * `NOCLOUD_TOO_LARGE`. Seeds are built and uploaded whole, so keep them
 * small: a typical one is a few KiB of files in a volume of about 60 KiB.
 */
export const MAX_SEED_FILE_BYTES = 16 * 1024 * 1024;

/** The longest instance id a seed takes. */
export const MAX_INSTANCE_ID_LENGTH = 128;

/** What goes into a NoCloud seed. */
export interface SeedOptions {
  /**
   * meta-data's `instance-id`: cloud-init runs its once-per-instance steps
   * again when this changes. 1 to 128 of `A-Z a-z 0-9 . _ -`, starting
   * with a letter or digit (cloud-init makes a directory of it).
   */
  readonly instanceId: string;
  /**
   * meta-data's `local-hostname`: a host name or a fully qualified domain
   * name (labels of 1 to 63 letters, digits and inner hyphens, joined by
   * dots, 253 characters at most). Defaults to `instanceId`.
   */
  readonly hostname?: string;
  /** The user-data file, written byte for byte and never parsed. May be empty. */
  readonly userData: Content;
  /**
   * Vendor data configured by an administrator. Alone it is the
   * vendor-data file as it is; with the guest-agent script both are joined
   * into a MIME multipart (see {@link buildVendorData}). Empty means none.
   */
  readonly vendorData?: Content;
  /**
   * The network-config file (cloud-init's network configuration, version 1
   * or 2), written byte for byte. Omitted or empty means no such file, and
   * cloud-init falls back to DHCP on the first interface.
   */
  readonly networkConfig?: Content;
  /**
   * Whether vendor data includes {@link GUEST_AGENT_SCRIPT}. Defaults to
   * `true`; set `false` for images that ship the agent already.
   */
  readonly installGuestAgent?: boolean;
  /**
   * The volume label; `cidata` (the default) or `CIDATA`, the two that
   * cloud-init searches for. Anything else is `NOCLOUD_INVALID_LABEL`.
   */
  readonly label?: string;
  /** The time recorded in the volume; defaults to 1970-01-01T00:00:00Z. */
  readonly date?: Date;
  /**
   * The smallest seed to write, in bytes; defaults to {@link SEED_MIN_BYTES}
   * so that probes which skip small devices still find the label. 0 writes
   * the smallest volume the files allow.
   */
  readonly minimumBytes?: number;
}

/** One file of a seed, as {@link seedFiles} returns it. */
export interface SeedFile {
  /** The file's name in the volume's root directory. */
  readonly name: 'meta-data' | 'network-config' | 'user-data' | 'vendor-data';
  /** The file's bytes. */
  readonly data: Uint8Array;
}

/** What {@link buildVendorData} joins. */
export interface VendorDataOptions {
  /** Whether to include {@link GUEST_AGENT_SCRIPT}; defaults to `true`. */
  readonly installGuestAgent?: boolean;
  /** Administrator-configured vendor data; empty means none. */
  readonly vendorData?: Content;
}

const INSTANCE_ID_RE = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
const HOST_LABEL_RE = /^[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?$/;

/**
 * Builds a NoCloud seed volume in memory: an ISO 9660 image labelled
 * `cidata` with Rock Ridge and Joliet names, holding `user-data`,
 * `meta-data`, `vendor-data` when there is any and `network-config` when
 * given (see {@link seedFiles}). Attach it to a guest as a CD-ROM or disk
 * and cloud-init's NoCloud datasource reads it at boot.
 *
 * The same options always give the same bytes. Throws {@link NoCloudError}
 * for values cloud-init would not take (`NOCLOUD_INVALID_NAME`,
 * `NOCLOUD_INVALID_LABEL`, `NOCLOUD_TOO_LARGE`,
 * `NOCLOUD_INVALID_VENDOR_DATA`) and TypeError for arguments of the wrong
 * type.
 *
 * @example
 * ```ts
 * const iso = buildSeedISO({ instanceId: 'proxy-a', userData: '#cloud-config\n' });
 * ```
 */
export function buildSeedISO(options: SeedOptions): Uint8Array {
  const files = seedFiles(options);
  const label = options.label ?? SEED_LABEL;
  const minimumBytes = options.minimumBytes ?? SEED_MIN_BYTES;
  return buildISO(
    options.date === undefined
      ? { label, files, minimumBytes }
      : { label, files, minimumBytes, date: options.date },
  );
}

/**
 * The default smallest seed, 68 KiB (0x11000 bytes). busybox's `findfs`
 * and `blkid` (used by small initramfs images to find `LABEL=cidata`) read
 * this much when probing a device and skip any device that is smaller, so
 * a seed shorter than this would be invisible to them.
 */
export const SEED_MIN_BYTES = 0x11000;

/**
 * The files of a seed, checked, in the order `user-data`, `meta-data`,
 * `vendor-data`, `network-config` (the last two only when there is
 * content). The same checks and errors as {@link buildSeedISO}, for a
 * caller that delivers the files another way.
 */
export function seedFiles(options: SeedOptions): SeedFile[] {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`buildSeedISO: options must be an object, got ${describe(options)}`);
  }
  const label = options.label ?? SEED_LABEL;
  if (typeof label !== 'string') {
    throw new TypeError(`buildSeedISO: label must be a string, got ${describe(label)}`);
  }
  if (label !== 'cidata' && label !== 'CIDATA') {
    throw new NoCloudError(
      'NOCLOUD_INVALID_LABEL',
      'label',
      `label: ${JSON.stringify(label)} is not a label cloud-init's NoCloud datasource looks for; ` +
        'leave it out or use "cidata"',
    );
  }
  if (options.date !== undefined && !(options.date instanceof Date)) {
    throw new TypeError(`buildSeedISO: date must be a Date, got ${describe(options.date)}`);
  }
  const userData = sized(toBytes(options.userData, 'buildSeedISO: userData'), 'userData');
  const metaData = utf8(buildMetaData(options.instanceId, options.hostname));
  const vendorData = buildVendorData(
    options.vendorData === undefined
      ? optionalGuestAgent(options.installGuestAgent)
      : { ...optionalGuestAgent(options.installGuestAgent), vendorData: options.vendorData },
  );
  const files: SeedFile[] = [
    { name: 'user-data', data: userData },
    { name: 'meta-data', data: metaData },
  ];
  if (vendorData !== undefined) files.push({ name: 'vendor-data', data: vendorData });
  if (options.networkConfig !== undefined) {
    const net = sized(
      toBytes(options.networkConfig, 'buildSeedISO: networkConfig'),
      'networkConfig',
    );
    if (net.byteLength > 0) files.push({ name: 'network-config', data: net });
  }
  return files;
}

/**
 * The meta-data file: `instance-id` and `local-hostname` as quoted YAML
 * strings, so no value is read as a number or a boolean. `hostname`
 * defaults to `instanceId`. Throws `NOCLOUD_INVALID_NAME` for a value
 * cloud-init would not take (see {@link SeedOptions}).
 *
 * @example
 * ```ts
 * buildMetaData('proxy-a'); // 'instance-id: "proxy-a"\nlocal-hostname: "proxy-a"\n'
 * ```
 */
export function buildMetaData(instanceId: string, hostname?: string): string {
  if (typeof instanceId !== 'string') {
    throw new TypeError(`buildSeedISO: instanceId must be a string, got ${describe(instanceId)}`);
  }
  if (hostname !== undefined && typeof hostname !== 'string') {
    throw new TypeError(`buildSeedISO: hostname must be a string, got ${describe(hostname)}`);
  }
  if (
    instanceId.length === 0 ||
    instanceId.length > MAX_INSTANCE_ID_LENGTH ||
    !INSTANCE_ID_RE.test(instanceId)
  ) {
    throw new NoCloudError(
      'NOCLOUD_INVALID_NAME',
      'instanceId',
      `instanceId: ${JSON.stringify(instanceId)} is not an instance id this seed takes; use 1 to ` +
        `${MAX_INSTANCE_ID_LENGTH} of A-Z a-z 0-9 . _ -, starting with a letter or digit`,
    );
  }
  const host = hostname ?? instanceId;
  if (!isHostname(host)) {
    throw new NoCloudError(
      'NOCLOUD_INVALID_NAME',
      'hostname',
      `hostname: ${JSON.stringify(host)}${hostname === undefined ? ' (taken from instanceId)' : ''} ` +
        'is not a host name; use labels of 1 to 63 letters, digits and inner hyphens joined by ' +
        'dots, 253 characters at most' +
        (hostname === undefined ? ', or pass hostname' : ''),
    );
  }
  return `instance-id: "${instanceId}"\nlocal-hostname: "${host}"\n`;
}

/**
 * The vendor-data file, or `undefined` when there is nothing to put in it.
 *
 * - Guest agent on (the default) and no configured vendor data: the
 *   {@link GUEST_AGENT_SCRIPT} as it is.
 * - Configured vendor data only: that data as it is.
 * - Both: a MIME multipart ({@link buildMultipart}) of the script, named
 *   `guest-agent.sh`, then the configured data, whose `Content-Type` comes
 *   from its first bytes (`#!` is a shell script, `#cloud-config` is
 *   cloud-config, ...). Configured data that is a MIME message already is
 *   nested as it is, and must then be UTF-8 (else
 *   `NOCLOUD_INVALID_VENDOR_DATA`).
 *
 * Throws `NOCLOUD_TOO_LARGE` when the configured data or the result is over
 * {@link MAX_SEED_FILE_BYTES}.
 */
export function buildVendorData(options: VendorDataOptions = {}): Uint8Array | undefined {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`buildVendorData: options must be an object, got ${describe(options)}`);
  }
  const install = options.installGuestAgent ?? true;
  if (typeof install !== 'boolean') {
    throw new TypeError(
      `buildSeedISO: installGuestAgent must be a boolean, got ${describe(options.installGuestAgent)}`,
    );
  }
  const configured =
    options.vendorData === undefined
      ? new Uint8Array(0)
      : sized(toBytes(options.vendorData, 'buildSeedISO: vendorData'), 'vendorData');
  const script = utf8(GUEST_AGENT_SCRIPT);
  if (configured.byteLength === 0) return install ? script : undefined;
  if (!install) return configured;
  if (isMimeMessage(configured) && !isUtf8(configured)) {
    throw new NoCloudError(
      'NOCLOUD_INVALID_VENDOR_DATA',
      'vendorData',
      'vendorData: a MIME message that is not UTF-8 cannot be read by cloud-init; ' +
        'encode its parts as base64 or pass plain content',
    );
  }
  const parts: MultipartPart[] = [
    { content: script, contentType: 'text/x-shellscript', filename: 'guest-agent.sh' },
    { content: configured },
  ];
  return sized(buildMultipart(parts), 'vendorData');
}

function optionalGuestAgent(value: boolean | undefined): { installGuestAgent?: boolean } {
  return value === undefined ? {} : { installGuestAgent: value };
}

function sized(bytes: Uint8Array, field: string): Uint8Array {
  if (bytes.byteLength > MAX_SEED_FILE_BYTES) {
    throw new NoCloudError(
      'NOCLOUD_TOO_LARGE',
      field,
      `${field}: ${bytes.byteLength} bytes is over the limit of ${MAX_SEED_FILE_BYTES} ` +
        `(${MAX_SEED_FILE_BYTES / 1048576} MiB); make it smaller, for example by fetching ` +
        'large content at boot',
    );
  }
  return bytes;
}

function isHostname(host: string): boolean {
  if (host.length === 0 || host.length > 253) return false;
  return host.split('.').every((label) => label.length <= 63 && HOST_LABEL_RE.test(label));
}
