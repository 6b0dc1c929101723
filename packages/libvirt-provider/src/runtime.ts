/**
 * What every operation works with, built once per provider, and the small
 * rules the operations share: volume names, handle checks, error fields.
 *
 * @module
 */
import type { Tracer } from '@opentelemetry/api';
import { BudgetError, type Clock, type Location, type Logger } from '@proxy-op/contract';
import type { KeyedLock } from '@proxy-op/keyedlock';
import { LibvirtError } from '@proxy-op/libvirt-rpc';
import type { Dispatcher } from 'undici';
import type { Budgets } from './budgets.js';
import type { HostConfig, ImageEntry, LibvirtConfig } from './config.js';
import { DialError } from './errors.js';
import type { LibvirtFlavour } from './flavour.js';
import type { HostTable } from './hosts.js';
import type { Domain, StoragePool, StorageVol } from './seam.js';

/** The provider's state, shared by its operations. */
export interface Runtime {
  readonly flavour: LibvirtFlavour;
  readonly config: LibvirtConfig;
  readonly hosts: HostTable;
  /** The provider's logger (`provider` bound; redacts declared secrets). */
  readonly log: Logger;
  readonly clock: Clock;
  readonly budgets: Budgets;
  readonly tracer: Tracer;
  /** Where image downloads go out (undici, with redirects). */
  readonly http: Dispatcher;
  /** One image download per host and image at a time. */
  readonly imageLocks: KeyedLock<string>;
}

/** The overlay volume of a domain: its disk, backed by the cached image. */
export function overlayName(name: string): string {
  return `${name}.qcow2`;
}

/** The seed volume of a domain: its NoCloud ISO. */
export function seedName(name: string): string {
  return `${name}-seed.iso`;
}

/** The prefix of every cached image volume (and marker) in a pool. */
export const IMAGE_PREFIX = 'proxy-op-image-';

/**
 * The cached image's volume: named by its catalogue key and the start of
 * its SHA-256, so a catalogue entry whose image changed gets a new volume
 * and overlays never see their backing file replaced.
 */
export function imageName(key: string, image: ImageEntry): string {
  return `${IMAGE_PREFIX}${key}-${image.sha256.slice(0, 16)}.${image.format}`;
}

/**
 * The marker that makes an image volume a cached image: an empty volume
 * whose name carries the full SHA-256 the download was verified against,
 * written only after the upload finished and matched.
 */
export function markerName(key: string, image: ImageEntry): string {
  return `${imageName(key, image)}.sha256-${image.sha256}`;
}

/** The host config of a host name, or undefined. */
export function hostOf(rt: Runtime, name: string): HostConfig | undefined {
  return rt.config.hosts.find((h) => h.name === name);
}

/**
 * Where a domain on `host` runs (contract `Location`): the host is its
 * zone; region and country only where the host's config names them. Read
 * from the config alone, so Get and ListByTag report the same.
 */
export function hostLocation(host: HostConfig): Location {
  return {
    ...(host.region === undefined ? {} : { region: host.region }),
    zone: host.name,
    ...(host.country === undefined ? {} : { country: host.country }),
  };
}

/** A domain handle as the seam returns it; a TypeError (a malformed answer) otherwise. */
export function checkDomain(d: unknown): Domain {
  const x = d as Partial<Domain> | null | undefined;
  if (typeof x?.name !== 'string' || !(x.uuid instanceof Uint8Array)) {
    throw new TypeError('a domain handle without name or uuid');
  }
  return x as Domain;
}

/** A pool handle as the seam returns it; a TypeError otherwise. */
export function checkPool(p: unknown): StoragePool {
  const x = p as Partial<StoragePool> | null | undefined;
  if (typeof x?.name !== 'string' || !(x.uuid instanceof Uint8Array)) {
    throw new TypeError('a storage pool handle without name or uuid');
  }
  return x as StoragePool;
}

/** A volume handle as the seam returns it; a TypeError otherwise. */
export function checkVol(v: unknown): StorageVol {
  const x = v as Partial<StorageVol> | null | undefined;
  if (typeof x?.name !== 'string' || typeof x.pool !== 'string' || typeof x.key !== 'string') {
    throw new TypeError('a storage volume handle without pool, name or key');
  }
  return x as StorageVol;
}

/** Log fields of a failure: libvirt's code and message, the dial stage, or the error's name. */
export function errorFields(err: unknown): Record<string, string | number> {
  if (LibvirtError.isInstance(err)) return { libvirtCode: err.code, error: err.message };
  if (DialError.isInstance(err)) return { stage: err.stage, error: err.name };
  if (BudgetError.isInstance(err)) return { error: err.name, call: err.call };
  const code = (err as { code?: unknown } | null)?.code;
  return {
    error: err instanceof Error ? err.name : typeof err,
    ...(typeof code === 'string' ? { errorCode: code } : {}),
  };
}

/**
 * A signal for cleanup after a failure: the call's budget only, not the
 * caller's signal (which may be why we are cleaning up).
 */
export function cleanupSignal(rt: Runtime): AbortSignal {
  return AbortSignal.timeout(rt.budgets.call);
}

const NEVER = new AbortController().signal;

/** The operation's signal, or one that never fires: the seam always takes a signal. */
export function signalOf(ctx: { readonly signal: AbortSignal | undefined }): AbortSignal {
  return ctx.signal ?? NEVER;
}
