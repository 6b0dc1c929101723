/**
 * The proxy program: `proxy-op-forward-proxy --config <file>` (the
 * package's `bin`, which calls {@link runProxyServer}). It reads its
 * options from the JSON file (name, address, port, allowed and health
 * sources, the destination policy and source addresses `egress`, authentication, access log,
 * limits, outgoing address, and `parents`:
 * `{ file, session, … }`, whose file of upstreams is followed while it runs;
 * other fields are ignored, so a state file can serve), serves until SIGTERM or SIGINT, then shuts down gracefully
 * and exits 0.
 * Diagnostics go to stderr. Importing this module starts nothing.
 *
 * The program runs Node.js with {@link NODE_FLAGS} and {@link PROGRAM_ENV}:
 * started without them (as `node bin/proxy-server.js`), it executes itself
 * again with them, in the same process (`process.execve`, so the pid a
 * supervisor recorded stays right), before it reads anything.
 *
 * @module
 */
import { fileURLToPath } from 'node:url';
import { fs } from './fs.js';
import type { ParentOptions, ParentProxy } from './parents.js';
import { readParentsFile, watchParentsFile } from './parents-file.js';
import { type ForwardProxyOptions, startForwardProxy } from './proxy.js';

/**
 * The proxy program's file, to run as `node <path> --config <file>`: the
 * package's `bin`, beside `dist/` and `src/` alike.
 */
export function proxyServerPath(): string {
  return fileURLToPath(new URL('../bin/proxy-server.js', import.meta.url));
}

/** The major version of the Node.js running this. */
const NODE_MAJOR = Number(process.versions.node.split('.')[0]);

/**
 * The Node.js flags the program runs with (the README's Footprint section
 * has the figures):
 * - `--max-semi-space-size=1`: V8 grows its young generation to tens of MiB
 *   under the allocation rate of a busy proxy, and the process's resident
 *   memory with it, while what lives there at any time is well under 1 MiB;
 *   capped at 1 MiB per semi-space, scavenges come more often and stay as
 *   cheap;
 * - `--no-maglev`: hot functions go from the baseline tier straight to the
 *   optimizing compiler; a long-running proxy gains nothing from the middle
 *   tier but its code and compiler memory (about 5 MiB);
 * - `--memory-saver-mode` (Node.js 24 and newer, whose V8 has it): V8 keeps
 *   its old generation closer to what is live (about 3 MiB less at the peak,
 *   within the noise in CPU time per request).
 */
export const NODE_FLAGS: readonly string[] = [
  '--max-semi-space-size=1',
  '--no-maglev',
  ...(NODE_MAJOR >= 24 ? ['--memory-saver-mode'] : []),
];

/**
 * The environment the program runs with, unless it is already set: one
 * glibc malloc arena for every thread (V8's compiler and GC threads would
 * otherwise each keep an arena of their own, about 1.5 MiB between them).
 * Other C libraries ignore it.
 */
export const PROGRAM_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '1' };

/**
 * Executes the program again with {@link NODE_FLAGS} and {@link PROGRAM_ENV}
 * when it runs without them; returns when it already has them, or cannot
 * (no `process.execve`: Windows, or a Node.js before 22.15), and goes on
 * as it is.
 */
function withNodeFlags(argv: readonly string[]): void {
  const missing = NODE_FLAGS.filter((f) => !process.execArgv.includes(f));
  const env = Object.entries(PROGRAM_ENV).filter(([k]) => process.env[k] === undefined);
  const script = process.argv[1];
  if (missing.length + env.length === 0) return;
  if (typeof process.execve !== 'function' || script === undefined) return;
  const args = [process.execPath, ...missing, ...process.execArgv, script, ...argv];
  process.execve(process.execPath, args, { ...process.env, ...Object.fromEntries(env) });
}

function fail(message: string): never {
  process.stderr.write(`proxy-server: ${message}\n`);
  process.exit(2);
}

/** What the program's `parents` block holds: the file of upstreams, and how they are used. */
type ParentsConfig = Omit<ParentOptions, 'upstreams'> & { readonly file: string };

