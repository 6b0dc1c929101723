/**
 * A tiny bootable Linux guest for end-to-end tests under QEMU (TCG): a
 * qcow2 disk whose initramfs runs the QEMU guest agent, takes a DHCP
 * address from QEMU's user-mode network and reads a NoCloud seed. Built
 * from Debian packages already installed on the machine, without loop
 * mounts, and cached per kernel version.
 *
 * @module
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { assembleDisk, bootPartition, buildInitramfs } from './boot.js';

const exec = promisify(execFile);

/**
 * The executables {@link buildTestGuest} runs, for `describeWithPeers`
 * (the kernel itself comes from the `linux-image-amd64` package).
 */
export const TEST_GUEST_PEERS = [
  'busybox',
  'qemu-ga',
  'cpio',
  'gzip',
  'modprobe',
  'ldd',
  'mkfs.vfat',
  'mcopy',
  'syslinux',
  'sfdisk',
  'qemu-img',
] as const;

/** The kernel modules the guest loads (with their dependencies), in this order. */
export const TEST_GUEST_MODULES = [
  'virtio_pci',
  'virtio_net',
  'virtio_console',
  'virtio_blk',
  'isofs',
  'ata_piix',
  'ahci',
  'sr_mod',
] as const;

/** The prefix of every line the guest's init writes to its console. */
export const TEST_GUEST_MARK = 'proxy-op-guest:';

/**
 * How long a test waits for the test guest to boot and report its address:
 * a bound that catches a guest that never comes up, not a speed claim. Under
 * TCG it boots in 12 to 30 s on a 2-core machine, and has taken over 100 s
 * with two more guests and a dozen test suites beside it, so the bound is wide.
 */
export const TEST_GUEST_BOOT_BUDGET_MS = 300_000;

const QEMU_GA = '/usr/sbin/qemu-ga';
const PARTITION_MIB = 48;

/**
 * The guest's `/init`. Console lines (each starting with
 * {@link TEST_GUEST_MARK}):
 *
 * - `seed <device> <findfs|label>` once the volume labelled `cidata` is
 *   mounted: found by busybox `findfs`, or else by reading the ISO 9660
 *   label of each CD-ROM and virtio disk. busybox's probe reads the first
 *   0x11000 bytes of a device at once and gives up on anything smaller, so
 *   it misses volumes under 68 KiB (`@proxy-op/nocloud` pads its seeds to
 *   that size); the label read finds those too;
 * - `file <name> <bytes> <sha256>` for each file on the seed;
 * - `begin <name>`, the file in base64, `end <name>` for each file;
 * - `address <ipv4>/<prefix>` once DHCP configured eth0;
 * - `agent /dev/<port>` when qemu-ga starts;
 * - `error ...` when a step fails.
 */
