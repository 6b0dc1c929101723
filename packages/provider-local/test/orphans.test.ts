// Peer: real proxy processes and state files (the production seam), with one seam call wrapped
// to cancel the caller at the worst moment: right after the process is spawned.
import { readFile } from 'node:fs/promises';
import { createProvider, isNotFound, isTransient } from '@proxy-op/contract';
import { afterAll, describe, expect, it } from 'vitest';
import { providerModule } from '../src/index.js';
import { createProcessSeam } from '../src/process.js';
import { exists, killAllSpawned, removeStateDir, spawnedPids, testConfig } from './fixture.js';
import { eventually } from './support.js';

const dirs: string[] = [];

afterAll(async () => {
  await killAllSpawned();
  for (const d of dirs) await removeStateDir(d);
});

describe('issue: a Create cancelled right after the spawn must not orphan the process', () => {
  it('records the pid anyway, so a Delete stops the process', async () => {
    const config = await testConfig({ addressRange: '127.0.7.0/24' });
    dirs.push(config.stateDir);
    const real = createProcessSeam(config);
    const ac = new AbortController();
    const seam = {
      ...real,
      spawn: async (record: Parameters<typeof real.spawn>[0], signal?: AbortSignal) => {
        const pid = await real.spawn(record, signal);
        spawnedPids.add(pid);
        ac.abort();
        return pid;
      },
    };
    const provider = await createProvider(providerModule, 'local-c', config, { seam });
    const req = {
      name: 'proxy-cancelled',
      namespace: 'default',
      uid: 'uid-cancelled',
      port: 3128,
      cloudInit: new Uint8Array(),
      placement: {},
    };
    const err = await provider.create(req, { signal: ac.signal }).catch((e: unknown) => e);
    expect(isTransient(err)).toBe(true);
    const file = `${config.stateDir}/proxy-cancelled.json`;
    const pidOf = async () => (JSON.parse(await readFile(file, 'utf8')) as { pid?: number }).pid;
    let pid: number | undefined;
    expect(
      await eventually(() => {
        void pidOf().then((p) => {
          pid = p;
        });
        return pid !== undefined;
      }),
    ).toBe(true);
    expect(exists(pid as number)).toBe(true);
    await provider.delete('processes/proxy-cancelled');
    expect(exists(pid as number)).toBe(false);
    expect(await provider.get('processes/proxy-cancelled').catch(isNotFound)).toBe(true);
  }, 30_000);
});

describe('issue: two writes of one state file at once must both land', () => {
  it('gives every write its own temporary file', async () => {
    const config = await testConfig({ addressRange: '127.0.8.0/24' });
    dirs.push(config.stateDir);
    const seam = createProcessSeam(config);
    const record = {
      version: 1 as const,
      name: 'proxy-twice',
      marks: {},
      address: '127.0.8.10',
      port: 3128,
      allowedSources: ['127.0.0.0/8'],
      accessLog: `${config.stateDir}/proxy-twice.access.log`,
      phase: 'starting' as const,
    };
    const writes = Array.from({ length: 20 }, (_, i) =>
      seam.writeState({ ...record, port: 3000 + i }),
    );
    const outcomes = await Promise.allSettled(writes);
    expect(outcomes.filter((o) => o.status === 'rejected')).toEqual([]);
    expect((await seam.readState('proxy-twice'))?.name).toBe('proxy-twice');
  });
});

describe('issue: a retry while a cancelled spawn is still under way must not start a second process', () => {
  it('waits for that spawn and adopts its process', async () => {
    const config = await testConfig({ addressRange: '127.0.9.0/24' });
    dirs.push(config.stateDir);
    const real = createProcessSeam(config);
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    const pids: number[] = [];
    let holdNext = true;
    const seam = {
      ...real,
      spawn: async (record: Parameters<typeof real.spawn>[0], signal?: AbortSignal) => {
        if (holdNext) {
          holdNext = false;
          await held; // the spawn has reached the backend; it goes on whatever its caller does
        }
        const pid = await real.spawn(record, signal);
        spawnedPids.add(pid);
        pids.push(pid);
        return pid;
      },
    };
    const provider = await createProvider(providerModule, 'local-d', config, { seam });
    const req = {
      name: 'proxy-respawn',
      namespace: 'default',
      uid: 'uid-respawn',
      port: 3128,
      cloudInit: new Uint8Array(),
      placement: {},
    };
    const ac = new AbortController();
    const first = provider.create(req, { signal: ac.signal });
    await eventually(() => !holdNext);
    ac.abort();
    expect(isTransient(await first.catch((e: unknown) => e))).toBe(true);
    const retry = provider.create(req);
    await new Promise((r) => setTimeout(r, 50));
    release();
    const id = await retry;
    expect(pids, 'processes started for the instance').toHaveLength(1);
    expect((await provider.get(id)).state).toBe('Running');
    await provider.delete(id);
    expect(exists(pids[0] as number)).toBe(false);
  }, 30_000);
});
