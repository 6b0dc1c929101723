// Test support (not a test file): the conformance harness over real proxy processes and real
// state files in a temp folder, reached through the production seam with a thin control layer
// (call counting, blocking, held kills, forced answers) around it.
import { readFileSync } from 'node:fs';
import { chmod, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createProvider,
  formatMark,
  formatMarkTime,
  MarkKey,
  type Provider,
} from '@proxy-op/contract';
import { UnsafePathError } from '@proxy-op/contract/files';
import {
  abortable,
  type BackendHarness,
  type ConformanceDeps,
  createGate,
  type HarnessGate,
  plantedMarkPairs,
} from '@proxy-op/providertest';
import {
  basicAuthorization,
  requestThroughProxy,
  SpawnedPrograms,
  startHttpEchoOrigin,
} from '@proxy-op/testkit';
import { CHECK_TARGETS } from '../src/check.js';
import { localId } from '../src/id.js';
import { configSchema, type LocalConfig, LocalError, providerModule } from '../src/index.js';
import { createProcessSeam, proxyProgramPath } from '../src/process.js';
import type { InstanceRecord } from '../src/record.js';
import type { LocalSeam } from '../src/seam.js';

const PROGRAM = proxyProgramPath();
const spawned = new SpawnedPrograms(PROGRAM);

/** Every pid any fixture spawned, so a suite's afterAll can make sure they are gone. */
export const spawnedPids = spawned.pids;

/** Kills every process a fixture spawned (SIGKILL) and waits until they are gone. */
export function killAllSpawned(): Promise<void> {
  return spawned.killAll();
}

/**
 * Whether a proxy process with this pid exists and is not a zombie: on Linux a pid that another
 * program has taken since (its command line does not run the proxy program) counts as gone.
 */
export function exists(pid: number): boolean {
  return spawned.running(pid);
}

type Method = keyof LocalSeam;

interface Controls {
  calls: number;
  malformedNext: boolean;
  noFreeAddress: boolean;
  blocker: { skip: number; gate: HarnessGate } | undefined;
  killHolds: Map<string, HarnessGate>;
  answering: Set<string>;
  failBind: NodeJS.ErrnoException | undefined;
  delays: Map<Method, number>;
  /** Backend calls under way, including those carried on after their caller gave up. */
  inFlight: Set<Promise<unknown>>;
}

/** Holds `work` in `c.inFlight` until it settles, so cleanup can wait for it. */
function tracked<T>(c: Controls, work: Promise<T>): Promise<T> {
  c.inFlight.add(work);
  const done = () => c.inFlight.delete(work);
  work.then(done, done);
  return work;
}

/** Wraps the production seam with the harness's controls. */
function controlledSeam(real: LocalSeam, c: Controls): LocalSeam {
  const wrap = <M extends Method>(
    method: M,
    body: (...args: Parameters<LocalSeam[M]>) => ReturnType<LocalSeam[M]>,
  ) =>
    (async (...args: unknown[]) => {
      c.calls++;
      if (c.malformedNext) {
        c.malformedNext = false;
        return method === 'listStates' ? {} : null;
      }
      const signal = args.findLast((a) => a instanceof AbortSignal) as AbortSignal | undefined;
      const call = () =>
        (body as (...a: unknown[]) => unknown)(...args.map((a) => (a === signal ? undefined : a)));
      const b = c.blocker;
      if (b !== undefined) {
        if (b.skip > 0) b.skip--;
        else {
          // The call has reached the backend: it is carried out once released, even if its
          // caller gave up meanwhile.
          b.gate.reach();
          return abortable(tracked(c, b.gate.released.then(call)), signal);
        }
      }
      const delay = c.delays.get(method);
      if (delay !== undefined) await abortable(new Promise((r) => setTimeout(r, delay)), signal);
      signal?.throwIfAborted();
      return tracked(c, Promise.resolve((body as (...a: unknown[]) => unknown)(...args)));
    }) as unknown as LocalSeam[M];
  return {
    readState: wrap('readState', (name, signal) => real.readState(name, signal)),
    writeState: wrap('writeState', (record, signal) => real.writeState(record, signal)),
    writePasswordFile: wrap('writePasswordFile', (name, contents, signal) =>
      real.writePasswordFile(name, contents, signal),
    ),
    ownsPasswordFile: wrap('ownsPasswordFile', (name, signal) =>
      real.ownsPasswordFile(name, signal),
    ),
    removeState: wrap('removeState', (name, signal) => real.removeState(name, signal)),
    listStates: wrap('listStates', (signal) => real.listStates(signal)),
    spawn: wrap('spawn', async (record, signal) => {
      const pid = await real.spawn(record, signal);
      spawnedPids.add(pid);
      return pid;
    }),
    alive: wrap('alive', (name, pid, signal) => real.alive(name, pid, signal)),
    probe: wrap('probe', async (name, address, port, signal) =>
      c.answering.has(address) ? true : real.probe(name, address, port, signal),
    ),
    awaitAnswering: wrap('awaitAnswering', async (name, pid, address, port, ms, signal) =>
      c.answering.has(address)
        ? 'answering'
        : real.awaitAnswering(name, pid, address, port, ms, signal),
    ),
    kill: wrap('kill', async (name, pid, signal) => {
      const hold = c.killHolds.get(name);
      if (hold !== undefined) {
        c.killHolds.delete(name);
        await hold.hold(signal);
      }
      return real.kill(name, pid, signal);
    }),
    logTail: wrap('logTail', (name, signal) => real.logTail(name, signal)),
    bindable: wrap('bindable', async (address, port, signal) => {
      if (c.failBind !== undefined) throw c.failBind;
      if (c.noFreeAddress) return false;
      return real.bindable(address, port, signal);
    }),
    checkStateDir: wrap('checkStateDir', (signal) => real.checkStateDir(signal)),
  };
}