const INIT = `#!/bin/busybox sh
/bin/busybox mkdir -p /proc /sys /dev /run /var/run /tmp /mnt/seed /usr/bin /usr/sbin /sbin
/bin/busybox mount -t devtmpfs devtmpfs /dev
exec 0</dev/console 1>/dev/console 2>&1
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sysfs /sys
M=${TEST_GUEST_MARK}
echo "$M init $(uname -r)"
while read -r mod; do
  insmod "/lib/modules/$mod" || echo "$M error insmod $mod"
done < /lib/modules/order
mdev -s
ip link set lo up
ip link set eth0 up
udhcpc -i eth0 -s /etc/udhcpc.script -t 30 -T 1 -n -q || echo "$M error dhcp"
echo "$M address $(ip -4 -o addr show dev eth0 | awk '{print $4}')"
# The ISO 9660 volume label: 32 bytes at offset 40 of sector 16.
label() { dd if="$1" bs=2048 skip=16 count=1 2>/dev/null | dd bs=1 skip=40 count=32 2>/dev/null | tr -d ' '; }
seed=
how=findfs
i=0
while [ -z "$seed" ] && [ $i -lt 60 ]; do
  seed=$(findfs LABEL=cidata 2>/dev/null || findfs LABEL=CIDATA 2>/dev/null)
  if [ -z "$seed" ]; then
    for b in /sys/block/sr* /sys/block/vd*; do
      [ -e "$b" ] || continue
      case "$(label "/dev/\${b##*/}")" in cidata|CIDATA) seed=/dev/\${b##*/}; how=label ;; esac
    done
  fi
  [ -n "$seed" ] || { sleep 0.5; mdev -s; }
  i=$((i + 1))
done
if [ -n "$seed" ] && mount -t iso9660 -o ro "$seed" /mnt/seed; then
  echo "$M seed $seed $how"
  for f in /mnt/seed/*; do
    echo "$M file $(basename "$f") $(wc -c < "$f") $(sha256sum < "$f" | cut -d' ' -f1)"
  done
  for f in /mnt/seed/*; do
    echo "$M begin $(basename "$f")"
    base64 < "$f"
    echo "$M end $(basename "$f")"
  done
else
  echo "$M error no seed"
fi
port=
for p in /sys/class/virtio-ports/*; do
  [ "$(cat "$p/name" 2>/dev/null)" = org.qemu.guest_agent.0 ] && port=$(basename "$p")
done
if [ -n "$port" ]; then
  echo "$M agent /dev/$port"
  while true; do
    qemu-ga -m virtio-serial -p "/dev/$port" -t /run -f /run/qemu-ga.pid
    echo "$M error qemu-ga exited $?"
    sleep 1
  done &
else
  echo "$M error no agent port"
fi
while true; do sleep 3600; done
`;

const UDHCPC_SCRIPT = `#!/bin/sh
case "$1" in
  deconfig) ip -4 addr flush dev "$interface"; ip link set "$interface" up ;;
  bound|renew)
    ip -4 addr flush dev "$interface"
    ip addr add "$ip/\${mask:-24}" dev "$interface"
    for r in $router; do ip route add default via "$r" dev "$interface"; break; done
    ;;
esac
exit 0
`;

const SYSLINUX_CFG = `DEFAULT guest
PROMPT 0
TIMEOUT 1
LABEL guest
  LINUX /vmlinuz
  INITRD /initrd.gz
  APPEND console=ttyS0,115200 quiet panic=-1
`;

/** A built (or cached) test guest image. */
export interface TestGuest {
  /** The qcow2 image (BIOS boot, SeaBIOS; serial console on ttyS0). */
  readonly path: string;
  /** The guest kernel's version (`uname -r` in the guest). */
  readonly kernelVersion: string;
  /** The image's size in bytes. */
  readonly bytes: number;
  /** False when the image came from the cache. */
  readonly built: boolean;
  /** How long the build took (0 from the cache). */
  readonly buildMs: number;
}

/** Options of {@link buildTestGuest}. */
export interface TestGuestOptions {
  /** Where built images are kept; `<tmpdir>/proxy-op-test-guest` by default. */
  cacheDir?: string;
  /** The kernel to use (a dir under /lib/modules with /boot/vmlinuz-<version>); the newest by default. */
  kernelVersion?: string;
}

/**
 * `version`, or the newest installed kernel (see {@link findGuestKernel});
 * throws naming the package when there is none with an image in /boot.
 */
export async function guestKernel(version?: string): Promise<string> {
  const kver = version ?? (await findGuestKernel());
  if (kver === undefined || !existsSync(`/boot/vmlinuz-${kver}`)) {
    throw new Error('no kernel in /boot with modules in /lib/modules: install linux-image-amd64');
  }
  return kver;
}

/** The newest installed kernel with both an image in /boot and its modules, or undefined. */
export async function findGuestKernel(): Promise<string | undefined> {
  const versions = await readdir('/lib/modules').catch(() => [] as string[]);
  const usable = versions.filter(
    (v) => existsSync(`/boot/vmlinuz-${v}`) && existsSync(`/lib/modules/${v}/modules.dep`),
  );
  usable.sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
  return usable.at(-1);
}

