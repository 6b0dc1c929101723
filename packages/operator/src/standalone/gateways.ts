/**
 * Pools' gateways in standalone mode: one `proxy-op gateway` process per
 * pool with `spec.gateway.enabled`, supervised by the operator. It follows
 * the pool's `NAMESPACE.NAME.upstreams.json`; its clients' credential is
 * generated once and kept beside the Proxies' (`NAMESPACE.NAME.gateway.json`,
 * the record and the client URL, and the password file the process reads,
 * both 0600). A process that exits is started again with a doubling delay
 * (1 s to 30 s); a changed spec restarts it; a pool removed or its gateway
 * disabled stops it and removes its files. The processes stop with the
 * operator; a pid file lets the next run stop one left behind by a crash.
 *
 * @module
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { Logger } from '@proxy-op/contract';
import { ensurePrivateFolder, writeFileAtomic } from '@proxy-op/contract/files';
import type { PoolGatewayStatus } from '../api/pool.js';
import {
  type CredentialRecord,
  credentialUrl,
  generateCredential,
  passwordFile,
} from '../credentials/credential.js';
import type { Settings } from '../defaults.js';
import type { Demand } from '../pool/autoscale.js';
import { readDemand } from '../pool/demand.js';
import { type GatewayPlan, gatewayArgs, type PoolGateways, samePlan } from '../pool/gateway.js';
import type { CredentialOwner } from '../store/credentials.js';
import { FileCredentialStore, readCredentialFile } from './credentials.js';
import { upstreamsFile } from './pools.js';

/** How long reading a gateway's demand may take (it is on loopback). */
const DEMAND_TIMEOUT_MS = 2_000;

const BIN = fileURLToPath(new URL('../../bin/proxy-op.js', import.meta.url));

/** What {@link GatewayProcesses} is built with. */
export interface GatewayProcessesOptions {
  /** Where the pools' upstreams files are (the state file's `endpoints.d`). */
  readonly endpointsDir: string;
  /** Where the gateways' credentials, password files and pid files go (the credentials folder). */
  readonly dir: string;
  readonly logger: Logger;
  /** The restart delays: the first, doubled per exit in a row, and the longest. */
  readonly settings: Pick<Settings, 'gatewayRestartBaseMs' | 'gatewayRestartMaxMs'>;
}

interface Running {
  readonly key: string;
  readonly plan: GatewayPlan;
  child?: ChildProcess | undefined;
  exited?: Promise<void> | undefined;
  listening: boolean;
  /** How many upstreams it last said it has. */
  upstreams: number;
  message?: string | undefined;
  exits: number;
  timer?: NodeJS.Timeout | undefined;
  halted: boolean;
  /** The `Basic …` value of its credential, for reading its metrics (never logged). */
  authorization?: string | undefined;
}

/** The URL clients use, without a credential. */
export function gatewayUrl(plan: GatewayPlan): string {
  const host = plan.address.includes(':') ? `[${plan.address}]` : plan.address;
  return `http://${host}:${plan.port}`;
}

/** The pools' gateway processes. */
export class GatewayProcesses implements PoolGateways {
  readonly #o: GatewayProcessesOptions;
  readonly #credentials: FileCredentialStore;
  readonly #running = new Map<string, Running>();
  readonly #listeners = new Set<(key: string) => void>();
  #stopped = false;

  constructor(o: GatewayProcessesOptions) {
    this.#o = o;
    this.#credentials = new FileCredentialStore(o.dir);
  }