/** The per-call budget of state-folder calls in the tests (the harness's `callBudgetMs`). */
export const CALL_BUDGET_MS = 3_000;

/** The address range the tests use (away from the default). */
export const TEST_RANGE = '127.0.3.0/24';

/** A validated config over a fresh temp state folder. */
export async function testConfig(patch: Record<string, unknown> = {}): Promise<LocalConfig> {
  const stateDir = await mkdtemp(join(tmpdir(), 'provider-local-'));
  const result = await configSchema['~standard'].validate({
    stateDir,
    addressRange: TEST_RANGE,
    // Generous start and probe times: on a loaded machine a new Node.js process takes seconds to
    // answer, and a probe that times out would read a running proxy as Provisioning.
    timeouts: { startMs: 30_000, stopMs: 3_000, probeMs: 5_000, fileMs: CALL_BUDGET_MS },
    ...patch,
  });
  if (result.issues !== undefined) throw new Error(JSON.stringify(result.issues));
  return result.value;
}

function ownedBy(pid: number, stateFile: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes(stateFile);
  } catch {
    return false;
  }
}

/** Kills the processes recorded in a state folder, waits for them, and removes the folder. */
export async function removeStateDir(dir: string): Promise<void> {
  let files: string[] = [];
  try {
    files = await readdir(dir);
  } catch {
    files = [];
  }
  for (const f of files.filter((n) => n.endsWith('.json'))) {
    try {
      const rec = JSON.parse(await readFile(join(dir, f), 'utf8')) as { pid?: number };
      // Only a process whose command line names this folder's state file is ours to kill.
      if (typeof rec.pid === 'number' && ownedBy(rec.pid, join(dir, f))) {
        process.kill(rec.pid, 'SIGKILL');
        spawnedPids.add(rec.pid);
      }
    } catch {
      // gone or unreadable
    }
  }
  const deadline = Date.now() + 5_000;
  while (Date.now() < deadline && [...spawnedPids].some(exists)) {
    await new Promise((r) => setTimeout(r, 20));
  }
  await rm(dir, { recursive: true, force: true });
}

/** How long after the password file is written the proxy answers by it: its re-read (1 s), with room for a loaded machine. */
export const AUTH_SETTLE_MS = 10_000;