/** The `parents` block of the config file, with the upstreams its file names. */
function readParents(file: string, c: unknown): ParentsConfig | undefined {
  if (c === undefined) return undefined;
  const p = c as Partial<ParentsConfig>;
  if (typeof c !== 'object' || c === null || typeof p.file !== 'string') {
    fail(`${file}: parents needs a file (the JSON list of upstreams)`);
  }
  return p as ParentsConfig;
}

function readConfig(argv: readonly string[]): ForwardProxyOptions & {
  readonly parentsFile?: string | undefined;
} {
  const at = argv.indexOf('--config');
  const file = at >= 0 ? argv[at + 1] : undefined;
  if (file === undefined) fail('usage: proxy-server --config <file>');
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    fail(`cannot read ${file}: ${(err as Error).message}`);
  }
  const c = raw as Partial<ForwardProxyOptions>;
  if (typeof c.address !== 'string' || typeof c.port !== 'number') {
    fail(`${file} has no address and port`);
  }
  const parents = readParents(file, (raw as { parents?: unknown }).parents);
  let upstreams: ParentProxy[] = [];
  if (parents !== undefined) {
    try {
      upstreams = readParentsFile(parents.file);
    } catch (err) {
      fail((err as Error).message);
    }
  }
  return {
    ...(parents === undefined
      ? {}
      : { parents: { ...parents, upstreams }, parentsFile: parents.file }),
    name: typeof c.name === 'string' ? c.name : '',
    address: c.address,
    port: c.port,
    allowedSources: Array.isArray(c.allowedSources) ? c.allowedSources : [],
    healthSources: c.healthSources,
    egress: c.egress,
    auth: typeof c.auth === 'object' && c.auth !== null ? c.auth : undefined,
    admin: typeof c.admin === 'object' && c.admin !== null ? c.admin : undefined,
    accessLog: typeof c.accessLog === 'string' ? c.accessLog : undefined,
    limits: typeof c.limits === 'object' && c.limits !== null ? c.limits : undefined,
    outgoingAddress: typeof c.outgoingAddress === 'string' ? c.outgoingAddress : undefined,
    socks5: typeof c.socks5 === 'boolean' ? c.socks5 : undefined,
  };
}

/**
 * Runs the proxy program in this process: reads `--config <file>` from
 * `argv` (the arguments after the script), listens, and exits 0 after a
 * graceful shutdown on SIGTERM or SIGINT; exits 2 when the file cannot be
 * read, an option is wrong, the password file cannot be read, or the
 * address cannot be listened on.
 */
export async function runProxyServer(argv: readonly string[]): Promise<void> {
  withNodeFlags(argv);
  const options = readConfig(argv);
  process.on('uncaughtException', (err) => {
    // One broken connection must not take the proxy down; say so and carry on.
    process.stderr.write(`proxy-server: unexpected error: ${err.stack ?? String(err)}\n`);
  });
  try {
    const proxy = await startForwardProxy(options);
    if (options.parentsFile !== undefined) {
      watchParentsFile(
        options.parentsFile,
        (list) => {
          try {
            proxy.setParents(list);
          } catch (err) {
            process.stderr.write(
              `proxy-server: ${(err as Error).message}; the upstreams stay as they were\n`,
            );
          }
        },
        (message) => process.stderr.write(`proxy-server: ${message}\n`),
        options.parents?.upstreams,
      );
    }
    process.stderr.write(
      `proxy-server: ${options.name} listening on ${proxy.address.address}:${proxy.address.port}\n`,
    );
    let stopping = false;
    const stop = (sig: string) => {
      if (stopping) return;
      stopping = true;
      process.stderr.write(`proxy-server: ${sig}, shutting down\n`);
      void proxy.close().then(() => process.exit(0));
    };
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
  } catch (err) {
    // A system error is the listen's; anything else is a bad option or an unreadable password file.
    const e = err as NodeJS.ErrnoException;
    if (typeof e.syscall === 'string') {
      fail(`cannot listen on ${options.address}:${options.port}: ${e.message}`);
    }
    fail(e.message);
  }
}
