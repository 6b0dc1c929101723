// Peer: the `proxy-op` command (bin/proxy-op.js, running main() of the built dist/cli/main.js), killed with SIGKILL at each backend step, over a
// file-backed reference provider whose instances outlive the process.
import { readFile, rm } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { FINALIZER } from '../src/api/proxy.js';
import { type CliWorkspace, cliWorkspace, runCli } from './cli-support.js';

interface Vm {
  name: string;
  metadata: Record<string, string>;
}
interface State {
  proxies: Record<
    string,
    {
      uid: string;
      finalizers: string[];
      deletionTimestamp?: string;
      status: { phase?: string; specHash?: string; providerID?: string };
    }
  >;
}

async function setup() {
  const ws = await cliWorkspace();
  const vms = async () =>
    JSON.parse(await readFile(ws.backendFile, 'utf8').catch(() => '[]')) as Vm[];
  const state = async () => JSON.parse(await readFile(`${ws.dir}.state.json`, 'utf8')) as State;
  return { ws, vms, state, [Symbol.asyncDispose]: () => ws.dispose() };
}

/** Runs with a crash point; the run must die by SIGKILL there. */
async function crashAt(ws: CliWorkspace, point: string) {
  const r = await runCli(ws.runArgs(['--once']), { PROXY_OP_TEST_CRASH: point });
  expect(r.signal, `expected a crash at ${point}; stderr: ${r.stderr}`).toBe('SIGKILL');
}

/** Runs to completion; must settle with every Proxy Ready (or none left). */
async function recover(ws: CliWorkspace) {
  // Generous: a loaded machine makes twenty slow creates or deletes take a while.
  const r = await runCli(ws.runArgs(['--once']), {}, 90_000);
  expect(r.code, r.stderr).toBe(0);
}

describe('crash and restart', { timeout: 180_000 }, () => {
  // Create: lookup, define (the instance with its mark), start. A crash before, between or
  // after them must leave exactly one instance once restarted, carrying the Proxy's UID.
  it.concurrent.each(['define:before:1', 'define:after:1', 'start:after:1'])(
    'creating, killed at %s: no duplicate after restart',
    async (point) => {
      await using h = await setup();
      const { ws, vms, state } = h;
      await ws.writeProxy('web', 3128);
      await crashAt(ws, point);
      const uidBefore = (await state()).proxies['default/web']?.uid;
      expect(uidBefore).toMatch(/^[0-9a-f-]{36}$/);
      await recover(ws);
      const live = await vms();
      expect(live).toHaveLength(1);
      expect(live[0]?.metadata['proxy-operator-uid']).toBe(uidBefore);
      const after = (await state()).proxies['default/web'];
      expect(after?.uid).toBe(uidBefore);
      expect(after?.status.phase).toBe('Ready');
    },
  );

  // Delete: stop, destroy, then the finalizer goes and the state forgets the Proxy.
  it.concurrent.each(['stop:after:1', 'destroy:before:1', 'destroy:after:1'])(
    'deleting, killed at %s: no leak after restart',
    async (point) => {
      await using h = await setup();
      const { ws, vms, state } = h;
      await ws.writeProxy('web', 3128);
      await recover(ws);
      expect(await vms()).toHaveLength(1);
      await rm(`${ws.dir}/web.yaml`);
      await crashAt(ws, point);
      expect(Object.keys((await state()).proxies)).toEqual(['default/web']);
      await recover(ws);
      expect(await vms()).toEqual([]);
      expect((await state()).proxies).toEqual({});
    },
  );

  // The one window the finalizer cannot cover: the instance was made but its ID not yet
  // recorded when the process died, and the manifest was removed before the restart. The
  // Proxy is released (nothing recorded), and GC collects the instance: its UID has no Proxy.
  it('created but not recorded, then the manifest removed while down: GC collects the instance', async () => {
    await using h = await setup();
    const { ws, vms, state } = h;
    await ws.writeProxy('web', 3128);
    await crashAt(ws, 'define:after:1');
    expect(await vms()).toHaveLength(1);
    await rm(`${ws.dir}/web.yaml`);
    const r = await runCli(ws.runArgs(['--once', '--gc-interval', '1h', '--gc-min-age', '0']));
    expect(r.code, r.stderr).toBe(0);
    expect(await vms()).toEqual([]);
    expect((await state()).proxies).toEqual({});
    expect(r.stderr).toContain('GC deleted orphaned instance');
  });

  // Replace: a spec change deletes the old instance and creates the new one.
  it.concurrent.each(['destroy:after:1', 'define:before:1', 'define:after:1'])(
    'replacing, killed at %s: exactly the new instance after restart',
    async (point) => {
      await using h = await setup();
      const { ws, vms, state } = h;
      await ws.writeProxy('web', 3128);
      await recover(ws);
      const first = (await state()).proxies['default/web']?.status.specHash;
      await ws.writeProxy('web', 3129);
      await crashAt(ws, point);
      await recover(ws);
      expect(await vms()).toHaveLength(1);
      const st = (await state()).proxies['default/web']?.status;
      expect(st?.phase).toBe('Ready');
      expect(st?.specHash).not.toBe(first);
    },
  );
});

