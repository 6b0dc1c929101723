// Peer: the `proxy-op` command (bin/proxy-op.js, running the built dist/cli.js), killed with SIGKILL at each backend step, over a
// file-backed reference provider whose instances outlive the process.
import { readFile, rm } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { type CliWorkspace, cliWorkspace, runCli, spawnCli } from './cli-support.js';

interface Vm {
  name: string;
  metadata: Record<string, string>;
}
interface State {
  proxies: Record<
    string,
    { uid: string; status: { phase?: string; specHash?: string; providerID?: string } }
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
  // Twenty Proxies over a slow backend; the process is killed three times at different
  // moments while creating, then three times while deleting them all.
  it('ends with exactly one instance per Proxy, then none', async () => {
    await using h = await setup();
    const { ws, vms, state } = h;
    for (let i = 0; i < 20; i++) await ws.writeProxy(`p${i}`, 3128);
    const slow = { PROXY_OP_TEST_SLOW_MS: '15' };
    const counts: number[] = [];
    for (const ms of [300, 450, 600]) {
      const child = spawnCli(ws.runArgs(['--once']), slow);
      await new Promise((r) => setTimeout(r, ms));
      child.kill('SIGKILL');
      const { signal } = await child.exit;
      if (counts.length === 0) expect(signal).toBe('SIGKILL');
      counts.push((await vms()).length);
    }
    // The kills landed mid-way: some instances were made, not all of them.
    expect(counts[0]).toBeLessThan(20);
    await recover(ws);
    const st = await state();
    const uids = Object.values(st.proxies)
      .map((p) => p.uid)
      .sort();
    expect(uids).toHaveLength(20);
    const live = await vms();
    expect(live.map((v) => v.metadata['proxy-operator-uid']).sort()).toEqual(uids);
    for (let i = 0; i < 20; i++) await rm(`${ws.dir}/p${i}.yaml`);
    for (const ms of [300, 450]) {
      const child = spawnCli(ws.runArgs(['--once']), slow);
      await new Promise((r) => setTimeout(r, ms));
      child.kill('SIGKILL');
      await child.exit;
    }
    await recover(ws);
    expect(await vms()).toEqual([]);
    expect((await state()).proxies).toEqual({});
  });
});
