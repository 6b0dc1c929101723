/**
 * A real Debian cloud image for end-to-end tests of the VM providers:
 * systemd, cloud-init with the NoCloud datasource, Squid, the QEMU guest
 * agent and DHCP by systemd-networkd, on this machine's kernel, booted by
 * SeaBIOS through SYSLINUX. A provider uses it as a base image exactly as
 * it uses a vendor's cloud image: nothing in it knows of proxy-op. Built
 * from Debian's packages with `debootstrap`, without loop mounts, and
 * cached under a key of everything it is made from.
 *
 * @module
 */

import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import {
  copyFile,
  mkdir,
  mkdtemp,
  readdir,
  rename,
  rm,
  stat,
  symlink,
  unlink,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { assembleDisk, bootPartition, buildInitramfs, moduleFiles } from './boot.js';
import { debianMirror, debianSuite, debootstrap, inChroot } from './debian.js';
import { guestKernel } from './guest.js';
import { lockFile, startSentinel } from './process.js';

const exec = promisify(execFile);

/** The executables {@link buildCloudGuest} runs, for `describeWithPeers`. */
export const CLOUD_GUEST_PEERS = [
  'debootstrap',
  'unshare',
  'chroot',
  'busybox',
  'cpio',
  'gzip',
  'modprobe',
  'depmod',
  'mkfs.ext4',
  'mkfs.vfat',
  'mcopy',
  'syslinux',
  'sfdisk',
  'qemu-img',
] as const;

/**
 * The packages installed besides `debootstrap --variant=minbase`'s. cloud-init
 * brings isc-dhcp-client (its dependency); systemd-networkd, in the systemd
 * package, is the DHCP client that runs. python3-cffi-backend is named
 * because debootstrap does not resolve the virtual package python3-cryptography
 * needs. kmod gives the kernel its `modprobe` (cloud-init mounts the seed's
 * iso9660 on demand).
 */
export const CLOUD_GUEST_PACKAGES = [
  'systemd',
  'systemd-sysv',
  'udev',
  'kmod',
  'iproute2',
  'cloud-init',
  'python3-cffi-backend',
  'squid',
  'qemu-guest-agent',
] as const;

/**
 * The kernel modules copied into the image (with their dependencies, indexed
 * by `depmod`): the virtio devices a provider's domain has, ext4 for the
 * root, the IDE and SATA CD-ROM and iso9660 for the seed, autofs4 for systemd.
 */
export const CLOUD_GUEST_MODULES = [
  'virtio_pci',
  'virtio_blk',
  'virtio_net',
  'virtio_console',
  'virtio_rng',
  'ext4',
  'crc32c_generic',
  'isofs',
  'sr_mod',
  'ata_piix',
  'ahci',
  'autofs4',
] as const;

/** The modules the initramfs loads to mount the root, in this order (with dependencies). */
const INITRAMFS_MODULES = ['virtio_pci', 'virtio_blk', 'crc32c_generic', 'ext4'] as const;

const ROOT_LABEL = 'cloudroot';
const BOOT_MIB = 32;
/** The root partition: the whole disk is 1 GiB (1 MiB before the boot partition). */
const ROOT_MIB = 1024 - 1 - BOOT_MIB;

/**
 * The kernel command line: the serial console libvirt logs, the root by
 * label, and no audit, watchdog or CPU mitigations (a test VM under
 * emulation, where each costs boot time).
 */
export const CLOUD_GUEST_CMDLINE = `root=LABEL=${ROOT_LABEL} rw console=ttyS0,115200 quiet mitigations=off audit=0 nowatchdog`;

const SYSLINUX_CFG = `DEFAULT debian
PROMPT 0
TIMEOUT 1
LABEL debian
  LINUX /vmlinuz
  INITRD /initrd.gz
  APPEND ${CLOUD_GUEST_CMDLINE}
`;

/**
 * The initramfs's `/init`: loads the root's modules, finds the root
 * (`root=LABEL=...`, `UUID=...` or a device), mounts it and hands over to its
 * init, as a distribution's initramfs does, and nothing else.
 */
const INIT = `#!/bin/busybox sh
/bin/busybox mkdir -p /usr/bin /usr/sbin /sbin
/bin/busybox --install -s
mount -t devtmpfs devtmpfs /dev
mount -t proc proc /proc
mount -t sysfs sysfs /sys
exec 0</dev/console 1>/dev/console 2>&1
while read -r m; do insmod "/lib/modules/$m" 2>/dev/null; done < /lib/modules/order
root= ; mode=ro ; init=/sbin/init
for arg in $(cat /proc/cmdline); do
  case "$arg" in
    root=*) root=\${arg#root=} ;;
    rw) mode=rw ;;
    init=*) init=\${arg#init=} ;;
  esac
done
dev=
i=0
while [ $i -lt 300 ]; do
  case "$root" in
    LABEL=*|UUID=*) dev=$(findfs "$root" 2>/dev/null) ;;
    *) dev=$root ;;
  esac
  [ -n "$dev" ] && [ -b "$dev" ] && break
  sleep 0.1
  i=$((i + 1))
done
mount -t ext4 -o "$mode" "$dev" /newroot || { echo "initramfs: cannot mount the root $root"; exec sh; }
umount /proc /sys
mount --move /dev /newroot/dev
exec switch_root /newroot "$init"
`;

/**
 * The image's cloud-init settings, as a vendor image sets its own: the
 * NoCloud seed (or none), systemd-networkd for the network, and the modules
 * a proxy's cloud-config uses (files, commands, packages, the vendor-data
 * script, the closing line on the console), so the boot runs no others.
 */
const CLOUD_CFG = `datasource_list: [ NoCloud, None ]
system_info:
  network:
    renderers: [ networkd ]
cloud_init_modules: [ write-files, set_hostname, update_hostname ]
cloud_config_modules: [ runcmd ]
cloud_final_modules: [ package-update-upgrade-install, scripts-vendor, scripts-user, final-message ]
`;

const FSTAB = `LABEL=${ROOT_LABEL} / ext4 rw,errors=remount-ro 0 0\n`;

/** Units enabled beyond what the packages enable. */
const ENABLED_UNITS = ['systemd-networkd.service'] as const;

/**
 * Units the packages enable that a test VM does not need at boot (timers,
 * cron, a VGA getty), and Squid: preinstalled because the guest has no
 * internet to install it from, but not started at boot, as on a cloud image
 * that does not ship it. Only the default cloud-init enables and starts it,
 * with our configuration: Debian's own would serve every private network
 * before ours is applied, and a probe through it would pass too early.
 */
const DISABLED_UNITS = [
  'squid.service',
  'apt-daily.timer',
  'apt-daily-upgrade.timer',
  'dpkg-db-backup.timer',
  'e2scrub_all.timer',
  'e2scrub_reap.service',
  'fstrim.timer',
  'logrotate.timer',
  'cron.service',
  'getty@tty1.service',
  'systemd-pstore.service',
  'remote-fs.target',
  'cloud-init-hotplugd.socket',
] as const;

/** Units masked: binfmt_misc, whose module the image does not carry, and the gettys on tty2 to tty6. */
const MASKED_UNITS = [
  'getty-static.service',
  'systemd-binfmt.service',
  'proc-sys-fs-binfmt_misc.automount',
  'proc-sys-fs-binfmt_misc.mount',
] as const;

/** Left out of the image: package lists and archives, docs, manuals, translations. */
const PRUNED = [
  'var/cache/apt/archives',
  'var/lib/apt/lists',
  'usr/share/doc',
  'usr/share/man',
  'usr/share/info',
  'usr/share/locale',
  'debootstrap',
] as const;

/** A built (or cached) cloud guest image. */
export interface CloudGuest {
  /** The qcow2 image (1 GiB virtual; BIOS boot; serial console on ttyS0). */
  readonly path: string;
  /** The Debian release and the mirror it came from. */
  readonly suite: string;
  readonly mirror: string;
  /** The kernel (this machine's, `uname -r` in the guest). */
  readonly kernelVersion: string;
  /** The image file's size in bytes. */
  readonly bytes: number;
  /** False when the image came from the cache. */
  readonly built: boolean;
  /** How long the build took (0 from the cache). */
  readonly buildMs: number;
}

/** Options of {@link buildCloudGuest}. */
export interface CloudGuestOptions {
  /** Where built images are kept; `<tmpdir>/proxy-op-cloud-guest` by default. */
  cacheDir?: string;
  /** The Debian release; this machine's by default (`bookworm` when it is not Debian). */
  suite?: string;
  /** The mirror; the one this machine's apt uses for `suite` by default. */
  mirror?: string;
  /** The kernel (a version under /lib/modules with /boot/vmlinuz-<version>); the newest by default. */
  kernelVersion?: string;
}

/** The cache key: a hash of every input of the image. */
async function cacheKey(suite: string, mirror: string, kver: string): Promise<string> {
  const kernel = await stat(`/boot/vmlinuz-${kver}`);
  return createHash('sha256')
    .update(
      [
        suite,
        mirror,
        kver,
        kernel.size,
        kernel.mtimeMs,
        CLOUD_GUEST_PACKAGES.join(','),
        CLOUD_GUEST_MODULES.join(','),
        INITRAMFS_MODULES.join(','),
        INIT,
        SYSLINUX_CFG,
        CLOUD_CFG,
        FSTAB,
        ENABLED_UNITS.join(','),
        DISABLED_UNITS.join(','),
        MASKED_UNITS.join(','),
        PRUNED.join(','),
        BOOT_MIB,
        ROOT_MIB,
      ].join('\0'),
    )
    .digest('hex')
    .slice(0, 12);
}

/** Copies the modules into the root under their own paths and indexes them with depmod. */
async function installModules(root: string, kver: string): Promise<void> {
  const base = `/lib/modules/${kver}`;
  const dest = join(root, 'lib/modules', kver);
  for (const file of await moduleFiles(kver, CLOUD_GUEST_MODULES)) {
    const target = join(dest, file.slice(base.length + 1));
    await mkdir(dirname(target), { recursive: true });
    await copyFile(file, target);
  }
  for (const f of ['modules.builtin', 'modules.builtin.modinfo', 'modules.order']) {
    if (existsSync(join(base, f))) await copyFile(join(base, f), join(dest, f));
  }
  await exec('depmod', ['-b', root, kver]);
}

/** The image's own settings: cloud-init, fstab, units, and nothing of this machine's. */
async function configure(root: string): Promise<void> {
  await writeFile(join(root, 'etc/cloud/cloud.cfg.d/90_image.cfg'), CLOUD_CFG);
  await writeFile(join(root, 'etc/fstab'), FSTAB);
  // Each VM makes its own machine ID on first boot; debootstrap copied this machine's name and resolver.
  await writeFile(join(root, 'etc/machine-id'), '');
  await rm(join(root, 'var/lib/dbus/machine-id'), { force: true });
  await writeFile(join(root, 'etc/hostname'), 'localhost\n');
  await writeFile(join(root, 'etc/resolv.conf'), '');
  await inChroot(root, ['systemctl', 'enable', ...ENABLED_UNITS]);
  await inChroot(root, ['systemctl', 'disable', ...DISABLED_UNITS]);
  for (const unit of MASKED_UNITS) {
    const link = join(root, 'etc/systemd/system', unit);
    await unlink(link).catch(() => {});
    await symlink('/dev/null', link);
  }
  for (const p of PRUNED) {
    const dir = join(root, p);
    for (const entry of await readdir(dir).catch(() => [] as string[])) {
      if (p === 'usr/share/locale' && entry === 'locale.alias') continue;
      await rm(join(dir, entry), { recursive: true, force: true });
    }
  }
  for (const log of await readdir(join(root, 'var/log'))) {
    if (log.endsWith('.log')) await writeFile(join(root, 'var/log', log), '');
  }
}

/**
 * Builds the cloud guest image, or returns the cached one. The image is a
 * 1 GiB MBR disk: a FAT partition with this machine's kernel, a small
 * initramfs (static busybox and the modules the root needs) and SYSLINUX,
 * and an ext4 root made with `mkfs.ext4 -d` from a `debootstrap
 * --variant=minbase` tree of {@link CLOUD_GUEST_PACKAGES}, with the modules
 * of {@link CLOUD_GUEST_MODULES}, cloud-init limited to NoCloud and the
 * modules a proxy's cloud-config uses, and the units a test VM does not
 * need disabled; then `qemu-img convert -c -O qcow2`.
 *
 * Cached in `cacheDir` under a hash of the release, mirror, kernel and
 * recipe; a build runs in a dir of its own there and is renamed into place
 * when done, and a sentinel removes that dir if this process dies first.
 * Needs root, the network to the mirror, and the Debian packages
 * `debootstrap`, `linux-image-amd64`, `busybox-static`, `cpio`, `kmod`,
 * `e2fsprogs`, `dosfstools`, `mtools`, `syslinux`, `syslinux-common`,
 * `fdisk` and `qemu-utils`.
 */
export async function buildCloudGuest(opts: CloudGuestOptions = {}): Promise<CloudGuest> {
  const kver = await guestKernel(opts.kernelVersion);
  const suite = opts.suite ?? (await debianSuite()) ?? 'bookworm';
  const mirror = opts.mirror ?? (await debianMirror(suite));
  const cacheDir = opts.cacheDir ?? join(tmpdir(), 'proxy-op-cloud-guest');
  const path = join(
    cacheDir,
    `cloud-guest-${suite}-${kver}-${await cacheKey(suite, mirror, kver)}.qcow2`,
  );
  const done = async (built: boolean, buildMs: number): Promise<CloudGuest> => ({
    path,
    suite,
    mirror,
    kernelVersion: kver,
    bytes: (await stat(path)).size,
    built,
    buildMs,
  });
  if (existsSync(path)) return done(false, 0);
  await mkdir(cacheDir, { recursive: true });
  const started = Date.now();
  // One build per machine at a time: a second suite waits for the first one's image.
  const release = await lockFile(`${path}.lock`, () => existsSync(path));
  if (release === undefined) return done(false, 0);
  try {
    await build(cacheDir, path, kver, suite, mirror);
  } finally {
    await release();
  }
  return done(true, Date.now() - started);
}

async function build(
  cacheDir: string,
  path: string,
  kver: string,
  suite: string,
  mirror: string,
): Promise<void> {
  if (existsSync(path)) return;
  const work = await mkdtemp(join(cacheDir, 'build-'));
  const sentinel = startSentinel(work, { removeDir: true });
  try {
    const root = join(work, 'root');
    await debootstrap({ root, suite, mirror, include: CLOUD_GUEST_PACKAGES });
    await installModules(root, kver);
    await configure(root);
    const initrd = join(work, 'initrd.gz');
    await buildInitramfs({
      work,
      out: initrd,
      kver,
      modules: INITRAMFS_MODULES,
      init: INIT,
      dirs: ['dev', 'proc', 'sys', 'newroot'],
    });
    const boot = join(work, 'boot.img');
    await bootPartition({
      work,
      out: boot,
      mib: BOOT_MIB,
      label: 'BOOT',
      files: { vmlinuz: `/boot/vmlinuz-${kver}`, 'initrd.gz': initrd },
      syslinuxCfg: SYSLINUX_CFG,
    });
    const rootImg = join(work, 'root.img');
    await exec('truncate', ['-s', `${ROOT_MIB}M`, rootImg]);
    await exec('mkfs.ext4', ['-q', '-L', ROOT_LABEL, '-d', root, rootImg], {
      maxBuffer: 16 * 1024 * 1024,
    });
    await rm(root, { recursive: true, force: true });
    const out = join(work, 'guest.qcow2');
    await assembleDisk({
      work,
      out,
      compress: true,
      partitions: [
        { image: boot, mib: BOOT_MIB, type: '6', bootable: true },
        { image: rootImg, mib: ROOT_MIB, type: '83' },
      ],
    });
    await rename(out, path);
  } finally {
    await rm(work, { recursive: true, force: true });
    sentinel.disarm();
  }
}