describe('crash and restart at random moments', { timeout: 300_000 }, () => {
  // Twenty Proxies over a slow backend (every call waits 15 ms first), three at a time. The
  // process is killed three times while creating them, then twice while deleting them all,
  // each time a random 0-40 ms after the n-th instance (n random, 1-3) that run made or
  // destroyed: wherever the reconciler, the store or a state write is then. At most four
  // backend calls per worker fit in those 40 ms, so a run goes at most five instances past
  // its n-th: every kill lands mid-way, and the counts below check it.
  it('ends with exactly one instance per Proxy, then none', async () => {
    await using h = await setup();
    const { ws, vms, state } = h;
    for (let i = 0; i < 20; i++) await ws.writeProxy(`p${i}`, 3128);
    const pick = (lo: number, hi: number) => lo + Math.floor(Math.random() * (hi - lo + 1));
    const points: string[] = [];
    const at = () => `after ${points.join(', ')}`;
    const killMidway = async (call: 'define' | 'destroy') => {
      const point = `${call}:after:${pick(1, 3)}:${pick(0, 40)}`;
      points.push(point);
      const r = await runCli(ws.runArgs(['--once']), {
        PROXY_OP_TEST_SLOW_MS: '15',
        PROXY_OP_TEST_CRASH: point,
      });
      expect(r.signal, `${at()}; stderr: ${r.stderr}`).toBe('SIGKILL');
      const st = await state();
      const live = await vms();
      // What a restart starts from: every Proxy recorded with its UID and the finalizer
      // (never one marked deleted without it), and no instance whose UID the state lacks.
      for (const [key, p] of Object.entries(st.proxies)) {
        expect(p.finalizers, `${key} ${at()}`).toEqual([FINALIZER]);
      }
      const uids = new Set(Object.values(st.proxies).map((p) => p.uid));
      for (const v of live) {
        expect(uids.has(v.metadata['proxy-operator-uid'] ?? ''), `${v.name} ${at()}`).toBe(true);
      }
      return live.length;
    };

    const made: number[] = [];
    for (let k = 0; k < 3; k++) made.push(await killMidway('define'));
    // Each run made some instances and the three together not all of them.
    expect(made[0], at()).toBeGreaterThan(0);
    expect(made[1], at()).toBeGreaterThan(made[0] ?? 0);
    expect(made[2], at()).toBeGreaterThan(made[1] ?? 0);
    expect(made[2], at()).toBeLessThan(20);
    await recover(ws);
    const st = await state();
    const uids = Object.values(st.proxies)
      .map((p) => p.uid)
      .sort();
    expect(uids).toHaveLength(20);
    expect(Object.values(st.proxies).every((p) => p.status.phase === 'Ready')).toBe(true);
    const live = await vms();
    expect(live.map((v) => v.metadata['proxy-operator-uid']).sort()).toEqual(uids);

    for (let i = 0; i < 20; i++) await rm(`${ws.dir}/p${i}.yaml`);
    const left: number[] = [];
    for (let k = 0; k < 2; k++) left.push(await killMidway('destroy'));
    // Each run destroyed some instances and the two together not all of them.
    expect(left[0], at()).toBeLessThan(20);
    expect(left[1], at()).toBeLessThan(left[0] ?? 0);
    expect(left[1], at()).toBeGreaterThan(0);
    await recover(ws);
    expect(await vms()).toEqual([]);
    expect((await state()).proxies).toEqual({});
  });
});
