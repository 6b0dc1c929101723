/**
 * A real Squid (Debian's `squid`) run on loopback with a configuration a
 * test gives it, in a temp folder of its own, until the test stops it. As
 * in a Pod it never runs as root: a root test run starts it as `nobody`.
 *
 * @module
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, fchownSync, openSync, readFileSync } from 'node:fs';
import { chmod, chown, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { which } from './peer.js';

/** The uid and gid of `nobody`, which a root test run starts Squid as. */
export const NOBODY = 65534;

/** A Squid a test started. */
export interface RunningSquid {
  /** Its folder: the configuration (`squid.conf`) and whatever the test asked it to write. */
  readonly dir: string;
  readonly process: ChildProcess;
  /** What it printed so far (stdout and stderr, kept in `squid.out` in its folder). */
  output(): string;
  /** SIGTERM (SIGKILL after 8 s), then its folder is removed. */
  stop(): Promise<void>;
}

/** Resolves once a TCP connection to `host:port` is accepted; rejects after `ms`. */
async function waitListening(host: string, port: number, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect({ host, port }, () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline)
      throw new Error(`squid did not listen on ${host}:${port} within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Starts `squid -N -f <dir>/squid.conf` with `config` (made by `config(dir)`
 * when it needs the folder's path) and resolves once it listens on
 * `host:port`. Files the test puts in the folder with `files` are written
 * first (readable by the Squid).
 */
export async function startSquid(opts: {
  readonly config: string | ((dir: string) => string);
  readonly host: string;
  readonly port: number;
  readonly files?: Readonly<Record<string, string>> | undefined;
  readonly startMs?: number | undefined;
}): Promise<RunningSquid> {
  const bin = which('squid');
  if (bin === undefined) throw new Error('startSquid: squid is not on PATH');
  const dir = await mkdtemp(join(tmpdir(), 'proxy-op-squid-'));
  const conf = join(dir, 'squid.conf');
  await writeFile(conf, typeof opts.config === 'string' ? opts.config : opts.config(dir));
  for (const [name, text] of Object.entries(opts.files ?? {})) {
    await writeFile(join(dir, name), text);
  }
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    await chown(dir, NOBODY, NOBODY);
    await chmod(dir, 0o700);
    for (const name of Object.keys(opts.files ?? {})) await chown(join(dir, name), NOBODY, NOBODY);
  }
  // Its output goes to a file, not a pipe: a configuration that logs to /dev/stdout, as a
  // container's does, opens it, which a socket (what Node's pipes are) refuses.
  const outFile = join(dir, 'squid.out');
  const out = openSync(outFile, 'a', 0o600);
  if (asRoot) fchownSync(out, NOBODY, NOBODY);
  let child: ChildProcess;
  try {
    child = spawn(bin, ['-N', '-f', conf], {
      cwd: dir,
      stdio: ['ignore', out, out],
      ...(asRoot ? { uid: NOBODY, gid: NOBODY } : {}),
    });
  } finally {
    closeSync(out);
  }
  const output = () => {
    try {
      return readFileSync(outFile, 'utf8');
    } catch {
      return '';
    }
  };
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 8_000);
      await exited;
      clearTimeout(timer);
    }
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await waitListening(opts.host, opts.port, opts.startMs ?? 20_000);
  } catch (err) {
    const said = output();
    await stop();
    throw new Error(`${(err as Error).message}\n${said}`);
  }
  return { dir, process: child, output, stop };
}
