// Peer: the `proxy-op` command (bin/proxy-op.js) running a ProxyPool in standalone mode, killed
// with SIGKILL at random moments of a rollout, over the file-backed reference provider whose
// instances outlive the process (the method of crash.test.ts, with a pool making the Proxies).
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FINALIZER } from '../src/api/proxy.js';
import { cliWorkspace, spawnCli } from './cli-support.js';

interface Vm {
  name: string;
  metadata: Record<string, string>;
}
interface Entry {
  uid: string;
  finalizers?: string[];
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  ownerReferences?: Array<{ name: string; uid: string }>;
  spec: { port?: number };
  status: { phase?: string };
}
interface State {
  proxies: Record<string, Entry>;
  pools: Record<string, { uid: string; status: { templateHash?: string } }>;
}

const REPLICAS = 4;
const poolYaml = (port: number) =>
  `apiVersion: proxy-op.io/v1alpha1
kind: ProxyPool
metadata:
  name: web
spec:
  replicas: ${REPLICAS}
  template:
    spec:
      provider: lab
      port: ${port}
      placement: { machineType: small, image: debian-13 }
      allowedSources: [10.0.0.0/8]
  strategy: { maxSurge: 2, maxUnavailable: 1 }
`;

describe('a ProxyPool rolled while the operator is killed at random moments', {
  timeout: 300_000,
}, () => {
  it('ends with exactly replicas Proxies of the new template, one instance each, none leaked', async () => {
    const ws = await cliWorkspace();
    await using _ = { [Symbol.asyncDispose]: () => ws.dispose() };
    const vms = async () =>
      JSON.parse(await readFile(ws.backendFile, 'utf8').catch(() => '[]')) as Vm[];
    const state = async () => JSON.parse(await readFile(`${ws.dir}.state.json`, 'utf8')) as State;
    const members = (st: State) =>
      Object.entries(st.proxies).filter(([, e]) => e.ownerReferences?.[0]?.name === 'web');
    // Every backend call takes 100 ms, so the rollout is bound by them: about 18 calls in
    // sequence, 1.8 s on any machine (0.7 s at 40 ms a call, when three kills of up to 400 ms
    // each could let it finish; measured). Kills come 50-400 ms after start, so the first
    // three (1.2 s at most, less the work each cuts off) cannot outlast it.
    const run = () => spawnCli(ws.runArgs(['--output', 'json']), { PROXY_OP_TEST_SLOW_MS: '100' });

    let port = 3128;
    const settled = (st: State) => {
      const hash = st.pools['default/web']?.status.templateHash;
      const ms = members(st);
      return (
        hash !== undefined &&
        ms.length === REPLICAS &&
        ms.every(
          ([, e]) =>
            e.deletionTimestamp === undefined &&
            e.spec.port === port &&
            e.status.phase === 'Ready' &&
            e.labels?.['proxy-op.io/template-hash'] === hash,
        )
      );
    };
    /** Runs until the pool has settled on its template (exactly replicas, all Ready), then stops. */
    const settle = async (what: string) => {
      const op = run();
      try {
        const end = Date.now() + 120_000;
        for (;;) {
          const st = await state().catch(() => undefined);
          if (st !== undefined && settled(st) && (await vms()).length === REPLICAS) break;
          if (Date.now() > end) throw new Error(`the pool did not settle: ${what}`);
          await new Promise((r) => setTimeout(r, 100));
        }
      } finally {
        op.kill('SIGTERM');
        await op.exit;
      }
    };

    const kills: number[] = [];
    const progress: number[] = [];
    const at = () => `after kills at ${kills.map((ms) => `${ms} ms`).join(', ')}`;
    /**
     * Starts the operator, kills it with SIGKILL a random 50-400 ms after it says it runs
     * (wherever the pool controller, the reconciler or a state write is then), and checks
     * what a restart starts from. Says whether the rollout had finished by then.
     */
    const killAtRandom = async () => {
      const op = run();
      await op.waitForLog((l) =>
        l.msg === 'proxy-op running in standalone mode' ? true : undefined,
      );
      const ms = 50 + Math.floor(Math.random() * 351);
      kills.push(ms);
      await new Promise((r) => setTimeout(r, ms));
      op.kill('SIGKILL');
      expect((await op.exit).signal).toBe('SIGKILL');
      // Every Proxy recorded with its UID and the finalizer, no instance whose UID the state
      // lacks (so none can leak), at most one per UID.
      const st = await state();
      for (const [key, e] of Object.entries(st.proxies)) {
        expect(e.finalizers, `${key} ${at()}`).toEqual([FINALIZER]);
      }
      const uids = new Set(Object.values(st.proxies).map((e) => e.uid));
      const seen = new Set<string>();
      for (const v of await vms()) {
        const uid = v.metadata['proxy-operator-uid'] ?? '';
        expect(uids.has(uid), `${v.name} ${at()}`).toBe(true);
        expect(seen.has(uid), `a second instance for ${uid} ${at()}`).toBe(false);
        seen.add(uid);
      }
      // The rollout's bound holds in what was written: at most replicas + maxSurge not being
      // deleted (as a Deployment counts, those on their way out aside).
      const live = members(st).filter(([, e]) => e.deletionTimestamp === undefined);
      expect(live.length, at()).toBeLessThanOrEqual(REPLICAS + 2);
      progress.push(
        members(st).filter(([, e]) => e.spec.port === port && e.status.phase === 'Ready').length,
      );
      return settled(st);
    };

    await writeFile(join(ws.dir, 'pool.yaml'), poolYaml(port));
    await settle('the first template');
    const first = (await state()).pools['default/web']?.status.templateHash;
    const firstUids = new Set(members(await state()).map(([, e]) => e.uid));

    // The template changes; the rollout is killed again and again until it has finished.
    port = 3129;
    await writeFile(join(ws.dir, 'pool.yaml'), poolYaml(port));
    let midway = 0;
    while (kills.length < 8 && !(await killAtRandom())) midway++;
    // The first kills landed while the rollout was under way (see run above).
    expect(midway, at()).toBeGreaterThanOrEqual(3);
    console.log(
      `pool rollout: ${midway} kills mid-way, ${at()}; Proxies of the new template Ready at each: ${progress.join(', ')}`,
    );
    await settle(`the new template, ${at()}`);

    const st = await state();
    const hash = st.pools['default/web']?.status.templateHash;
    expect(hash).not.toBe(first);
    const ms = members(st);
    expect(ms, at()).toHaveLength(REPLICAS);
    // Nothing but the pool's Proxies is left, none of the first template's.
    expect(Object.keys(st.proxies)).toHaveLength(REPLICAS);
    for (const [, e] of ms) expect(firstUids.has(e.uid), at()).toBe(false);
    // Exactly one instance per Proxy UID, none other.
    const live = (await vms()).map((v) => v.metadata['proxy-operator-uid']).sort();
    expect(live, at()).toEqual(ms.map(([, e]) => e.uid).sort());
  });
});
