/**
 * Reading and rewriting the parts of a VM config the provider touches: the
 * boot disk and its size, the NIC, cloud-init drives.
 *
 * @module
 */
import type { VmConfig } from './seam.js';

const DISK_KEY_RE = /^(scsi|virtio|sata|ide)\d+$/;

/**
 * The boot disk's key: the first disk in `boot: order=...` that is not a
 * CD-ROM, else `bootdisk`, else the first present of scsi0, virtio0,
 * sata0, ide0. Undefined when there is none.
 */
export function bootDisk(config: VmConfig): string | undefined {
  const isDisk = (key: string) => {
    const v = config[key];
    return DISK_KEY_RE.test(key) && v !== undefined && !/(^|,)media=cdrom(,|$)/.test(v);
  };
  const order = /(?:^|,)order=([^,]*)/.exec(config.boot ?? '')?.[1];
  if (order !== undefined) {
    for (const key of order.split(';')) if (isDisk(key.trim())) return key.trim();
  }
  const legacy = config.bootdisk;
  if (legacy !== undefined && isDisk(legacy)) return legacy;
  return ['scsi0', 'virtio0', 'sata0', 'ide0'].find(isDisk);
}

/** A disk value's `size=` in bytes (`32G`, `512M`, `2T`, `1024K`); undefined when unreadable. */
export function diskSizeBytes(value: string | undefined): number | undefined {
  const m = /(?:^|,)size=(\d+(?:\.\d+)?)([KMGT]?)(?:,|$)/.exec(value ?? '');
  if (m === null) return undefined;
  const unit = { '': 1, K: 2 ** 10, M: 2 ** 20, G: 2 ** 30, T: 2 ** 40 }[m[2] as '' | 'K'];
  return Math.round(Number(m[1]) * unit);
}

/** The disk keys whose value is a Proxmox cloud-init drive. */
export function cloudInitDrives(config: VmConfig): string[] {
  return Object.entries(config)
    .filter(([k, v]) => DISK_KEY_RE.test(k) && v.includes('cloudinit'))
    .map(([k]) => k);
}

/**
 * Rewrites a net0 value: options are kept in order, the model and MAC
 * untouched; `bridge=` and `tag=` are replaced or appended when given.
 */
export function rewriteNet0(
  net0: string,
  set: { bridge?: string | undefined; vlanTag?: number | undefined },
): string {
  const opts = net0.split(',').filter((o) => o !== '');
  const put = (key: string, value: string) => {
    const i = opts.findIndex((o) => o.startsWith(`${key}=`));
    if (i >= 0) opts[i] = `${key}=${value}`;
    else opts.push(`${key}=${value}`);
  };
  if (set.bridge !== undefined) put('bridge', set.bridge);
  if (set.vlanTag !== undefined) put('tag', String(set.vlanTag));
  return opts.join(',');
}