/** One conformance fixture: a provider over real processes in a fresh state folder. */
export async function createLocalFixture(deps: ConformanceDeps): Promise<{
  provider: Provider;
  harness: BackendHarness;
  config: LocalConfig;
  cleanup(): Promise<void>;
}> {
  const config = await testConfig();
  const dir = config.stateDir;
  const c: Controls = {
    calls: 0,
    malformedNext: false,
    noFreeAddress: false,
    blocker: undefined,
    killHolds: new Map(),
    answering: new Set(),
    failBind: undefined,
    delays: new Map(),
    inFlight: new Set(),
  };
  const seam = controlledSeam(createProcessSeam(config), c);
  const provider = await createProvider(providerModule, 'local-a', config, { ...deps, seam });
  const file = (id: string) => join(dir, `${localId.mustParse(id, 'harness', 'get').name}.json`);
  const files = async () => {
    try {
      return await readdir(dir);
    } catch {
      return [];
    }
  };
  const readRecord = async (id: string) =>
    JSON.parse(await readFile(file(id), 'utf8')) as Record<string, unknown>;
  const writeRecord = (id: string, r: Record<string, unknown>) =>
    writeFile(file(id), JSON.stringify(r));
  // The origin the credential checks fetch through the proxy, started on the first check.
  let origin: Promise<Awaited<ReturnType<typeof startHttpEchoOrigin>>> | undefined;
  let plantedHost = 254;
  const plant = async (name: string, marks: Record<string, string>, phase: string) => {
    const rec: InstanceRecord = {
      version: 1,
      name,
      marks,
      address: `127.0.3.${plantedHost--}`,
      port: 3128,
      allowedSources: ['127.0.0.0/8'],
      accessLog: join(dir, `${name}.access.log`),
      phase,
    };
    await writeFile(join(dir, `${name}.json`), JSON.stringify(rec));
    return localId.format({ name });
  };
  const harness: BackendHarness = {
    baseRequest: { namespace: 'default', port: 3128, placement: {} },
    invalidPlacements: [
      { placement: { machineType: 'e2-small' }, field: 'placement.machineType' },
      { placement: { image: 'debian-13' }, field: 'placement.image' },
      { placement: { zone: 'us-east1-b' }, field: 'placement.zone' },
      { placement: { region: 'europe-west1' }, field: 'placement.region' },
    ],
    backendCalls: () => c.calls,
    instanceCount: async () => (await files()).filter((f) => /^[a-z0-9-]+\.json$/.test(f)).length,
    secondaryCount: async () =>
      (await files()).filter((f) => /^[a-z0-9-]+\.(access\.)?log$/.test(f)).length,
    setRunning: async (id, ip) => {
      const r = await readRecord(id);
      if (ip === undefined) delete r.address;
      else {
        r.address = ip;
        c.answering.add(ip);
      }
      await writeRecord(id, r);
    },
    setState: async (id, state) => {
      const r = await readRecord(id);
      if (state === 'stopped' && typeof r.pid === 'number') {
        process.kill(r.pid, 'SIGKILL');
        const pid = r.pid;
        while (exists(pid)) await new Promise((res) => setTimeout(res, 10));
      }
      r.phase = state === 'unknown' ? 'suspended' : 'running';
      await writeRecord(id, r);
    },
    rewriteMark: async (id, mark) => {
      const r = await readRecord(id);
      r.marks = {
        ...(r.marks as Record<string, string>),
        [MarkKey.Uid]: mark.uid,
        [MarkKey.CreatedAt]: formatMarkTime(mark.createdAt),
      };
      await writeRecord(id, r);
    },
    holdNextDelete: (id) => {
      const g = createGate();
      c.killHolds.set(localId.mustParse(id, 'harness', 'delete').name, g);
      return { reached: g.reached, release: () => g.release() };
    },
    plantNeverStarted: (req) =>
      plant(
        req.name,
        formatMark({
          uid: req.uid,
          createdAt: new Date(),
          installation: req.installation ?? 'default',
        }),
        'starting',
      ),
    plantUnmarked: (name) => plant(name, {}, 'running'),
    plantMarked: (name, mark) => plant(name, plantedMarkPairs(mark), 'starting'),
    replaceInstance: async (id, mark) => {
      const r = await readRecord(id);
      if (typeof r.pid === 'number') {
        const pid = r.pid;
        process.kill(pid, 'SIGKILL');
        while (exists(pid)) await new Promise((res) => setTimeout(res, 10));
      }
      await plant(r.name as string, mark === undefined ? {} : plantedMarkPairs(mark), 'running');
    },
    injectMalformed: () => {
      c.malformedNext = true;
    },
    exhaustCapacity: () => {
      c.noFreeAddress = true;
    },
    callBudgetMs: CALL_BUDGET_MS,
    blockCalls: (skip) => {
      const g = createGate();
      c.blocker = { skip, gate: g };
      return {
        reached: g.reached,
        release: () => {
          if (c.blocker?.gate === g) c.blocker = undefined;
          g.release();
        },
      };
    },
    classifyCases: [
      { name: 'state file gone', op: 'get', error: errno('ENOENT', 'open'), want: 'NotFound' },
      {
        name: 'state file vanished during create',
        op: 'create',
        error: errno('ENOENT', 'rename'),
        want: 'NotFound',
      },
      {
        name: 'state folder not writable',
        op: 'create',
        error: errno('EACCES', 'open'),
        want: 'Permanent',
      },
      {
        name: 'state folder another user owns',
        op: 'create',
        error: new UnsafePathError('FOLDER_OWNED_BY_OTHER', '/srv/state', 'not ours'),
        want: 'Permanent',
      },
      {
        name: 'a link planted as a log',
        op: 'create',
        error: new UnsafePathError('FILE_IS_SYMLINK', '/srv/state/p.log', 'a link'),
        want: 'Permanent',
      },
      {
        name: 'read-only file system',
        op: 'delete',
        error: errno('EROFS', 'unlink'),
        want: 'Permanent',
      },
      {
        name: 'address cannot be bound',
        op: 'create',
        error: errno('EADDRNOTAVAIL', 'listen'),
        want: 'Permanent',
      },
      {
        name: 'node binary missing',
        op: 'create',
        error: errno('ENOENT', 'spawn /opt/node/bin/node'),
        want: 'Permanent',
      },
      {
        name: 'process of another user',
        op: 'delete',
        error: errno('EPERM', 'kill'),
        want: 'Permanent',
      },
      { name: 'disk full', op: 'create', error: errno('ENOSPC', 'write'), want: 'QuotaExceeded' },
      {
        name: 'no free address',
        op: 'create',
        error: new LocalError('ADDRESS_RANGE_EXHAUSTED', 'no address of 127.0.3.0/24 is free'),
        want: 'QuotaExceeded',
      },
      {
        name: 'proxy exited while starting',
        op: 'create',
        error: new LocalError('START_FAILED', 'exited'),
        want: 'Transient',
      },
      {
        name: 'proxy did not answer in time',
        op: 'create',
        error: new LocalError('START_TIMEOUT', 'no answer'),
        want: 'Transient',
      },
      {
        name: 'too many open files',
        op: 'list',
        error: errno('EMFILE', 'scandir'),
        want: 'Transient',
      },
      {
        name: 'process would not die',
        op: 'delete',
        error: new LocalError('STOP_TIMEOUT', 'still there'),
        want: 'Transient',
      },
    ],
    classify: (op, err) => providerModule.classify(op, err),
    checkTargets: CHECK_TARGETS,
    delayTarget: (target, ms) =>
      c.delays.set(target === 'state-dir' ? 'checkStateDir' : 'bindable', ms),
    checkScenarios: [
      {
        name: 'the folder is writable and the range bindable',
        arrange: () => {},
        want: 'Reachable',
      },
      {
        name: 'the state folder is a file',
        arrange: async () => {
          await rm(dir, { recursive: true, force: true });
          await writeFile(dir, 'not a folder\n');
        },
        want: 'StateDirNotWritable',
        target: 'state-dir',
      },
      {
        name: 'the state folder can be written by others',
        arrange: () => chmod(dir, 0o777),
        want: 'StateDirUnsafe',
        target: 'state-dir',
      },
      {
        name: 'the address range cannot be bound',
        arrange: () => {
          c.failBind = errno('EADDRNOTAVAIL', 'listen');
        },
        want: 'AddressNotBindable',
        target: 'address-range',
      },
      {
        name: 'the folder is still fine when the range is not',
        arrange: () => {
          c.failBind = errno('EADDRNOTAVAIL', 'listen');
        },
        want: 'Reachable',
        target: 'state-dir',
      },
    ],
    // The origin the credential checks ask through the proxy: on this host, so the kit allows
    // it in the Creates' egress.
    credentialOrigin: async () => {
      origin ??= startHttpEchoOrigin();
      return `127.0.0.1:${(await origin).port}`;
    },
    // A real request through the instance's proxy, from 127.0.0.1 (inside its sources), with the
    // credential as the Proxy-Authorization header: 200 is in, 407 is out.
    acceptsCredential: async (id, c) => {
      const r = await readRecord(id);
      if (typeof r.address !== 'string' || typeof r.port !== 'number') {
        throw new Error(`harness: the state file of ${id} names no address and port`);
      }
      origin ??= startHttpEchoOrigin();
      const { port } = await origin;
      const answer = await requestThroughProxy(
        { address: r.address, port: r.port },
        `http://127.0.0.1:${port}/credential-check`,
        { proxyAuthorization: basicAuthorization({ user: c.username, password: c.password }) },
      );
      if (answer.status === 200) return true;
      if (answer.status === 407) return false;
      throw new Error(`harness: the proxy of ${id} answered ${answer.status}, not 200 or 407`);
    },
    authSettleMs: AUTH_SETTLE_MS,
  };
  return {
    provider,
    harness,
    config,
    cleanup: async () => {
      if (origin !== undefined) {
        const { server } = await origin;
        server.close();
        server.closeAllConnections();
      }
      // A call released after its caller gave up is still writing into the folder (a check's
      // probe file): removing the folder under it fails with ENOTEMPTY.
      // Bounded: a call held by a test that never released it must not hang the suite.
      await Promise.race([
        Promise.allSettled([...c.inFlight]),
        new Promise((r) => setTimeout(r, 10_000).unref()),
      ]);
      await removeStateDir(dir);
    },
  };
}

/** An operating-system error as Node reports it. */
export function errno(code: string, syscall: string): NodeJS.ErrnoException {
  const err = new Error(`${code}: ${syscall} failed`) as NodeJS.ErrnoException;
  err.code = code;
  err.syscall = syscall;
  return err;
}