  /** {@inheritDoc PoolGateways.watch} */
  watch(listener: (key: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** {@inheritDoc PoolGateways.sync} */
  async sync(key: string, plan: GatewayPlan | undefined): Promise<PoolGatewayStatus | undefined> {
    // No `verified` here: the process itself says how many upstreams it has.
    let r = this.#running.get(key);
    if (r !== undefined && !samePlan(r.plan, plan)) {
      this.#running.delete(key);
      await this.#halt(r);
      r = undefined;
    }
    if (plan === undefined) {
      await this.#forget(key);
      return undefined;
    }
    if (r === undefined) {
      if (this.#stopped) return { url: gatewayUrl(plan), ready: false, message: 'stopping' };
      await this.#stopLeftBehind(key);
      r = { key, plan, listening: false, upstreams: 0, exits: 0, halted: false };
      this.#running.set(key, r);
      try {
        await this.#prepare(r);
        this.#start(r);
      } catch (err) {
        r.message = `the gateway could not be prepared: ${(err as Error).message}`;
        this.#retry(r);
      }
    }
    // Ready: a client gets through it (it listens, and has a verified Proxy to send it to).
    const ready = r.listening && r.upstreams > 0;
    const message = r.listening
      ? 'no verified Proxy to send clients to yet'
      : (r.message ?? 'starting');
    return {
      url: gatewayUrl(plan),
      ready,
      ...(plan.auth === 'basic' ? { secretName: this.#credentials.locate(this.#owner(plan)) } : {}),
      ...(ready || message === undefined ? {} : { message }),
    };
  }

  /** {@inheritDoc PoolGateways.demand} */
  async demand(key: string): Promise<Demand | undefined> {
    const r = this.#running.get(key);
    if (r === undefined || !r.listening) return undefined;
    return readDemand(gatewayUrl(r.plan), r.authorization, DEMAND_TIMEOUT_MS);
  }

  /** {@inheritDoc PoolGateways.gone} */
  async gone(key: string): Promise<void> {
    await this.sync(key, undefined);
  }

  /** {@inheritDoc PoolGateways.stop} */
  async stop(): Promise<void> {
    this.#stopped = true;
    const all = [...this.#running.values()];
    this.#running.clear();
    await Promise.all(all.map((r) => this.#halt(r)));
  }

  #owner(plan: GatewayPlan): CredentialOwner {
    return { namespace: plan.namespace, name: `${plan.pool}.gateway`, uid: plan.uid };
  }

  #file(key: string, ext: string): string {
    return join(this.#o.dir, `${key.replace('/', '.')}.gateway.${ext}`);
  }

  /** The credential (kept across restarts and spec changes) and its password file. */
  async #prepare(r: Running): Promise<void> {
    const { plan } = r;
    await ensurePrivateFolder(this.#o.dir);
    await this.#prepareAdmin(r);
    if (plan.auth === 'none') {
      await this.#credentials.remove(this.#owner(plan));
      await rm(this.#file(r.key, 'htpasswd'), { force: true });
      return;
    }
    const owner = this.#owner(plan);
    const kept = await readCredentialFile(this.#credentials.locate(owner));
    const record: CredentialRecord = kept?.record ?? {
      source: 'generated',
      current: generateCredential(`${plan.pool}-gateway`),
      rotatedTime: new Date().toISOString(),
    };
    const url = credentialUrl(record.current, gatewayUrl(plan));
    if (kept?.url !== url) await this.#credentials.write(owner, record, url);
    const { username, password } = record.current;
    r.authorization = `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
    await writeFileAtomic(this.#file(r.key, 'htpasswd'), passwordFile(record));
  }

  /**
   * With ban rules: the admin credential of the gateway's ban endpoint
   * (`POOL.gateway-admin`, kept across restarts; what `proxy-op ban` reads)
   * and its password file; without, neither.
   */
  async #prepareAdmin(r: Running): Promise<void> {
    const { plan } = r;
    const owner = { ...this.#owner(plan), name: `${plan.pool}.gateway-admin` };
    if (plan.bans === undefined) {
      await this.#credentials.remove(owner);
      await rm(this.#file(r.key, 'admin.htpasswd'), { force: true });
      return;
    }
    const kept = await readCredentialFile(this.#credentials.locate(owner));
    const record: CredentialRecord = kept?.record ?? {
      source: 'generated',
      current: generateCredential(`${plan.pool}-admin`),
      rotatedTime: new Date().toISOString(),
    };
    const url = credentialUrl(record.current, gatewayUrl(plan));
    if (kept?.url !== url) await this.#credentials.write(owner, record, url);
    await writeFileAtomic(this.#file(r.key, 'admin.htpasswd'), passwordFile(record));
  }

  #start(r: Running): void {
    const { plan, key } = r;
    const host = plan.address.includes(':') ? `[${plan.address}]` : plan.address;
    const args = [
      BIN,
      ...gatewayArgs(plan, {
        upstreams: upstreamsFile(this.#o.endpointsDir, key),
        listen: `${host}:${plan.port}`,
        passwordFile: this.#file(key, 'htpasswd'),
        adminPasswordFile: this.#file(key, 'admin.htpasswd'),
      }),
    ];
    // The gateway logs pino JSON lines on stderr; a line that is not JSON is a startup error.
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    r.child = child;
    let lastError = '';
    createInterface({ input: child.stderr as NodeJS.ReadableStream }).on('line', (line) => {
      const l = parseLine(line);
      if (l === undefined) {
        // A command's error is its first line (the usage text may follow).
        if (lastError === '' && line.trim() !== '') lastError = line.trim();
      } else if (l.msg === 'gateway listening' || l.msg === 'gateway upstreams changed') {
        const first = l.msg === 'gateway listening';
        if (first) {
          r.listening = true;
          r.exits = 0;
          r.message = undefined;
          this.#o.logger.info({ pool: key, url: gatewayUrl(plan), pid: child.pid }, 'gateway up');
        }
        const before = r.upstreams;
        r.upstreams = typeof l.upstreams === 'number' ? l.upstreams : 0;
        if (first || (before === 0) !== (r.upstreams === 0)) this.#emit(key);
      } else if (typeof l.level === 'number' && l.level >= 40) {
        this.#o.logger.warn({ pool: key, err: l.err }, `gateway: ${String(l.msg)}`);
        if (l.level >= 50) lastError = String(l.err ?? l.msg);
      }
    });
    r.exited = new Promise((resolve) => {
      child.once('close', (code, signal) => {
        r.child = undefined;
        r.listening = false;
        r.upstreams = 0;
        void rm(this.#file(key, 'pid'), { force: true });
        if (!r.halted) {
          const why = lastError === '' ? '' : `: ${scrub(lastError).slice(0, 300)}`;
          r.message = `the gateway exited (${signal ?? `code ${code}`})${why}`;
          this.#o.logger.warn({ pool: key, code, signal }, r.message);
          this.#retry(r);
          this.#emit(key);
        }
        resolve();
      });
      child.once('error', (err) => {
        r.message = `the gateway could not be started: ${err.message}`;
      });
    });
    if (child.pid !== undefined) {
      writeFileAtomic(this.#file(key, 'pid'), `${child.pid}\n`).catch(() => {});
    }
  }

  #retry(r: Running): void {
    if (r.halted || this.#stopped) return;
    r.exits += 1;
    const { gatewayRestartBaseMs: base, gatewayRestartMaxMs: max } = this.#o.settings;
    const ms = Math.min(base * 2 ** (r.exits - 1), max);
    r.timer = setTimeout(() => {
      r.timer = undefined;
      if (r.halted || this.#stopped) return;
      this.#prepare(r).then(
        () => this.#start(r),
        (err: Error) => {
          r.message = `the gateway could not be prepared: ${err.message}`;
          this.#retry(r);
        },
      );
    }, ms);
    r.timer.unref();
  }

  /** Stops a gateway: SIGTERM (it drains), SIGKILL after 10 s. */
  async #halt(r: Running): Promise<void> {
    r.halted = true;
    clearTimeout(r.timer);
    const child = r.child;
    if (child === undefined) return;
    child.kill('SIGTERM');
    const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await r.exited;
    clearTimeout(kill);
  }

  /** What a gateway no longer wanted kept: its credential and files. */
  async #forget(key: string): Promise<void> {
    const [namespace, pool] = key.split('/') as [string, string];
    await this.#credentials.remove({ namespace, name: `${pool}.gateway`, uid: '' });
    await this.#credentials.remove({ namespace, name: `${pool}.gateway-admin`, uid: '' });
    for (const ext of ['htpasswd', 'admin.htpasswd', 'pid']) {
      await rm(this.#file(key, ext), { force: true });
    }
  }

  /** A gateway of this pool still running from an operator that crashed: stopped first. */
  async #stopLeftBehind(key: string): Promise<void> {
    const text = await readFile(this.#file(key, 'pid'), 'utf8').catch(() => '');
    const pid = Number(text.trim());
    if (!Number.isInteger(pid) || pid <= 0 || !isGateway(pid)) return;
    signal(pid, 'SIGTERM');
    for (let i = 0; i < 100 && isGateway(pid); i++) await new Promise((r) => setTimeout(r, 50));
    if (isGateway(pid)) signal(pid, 'SIGKILL');
  }

  #emit(key: string): void {
    for (const l of this.#listeners) l(key);
  }
}

/** Whether `pid` is a live `proxy-op gateway` process. */
function isGateway(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes('gateway');
  } catch {
    return false;
  }
}

/** Sends a signal to a process that may have exited already. */
function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {}
}

function parseLine(line: string): Record<string, unknown> | undefined {
  try {
    const v = JSON.parse(line) as unknown;
    return typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** A line with any `//user:password@` taken out. */
function scrub(s: string): string {
  return s.replace(/\/\/[^\s/@]*:[^\s/@]*@/g, '//');
}
