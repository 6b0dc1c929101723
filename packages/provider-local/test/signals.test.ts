// Peer: real state files and real processes (the production seam), with one seam call replaced
// by one that never answers on its own, and a process that ignores SIGTERM.
import { spawn } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BudgetError, createProvider, isTransient } from '@proxy-op/contract';
import { afterAll, describe, expect, it } from 'vitest';
import { providerModule } from '../src/index.js';
import { createProcessSeam } from '../src/process.js';
import type { InstanceRecord } from '../src/record.js';
import {
  CALL_BUDGET_MS,
  exists,
  killAllSpawned,
  removeStateDir,
  spawnedPids,
  testConfig,
} from './fixture.js';
import { eventually } from './support.js';

const dirs: string[] = [];

afterAll(async () => {
  await killAllSpawned();
  for (const d of dirs) await removeStateDir(d);
});

const record = (dir: string, name: string, host: number): InstanceRecord => ({
  version: 1,
  name,
  marks: {},
  address: `127.0.10.${host}`,
  port: 3128,
  allowedSources: ['127.0.0.0/8'],
  accessLog: join(dir, `${name}.access.log`),
  phase: 'starting',
});

describe('a backend call past its budget', () => {
  it('is aborted underneath and fails Transient with the contract’s BudgetError as the cause', async () => {
    const config = await testConfig({
      addressRange: '127.0.10.0/24',
      timeouts: { startMs: 30_000, stopMs: 3_000, probeMs: 5_000, fileMs: 200 },
    });
    dirs.push(config.stateDir);
    const real = createProcessSeam(config);
    let seen: AbortSignal | undefined;
    const seam = {
      ...real,
      readState: (_name: string, signal?: AbortSignal) =>
        new Promise<never>((_resolve, reject) => {
          seen = signal;
          signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
        }),
    };
    const provider = await createProvider(providerModule, 'local-e', config, { seam });
    const err = await provider.get('processes/proxy-hangs').catch((e: unknown) => e);
    expect(isTransient(err)).toBe(true);
    const cause = (err as Error).cause;
    expect(BudgetError.isInstance(cause), 'the cause is a BudgetError').toBe(true);
    expect((cause as BudgetError).code).toBe('PROVIDER_CALL_BUDGET');
    expect((cause as BudgetError).call).toBe('readState');
    expect((cause as BudgetError).budgetMs).toBe(200);
    expect(seen?.aborted, 'the signal the call was given fired').toBe(true);
  });
});

describe('the production seam honours its signal', () => {
  it('starts nothing once the signal has fired', async () => {
    const config = await testConfig({ addressRange: '127.0.10.0/24' });
    dirs.push(config.stateDir);
    const seam = createProcessSeam(config);
    const signal = AbortSignal.abort(new Error('given up'));
    const rec = record(config.stateDir, 'proxy-never', 2);
    const gone = 999_999_999; // above any pid_max: no process has it
    const calls: [string, () => Promise<unknown>][] = [
      ['readState', () => seam.readState(rec.name, signal)],
      ['writeState', () => seam.writeState(rec, signal)],
      ['removeState', () => seam.removeState(rec.name, signal)],
      ['listStates', () => seam.listStates(signal)],
      ['spawn', () => seam.spawn(rec, signal)],
      ['alive', () => seam.alive(rec.name, gone, signal)],
      ['probe', () => seam.probe(rec.name, '127.0.10.2', 3128, signal)],
      [
        'awaitAnswering',
        () => seam.awaitAnswering(rec.name, gone, '127.0.10.2', 3128, 1_000, signal),
      ],
      ['kill', () => seam.kill(rec.name, gone, signal)],
      ['logTail', () => seam.logTail(rec.name, signal)],
      ['bindable', () => seam.bindable('127.0.10.2', 0, signal)],
      ['checkStateDir', () => seam.checkStateDir(signal)],
    ];
    for (const [method, call] of calls) {
      const outcome = await call().then(
        () => 'resolved',
        () => 'rejected',
      );
      expect(outcome, method).toBe('rejected');
    }
    expect(await readdir(config.stateDir), 'files in the state folder').toEqual([]);
  });

  it('stops waiting for a spawn, which still records its pid', async () => {
    const config = await testConfig({ addressRange: '127.0.10.0/24' });
    dirs.push(config.stateDir);
    const seam = createProcessSeam(config);
    const rec = record(config.stateDir, 'proxy-abandoned', 3);
    await seam.writeState(rec);
    const ac = new AbortController();
    const spawning = seam.spawn(rec, ac.signal);
    ac.abort(new Error('given up'));
    await expect(spawning).rejects.toBe(ac.signal.reason);
    const file = join(config.stateDir, `${rec.name}.json`);
    let pid: number | undefined;
    expect(
      await eventually(() => {
        void readFile(file, 'utf8').then((t) => {
          pid = (JSON.parse(t) as { pid?: number }).pid;
        });
        return pid !== undefined;
      }),
      'the pid is recorded',
    ).toBe(true);
    spawnedPids.add(pid as number);
    expect(exists(pid as number)).toBe(true);
    await seam.kill(rec.name, pid as number);
    expect(exists(pid as number)).toBe(false);
  }, 30_000);

  it('stops waiting for a process to exit when the signal fires', async () => {
    // A stop time far above the caller's 300 ms, so "gave up with the caller" and "waited for
    // stopMs" stay apart however slow the machine is.
    const config = await testConfig({
      addressRange: '127.0.10.0/24',
      timeouts: { startMs: 30_000, stopMs: 30_000, probeMs: 5_000, fileMs: CALL_BUDGET_MS },
    });
    dirs.push(config.stateDir);
    const seam = createProcessSeam(config);
    const name = 'proxy-stubborn';
    // A process that ignores SIGTERM and names the instance's state file on its command line,
    // as the proxy of `name` does.
    const child = spawn(
      process.execPath,
      [
        '-e',
        "process.on('SIGTERM', () => {}); setInterval(() => {}, 1000); console.log('ready');",
        join(config.stateDir, `${name}.json`),
      ],
      { stdio: ['ignore', 'pipe', 'ignore'] },
    );
    try {
      await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
      const pid = child.pid as number;
      expect(await seam.alive(name, pid)).toBe(true);
      const start = Date.now();
      const outcome = await seam.kill(name, pid, AbortSignal.timeout(300)).then(
        () => 'resolved',
        (err: unknown) => (err as Error).name,
      );
      expect(outcome).toBe('TimeoutError');
      expect(Date.now() - start, 'ms waited, with stopMs 30000').toBeLessThan(15_000);
      expect(await seam.alive(name, pid), 'no SIGKILL after the caller gave up').toBe(true);
    } finally {
      child.kill('SIGKILL');
      await new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) resolve(undefined);
        else child.once('exit', resolve);
      });
    }
  });
});