/** The shared libraries `ldd` lists for a dynamic executable. */
async function sharedLibs(bin: string): Promise<string[]> {
  const { stdout } = await exec('ldd', [bin]);
  const libs: string[] = [];
  for (const line of stdout.split('\n')) {
    const match = /(?:=>\s*)?(\/\S+)\s+\(0x/.exec(line);
    if (match?.[1]) libs.push(match[1]);
  }
  return libs;
}

async function initramfs(work: string, kver: string, out: string): Promise<void> {
  await buildInitramfs({
    work,
    out,
    kver,
    modules: TEST_GUEST_MODULES,
    init: INIT,
    dirs: ['sbin', 'usr/sbin', 'etc', 'proc', 'sys', 'dev', 'run'],
    extra: async (root) => {
      await copyFile(QEMU_GA, join(root, 'usr/sbin/qemu-ga'));
      for (const lib of await sharedLibs(QEMU_GA)) {
        await mkdir(join(root, dirname(lib)), { recursive: true });
        await copyFile(lib, join(root, lib));
      }
      await writeFile(join(root, 'etc/udhcpc.script'), UDHCPC_SCRIPT, { mode: 0o755 });
    },
  });
}

async function buildDisk(work: string, kver: string, initrd: string, out: string): Promise<void> {
  const part = join(work, 'part.img');
  await bootPartition({
    work,
    out: part,
    mib: PARTITION_MIB,
    label: 'GUESTBOOT',
    files: { vmlinuz: `/boot/vmlinuz-${kver}`, 'initrd.gz': initrd },
    syslinuxCfg: SYSLINUX_CFG,
  });
  await assembleDisk({
    work,
    out,
    partitions: [{ image: part, mib: PARTITION_MIB, type: '6', bootable: true }],
  });
}

/**
 * Builds the test guest image, or returns the cached one. The image is a
 * whole disk with one bootable FAT partition (SYSLINUX, BIOS boot) holding
 * the installed Debian kernel and an initramfs of static busybox, `qemu-ga`
 * with its shared libraries and the kernel modules of
 * {@link TEST_GUEST_MODULES}. Its init brings up eth0 by DHCP (QEMU user
 * networking gives 10.0.2.15), mounts the seed labelled `cidata` (an IDE
 * CD-ROM or a virtio disk) and prints each file's size, sha256 and base64
 * bytes to the serial console, then runs the guest agent on the virtio port
 * `org.qemu.guest_agent.0`.
 *
 * The cache key is the kernel version and a hash of the recipe, so the
 * image is built once per machine (a few seconds). Needs neither root nor
 * loop devices; needs the Debian packages `linux-image-amd64`,
 * `busybox-static`, `qemu-guest-agent`, `cpio`, `syslinux`,
 * `syslinux-common`, `mtools`, `dosfstools`, `fdisk` and `qemu-utils`.
 */
export async function buildTestGuest(opts: TestGuestOptions = {}): Promise<TestGuest> {
  const kver = await guestKernel(opts.kernelVersion);
  const cacheDir = opts.cacheDir ?? join(tmpdir(), 'proxy-op-test-guest');
  const recipe = createHash('sha256')
    .update(
      [INIT, UDHCPC_SCRIPT, SYSLINUX_CFG, TEST_GUEST_MODULES.join(','), PARTITION_MIB].join('\0'),
    )
    .digest('hex')
    .slice(0, 12);
  const path = join(cacheDir, `test-guest-${kver}-${recipe}.qcow2`);
  if (existsSync(path)) {
    return { path, kernelVersion: kver, bytes: (await stat(path)).size, built: false, buildMs: 0 };
  }
  await mkdir(cacheDir, { recursive: true });
  const started = Date.now();
  const work = await mkdtemp(join(cacheDir, 'build-'));
  try {
    const initrd = join(work, 'initrd.gz');
    await initramfs(work, kver, initrd);
    const out = join(work, 'guest.qcow2');
    await buildDisk(work, kver, initrd, out);
    await rename(out, path); // atomic: a concurrent build just replaces it with the same image
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  return {
    path,
    kernelVersion: kver,
    bytes: (await stat(path)).size,
    built: true,
    buildMs: Date.now() - started,
  };
}
