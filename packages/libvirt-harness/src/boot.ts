/**
 * The pieces both guest images are made of, built without root mounts or
 * loop devices: kernel modules picked with their dependencies, a gzipped
 * cpio initramfs around static busybox, a FAT boot partition made bootable
 * by SYSLINUX, and a whole MBR disk assembled from partition images and
 * converted to qcow2.
 *
 * @module
 */
import { execFile } from 'node:child_process';
import { chmod, copyFile, mkdir, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';

const exec = promisify(execFile);

/** Static busybox, from the `busybox-static` package. */
export const BUSYBOX = '/bin/busybox';
const MBR = '/usr/lib/syslinux/mbr/mbr.bin';

/** Runs a shell script in `cwd`, failing on the first failing command. */
export async function sh(script: string, cwd: string): Promise<void> {
  await exec('/bin/sh', ['-ec', script], { cwd, maxBuffer: 16 * 1024 * 1024 });
}

/** Whether `bin` is statically linked (`ldd` refuses it). */
export async function isStatic(bin: string): Promise<boolean> {
  return exec('ldd', [bin]).then(
    () => false,
    () => true,
  );
}

/** Copies static busybox to `dest`, or throws naming the package when it is dynamic. */
export async function copyStaticBusybox(dest: string): Promise<void> {
  if (!(await isStatic(BUSYBOX))) {
    throw new Error(`${BUSYBOX} is not statically linked: install the busybox-static package`);
  }
  await copyFile(BUSYBOX, dest);
}

/**
 * The `.ko` files of `modules` for kernel `kver`, dependencies first, each
 * once (from `modprobe -S <kver> --show-depends`).
 */
export async function moduleFiles(kver: string, modules: readonly string[]): Promise<string[]> {
  const files: string[] = [];
  for (const m of modules) {
    const { stdout } = await exec('modprobe', ['-S', kver, '--show-depends', m]);
    for (const line of stdout.split('\n')) {
      const match = /^insmod (\S+)/.exec(line.trim());
      if (match?.[1] && !files.includes(match[1])) files.push(match[1]);
    }
  }
  return files;
}

/**
 * Copies a module file to `dir`, decompressing `.ko.xz` and `.ko.zst`;
 * resolves with the name it was given there (always ending `.ko`).
 */
export async function copyModule(file: string, dir: string, work: string): Promise<string> {
  let name = basename(file);
  if (name.endsWith('.ko.xz')) {
    name = name.slice(0, -3);
    await sh(`xz -dc "${file}" > "${join(dir, name)}"`, work);
  } else if (name.endsWith('.ko.zst')) {
    name = name.slice(0, -4);
    await sh(`zstd -qdc "${file}" > "${join(dir, name)}"`, work);
  } else {
    await copyFile(file, join(dir, name));
  }
  return name;
}

/**
 * Builds an initramfs (gzipped cpio, newc, owned by root) at `out`: static
 * busybox as /bin/busybox, `init` as /init, the `.ko` files of `modules`
 * (with their dependencies) in /lib/modules with their load order in
 * /lib/modules/order, the empty `dirs`, and whatever `extra` adds to the
 * tree before it is packed.
 */
export async function buildInitramfs(opts: {
  work: string;
  out: string;
  kver: string;
  modules: readonly string[];
  init: string;
  dirs: readonly string[];
  extra?: (root: string) => Promise<void>;
}): Promise<void> {
  const root = join(opts.work, 'initramfs');
  await mkdirs(root, ['bin', 'lib/modules', ...opts.dirs]);
  await copyStaticBusybox(join(root, 'bin/busybox'));
  await chmod(join(root, 'bin/busybox'), 0o755);
  const order: string[] = [];
  for (const file of await moduleFiles(opts.kver, opts.modules)) {
    order.push(await copyModule(file, join(root, 'lib/modules'), opts.work));
  }
  await writeFile(join(root, 'lib/modules/order'), `${order.join('\n')}\n`);
  await writeFile(join(root, 'init'), opts.init, { mode: 0o755 });
  await opts.extra?.(root);
  await sh(
    `cd "${root}" && find . | LC_ALL=C sort | cpio --quiet -o -H newc -R 0:0 | gzip -9 > "${opts.out}"`,
    opts.work,
  );
}

/**
 * Writes a FAT partition image of `mib` MiB at `out` holding `files`
 * (name in the partition → path on this machine) and a `syslinux.cfg`,
 * made bootable with `syslinux --install`.
 */
export async function bootPartition(opts: {
  work: string;
  out: string;
  mib: number;
  label: string;
  files: Readonly<Record<string, string>>;
  syslinuxCfg: string;
}): Promise<void> {
  const cfg = join(opts.work, 'syslinux.cfg');
  await writeFile(cfg, opts.syslinuxCfg);
  await exec('truncate', ['-s', `${opts.mib}M`, opts.out]);
  await exec('mkfs.vfat', ['-n', opts.label, '-h', '2048', opts.out]);
  for (const [name, path] of Object.entries(opts.files)) {
    await exec('mcopy', ['-i', opts.out, path, `::${name}`]);
  }
  await exec('mcopy', ['-i', opts.out, cfg, '::syslinux.cfg']);
  await exec('syslinux', ['--install', opts.out]);
}

/** One partition of {@link assembleDisk}: its image, MBR type and whether it is the boot one. */
export interface DiskPartition {
  readonly image: string;
  /** Its size in MiB (the image's size). */
  readonly mib: number;
  /** The MBR partition type (`6` FAT16, `83` Linux). */
  readonly type: string;
  readonly bootable?: boolean;
}

/**
 * Assembles a whole MBR disk from partition images, the first at 1 MiB and
 * each after the one before, with SYSLINUX's `mbr.bin` in the first 440
 * bytes, and converts it to qcow2 at `out` (`compress`: with compressed
 * clusters, a third of the size for a root file system).
 */
export async function assembleDisk(opts: {
  work: string;
  out: string;
  partitions: readonly DiskPartition[];
  compress?: boolean;
}): Promise<void> {
  const disk = join(opts.work, 'disk.img');
  const total = 1 + opts.partitions.reduce((n, p) => n + p.mib, 0);
  await exec('truncate', ['-s', `${total}M`, disk]);
  let start = 1;
  const table = ['label: dos'];
  for (const p of opts.partitions) {
    const size = p.mib === total - start ? '' : `, size=${p.mib * 2048}`;
    table.push(`start=${start * 2048}${size}, type=${p.type}${p.bootable ? ', bootable' : ''}`);
    start += p.mib;
  }
  await sh(`printf '${table.join('\\n')}\\n' | sfdisk -q "${disk}"`, opts.work);
  start = 1;
  for (const p of opts.partitions) {
    await exec('dd', [
      `if=${p.image}`,
      `of=${disk}`,
      'bs=1M',
      `seek=${start}`,
      'conv=notrunc',
      'status=none',
    ]);
    start += p.mib;
  }
  await exec('dd', [`if=${MBR}`, `of=${disk}`, 'bs=440', 'count=1', 'conv=notrunc', 'status=none']);
  await exec('qemu-img', [
    'convert',
    ...(opts.compress ? ['-c'] : []),
    '-O',
    'qcow2',
    disk,
    opts.out,
  ]);
}

/** Makes each of `dirs` under `root`. */
export async function mkdirs(root: string, dirs: readonly string[]): Promise<void> {
  for (const d of dirs) await mkdir(join(root, d), { recursive: true });
}
