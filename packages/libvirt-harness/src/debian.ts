/**
 * A Debian root file system from Debian's packages: the mirror and release
 * this machine's apt uses, and `debootstrap` run so that nothing it
 * installs can start a service on this machine or reach its network.
 *
 * @module
 */
import { execFile } from 'node:child_process';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const exec = promisify(execFile);

/** Where Debian's archive is when this machine's apt names none. */
export const DEFAULT_DEBIAN_MIRROR = 'http://deb.debian.org/debian';

/** The release this machine runs (`VERSION_CODENAME` of /etc/os-release), or undefined. */
export async function debianSuite(): Promise<string | undefined> {
  const text = await readFile('/etc/os-release', 'utf8').catch(() => '');
  return /^VERSION_CODENAME="?([a-z]+)"?$/m.exec(text)?.[1];
}

/** One apt source: its URIs and suites. */
interface AptSource {
  readonly uris: readonly string[];
  readonly suites: readonly string[];
}

/** The sources of a one-line `.list` file (`deb [opts] uri suite comp...`). */
function listSources(text: string): AptSource[] {
  const out: AptSource[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.replace(/#.*/, '').trim();
    const m = /^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)/.exec(line);
    if (m?.[1] && m[2]) out.push({ uris: [m[1]], suites: [m[2]] });
  }
  return out;
}

/** The sources of a deb822 `.sources` file (stanzas with `Types`, `URIs`, `Suites`). */
function deb822Sources(text: string): AptSource[] {
  const out: AptSource[] = [];
  for (const stanza of text.split(/\n\s*\n/)) {
    const field = (name: string) =>
      new RegExp(`^${name}:\\s*(.*)$`, 'mi')
        .exec(stanza.replace(/^#.*$/gm, ''))?.[1]
        ?.trim()
        .split(/\s+/) ?? [];
    if (!field('Types').includes('deb')) continue;
    if (/^Enabled:\s*no\s*$/im.test(stanza)) continue;
    out.push({ uris: field('URIs'), suites: field('Suites') });
  }
  return out;
}

/**
 * The mirror this machine's apt fetches `suite` from (the first source in
 * /etc/apt/sources.list and /etc/apt/sources.list.d naming that suite
 * itself, not `-updates` or `-security`), or {@link DEFAULT_DEBIAN_MIRROR}.
 */
export async function debianMirror(suite: string, etc = '/etc/apt'): Promise<string> {
  const sources: AptSource[] = listSources(
    await readFile(join(etc, 'sources.list'), 'utf8').catch(() => ''),
  );
  const files = (await readdir(join(etc, 'sources.list.d')).catch(() => [] as string[])).sort();
  for (const f of files) {
    const text = await readFile(join(etc, 'sources.list.d', f), 'utf8').catch(() => '');
    if (f.endsWith('.list')) sources.push(...listSources(text));
    else if (f.endsWith('.sources')) sources.push(...deb822Sources(text));
  }
  const found = sources.find((s) => s.suites.includes(suite) && s.uris[0] !== undefined);
  return found?.uris[0]?.replace(/\/+$/, '') ?? DEFAULT_DEBIAN_MIRROR;
}

/** What {@link debootstrap} installs, and from where. */
export interface DebootstrapOptions {
  /** The new root (an empty or missing dir). */
  readonly root: string;
  readonly suite: string;
  readonly mirror: string;
  /** Packages besides the `minbase` variant's. */
  readonly include: readonly string[];
  /** Milliseconds for the whole run; 20 minutes by default. */
  readonly timeoutMs?: number;
}

/** `unshare` arguments that chroot into a root in new mount, network and PID namespaces. */
function isolatedChroot(root: string): string[] {
  return [
    '--mount',
    '--net',
    '--pid',
    '--fork',
    '--kill-child',
    '--propagation',
    'private',
    '--',
    'chroot',
    root,
  ];
}

// invoke-rc.d asks this before starting or stopping any service: never, here.
const POLICY_RC_D = '#!/bin/sh\nexit 101\n';

/**
 * Runs `debootstrap --variant=minbase` into `root` in two stages: the first
 * (download and unpack) in a mount namespace of its own, the second
 * (maintainer scripts) chrooted in new mount, network and PID namespaces
 * with a `policy-rc.d` that refuses every service start, so no daemon a
 * package ships runs on this machine, none reaches its network, and none
 * outlives the stage. Needs root and the `debootstrap` package.
 */
export async function debootstrap(opts: DebootstrapOptions): Promise<void> {
  const timeout = opts.timeoutMs ?? 20 * 60_000;
  const run = async (args: readonly string[], what: string) => {
    try {
      await exec('unshare', [...args], { timeout, maxBuffer: 64 * 1024 * 1024 });
    } catch (err) {
      const log = await readFile(join(opts.root, 'debootstrap', 'debootstrap.log'), 'utf8').catch(
        () => '',
      );
      const e = err as { stderr?: string; stdout?: string; message: string };
      throw new Error(
        `debootstrap ${what} failed: ${e.message}\n${e.stdout ?? ''}${e.stderr ?? ''}\n${log.slice(-4000)}`,
      );
    }
  };
  await run(
    [
      '--mount',
      '--propagation',
      'private',
      '--',
      'debootstrap',
      '--foreign',
      '--variant=minbase',
      '--components=main',
      `--include=${opts.include.join(',')}`,
      opts.suite,
      opts.root,
      opts.mirror,
    ],
    'first stage',
  );
  const policy = join(opts.root, 'usr/sbin/policy-rc.d');
  await writeFile(policy, POLICY_RC_D, { mode: 0o755 });
  await run(
    [...isolatedChroot(opts.root), '/debootstrap/debootstrap', '--second-stage'],
    'second stage',
  );
  await rm(policy, { force: true });
}

/** Runs a command chrooted in `root`, in new mount, network and PID namespaces. */
export async function inChroot(root: string, args: readonly string[]): Promise<string> {
  const { stdout } = await exec('unshare', [...isolatedChroot(root), ...args], {
    timeout: 120_000,
  });
  return stdout;
}
