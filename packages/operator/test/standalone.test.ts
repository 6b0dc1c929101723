// Peer: the real file system (a temp folder of manifests and its state file).
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FINALIZER } from '../src/api/proxy.js';
import { readStateFile } from '../src/standalone/state-file.js';
import { StandaloneStore } from '../src/standalone/store.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function folder() {
  const root = await mkdtemp(join(tmpdir(), 'proxy-op-standalone-'));
  dirs.push(root);
  return { root, dir: join(root, 'proxies') };
}

function manifest(name: string, port = 3128, ns?: string) {
  return [
    'apiVersion: proxy-op.io/v1alpha1',
    'kind: Proxy',
    'metadata:',
    `  name: ${name}`,
    ...(ns ? [`  namespace: ${ns}`] : []),
    'spec:',
    '  provider: lab',
    `  port: ${port}`,
    '  allowedSources: [10.0.0.0/8]',
    '',
  ].join('\n');
}

describe('StandaloneStore', () => {
  it('reads every manifest, gives each a UID and the finalizer, and writes them before reporting', async () => {
    const { dir } = await folder();
    const store0 = await StandaloneStore.open({ dir, watch: false });
    await store0.close();
    await writeFile(join(dir, 'a.yaml'), manifest('a'));
    await writeFile(join(dir, 'more.yml'), `${manifest('b', 3128, 'team')}---\n${manifest('c')}`);
    await writeFile(join(dir, 'notes.txt'), 'ignored');
    const store = await StandaloneStore.open({ dir, watch: false });
    expect(
      store
        .list()
        .map((p) => `${p.metadata.namespace}/${p.metadata.name}`)
        .sort(),
    ).toEqual(['default/a', 'default/c', 'team/b']);
    const a = store.get('default/a');
    expect(a?.metadata.finalizers).toEqual([FINALIZER]);
    expect(a?.metadata.generation).toBe(1);
    const onDisk = await readStateFile(store.stateFile);
    expect(onDisk.proxies['default/a']?.uid).toBe(a?.metadata.uid);
    expect(store.stateFile).toBe(`${dir}.state.json`);
    await store.close();
  });

  it('keeps UIDs across restarts and bumps the generation on a spec change only', async () => {
    const { dir } = await folder();
    (await StandaloneStore.open({ dir, watch: false })).close();
    await writeFile(join(dir, 'a.yaml'), manifest('a'));
    const s1 = await StandaloneStore.open({ dir, watch: false });
    const uid = s1.get('default/a')?.metadata.uid;
    await s1.close();
    await writeFile(join(dir, 'a.yaml'), `# a comment\n${manifest('a')}`);
    const s2 = await StandaloneStore.open({ dir, watch: false });
    expect(s2.get('default/a')?.metadata).toMatchObject({ uid, generation: 1 });
    await writeFile(join(dir, 'a.yaml'), manifest('a', 3129));
    const report = await s2.rescan();
    expect(report.updated).toEqual(['default/a']);
    expect(s2.get('default/a')?.metadata).toMatchObject({ uid, generation: 2 });
    await s2.close();
  });

  it('carries the manifest’s annotations; a change of them alone is an update without a new generation', async () => {
    const { dir } = await folder();
    (await StandaloneStore.open({ dir, watch: false })).close();
    const annotated = (value: string) =>
      manifest('a').replace(
        'metadata:\n',
        `metadata:\n  annotations:\n    proxy-op.io/rotate-credentials: "${value}"\n`,
      );
    await writeFile(join(dir, 'a.yaml'), annotated('1'));
    const s = await StandaloneStore.open({ dir, watch: false });
    expect(s.get('default/a')?.metadata).toMatchObject({
      generation: 1,
      annotations: { 'proxy-op.io/rotate-credentials': '1' },
    });
    await writeFile(join(dir, 'a.yaml'), annotated('2'));
    expect((await s.rescan()).updated).toEqual(['default/a']);
    expect(s.get('default/a')?.metadata).toMatchObject({
      generation: 1,
      annotations: { 'proxy-op.io/rotate-credentials': '2' },
    });
    expect((await s.rescan()).updated).toEqual([]);
    await writeFile(join(dir, 'a.yaml'), manifest('a'));
    expect((await s.rescan()).updated).toEqual(['default/a']);
    expect(s.get('default/a')?.metadata.annotations).toBeUndefined();
    await s.close();
    // Kept across a restart, with the state file.
    await writeFile(join(dir, 'a.yaml'), annotated('3'));
    const again = await StandaloneStore.open({ dir, watch: false });
    expect(again.get('default/a')?.metadata.annotations).toEqual({
      'proxy-op.io/rotate-credentials': '3',
    });
    await again.close();
  });

  it('marks a removed manifest deleted and forgets it only when the finalizer goes', async () => {
    const { dir } = await folder();
    (await StandaloneStore.open({ dir, watch: false })).close();
    await writeFile(join(dir, 'a.yaml'), manifest('a'));
    const store = await StandaloneStore.open({ dir, watch: false });
    const seen: string[] = [];
    store.watch((k) => seen.push(k));
    await rm(join(dir, 'a.yaml'));
    const report = await store.rescan();
    expect(report.deleted).toEqual(['default/a']);
    expect(seen).toEqual(['default/a']);
    expect(store.get('default/a')?.metadata.deletionTimestamp).toBeDefined();
    await store.removeFinalizer('default/a', FINALIZER);
    expect(store.get('default/a')).toBeUndefined();
    await store.close();
    expect((await readStateFile(store.stateFile)).proxies).toEqual({});
  });

  // A process killed right after a write keeps what that write put on disk. A write must
  // hold the state as it was when it began: a Proxy released while it was under way,
  // half-applied, is left deleted without its finalizer, which nothing ever finishes.
  it('writes the state as it was when the write began, never a change made while it is under way', async () => {
    const { dir } = await folder();
    (await StandaloneStore.open({ dir, watch: false })).close();
    await writeFile(join(dir, 'a.yaml'), manifest('a'));
    await writeFile(join(dir, 'b.yaml'), manifest('b'));
    // No timed write during the test: only the writes it asks for.
    const store = await StandaloneStore.open({ dir, watch: false, flushDelayMs: 60_000 });
    await rm(join(dir, 'a.yaml'));
    await store.rescan();
    await store.updateStatus('default/b', { phase: 'Ready', observedGeneration: 1 });
    const writing = store.flush();
    // Released while that write is waiting for the file system.
    await store.removeFinalizer('default/a', FINALIZER);
    expect(store.get('default/a')).toBeUndefined();
    await writing;
    const onDisk = (await readStateFile(store.stateFile)).proxies;
    expect(onDisk['default/a']?.deletionTimestamp).toBeDefined();
    expect(onDisk['default/a']?.finalizers).toEqual([FINALIZER]);
    expect(onDisk['default/b']?.status.phase).toBe('Ready');
    await store.close();
    expect(Object.keys((await readStateFile(store.stateFile)).proxies)).toEqual(['default/b']);
  });

  it('forgets on open a Proxy the state file holds deleted and without finalizers', async () => {
    const { dir } = await folder();
    (await StandaloneStore.open({ dir, watch: false })).close();
    await writeFile(join(dir, 'b.yaml'), manifest('b'));
    const first = await StandaloneStore.open({ dir, watch: false });
    await first.close();
    // What a torn write of an earlier version could leave behind.
    const state = JSON.parse(await readFile(first.stateFile, 'utf8')) as {
      proxies: Record<string, Record<string, unknown>>;
    };
    state.proxies['default/a'] = {
      ...state.proxies['default/b'],
      uid: '6f1c3a52-9f4e-4d6b-9a51-0c7d2e8b4f10',
      source: 'a.yaml',
      deletionTimestamp: new Date().toISOString(),
      finalizers: [],
    };
    await writeFile(first.stateFile, JSON.stringify(state));
    const store = await StandaloneStore.open({ dir, watch: false });
    expect(store.get('default/a')).toBeUndefined();
    expect(Object.keys((await readStateFile(store.stateFile)).proxies)).toEqual(['default/b']);
    await store.close();
  });

  it('makes a new Proxy of a manifest put back while the old one was being deleted', async () => {
    const { dir } = await folder();
    (await StandaloneStore.open({ dir, watch: false })).close();
    await writeFile(join(dir, 'a.yaml'), manifest('a'));
    const store = await StandaloneStore.open({ dir, watch: false });
    const uid = store.get('default/a')?.metadata.uid;
    await rm(join(dir, 'a.yaml'));
    await store.rescan();
    await writeFile(join(dir, 'a.yaml'), manifest('a', 4000));
    await store.rescan();
    expect(store.get('default/a')?.metadata.deletionTimestamp).toBeDefined();
    const seen: string[] = [];
    store.watch((k) => seen.push(k));
    await store.removeFinalizer('default/a', FINALIZER);
    const end = Date.now() + 2000;
    while (seen.length === 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
    const again = store.get('default/a');
    expect(again?.metadata.uid).not.toBe(uid);
    expect(again?.metadata.deletionTimestamp).toBeUndefined();
    expect(again?.spec.port).toBe(4000);
    await store.close();
  });

  it('keeps the Proxies of a broken or invalid manifest as they were, and reports the problems', async () => {
    const { dir } = await folder();
    (await StandaloneStore.open({ dir, watch: false })).close();
    await writeFile(join(dir, 'a.yaml'), manifest('a'));
    await writeFile(join(dir, 'b.yaml'), manifest('b'));
    const store = await StandaloneStore.open({ dir, watch: false });
    await writeFile(join(dir, 'a.yaml'), 'apiVersion: [oops\n');
    await writeFile(join(dir, 'b.yaml'), manifest('b', 0));
    const report = await store.rescan();
    expect(report.deleted).toEqual([]);
    expect(report.problems.some((p) => p.startsWith('a.yaml: '))).toBe(true);
    expect(report.problems).toContain('b.yaml: spec.port: must be >= 1');
    expect(store.get('default/a')?.metadata.deletionTimestamp).toBeUndefined();
    expect(store.get('default/b')?.spec.port).toBe(3128);
    await store.close();
  });

  it('reports a name defined twice and keeps the first', async () => {
    const { dir } = await folder();
    (await StandaloneStore.open({ dir, watch: false })).close();
    await writeFile(join(dir, 'a.yaml'), manifest('a', 1000));
    await writeFile(join(dir, 'b.yaml'), manifest('a', 2000));
    const store = await StandaloneStore.open({ dir, watch: false });
    expect(store.get('default/a')?.spec.port).toBe(1000);
    expect(store.problems()).toEqual([
      'b.yaml: metadata.name: default/a is already defined in a.yaml',
    ]);
    await store.close();
  });

  it('refuses a second operator on the same state file and takes over a dead one’s lock', async () => {
    const { dir } = await folder();
    const store = await StandaloneStore.open({ dir, watch: false });
    await store.close();
    await writeFile(`${store.stateFile}.lock`, '1');
    await expect(StandaloneStore.open({ dir, watch: false })).rejects.toThrow(
      /in use by another proxy-op \(pid 1\)/,
    );
    await writeFile(`${store.stateFile}.lock`, '999999999');
    const again = await StandaloneStore.open({ dir, watch: false });
    await again.close();
  });

  it('coalesces status writes and replaces the state file atomically', async () => {
    const { dir } = await folder();
    (await StandaloneStore.open({ dir, watch: false })).close();
    await writeFile(join(dir, 'a.yaml'), manifest('a'));
    const store = await StandaloneStore.open({ dir, watch: false, flushDelayMs: 10 });
    for (let i = 0; i < 50; i++)
      await store.updateStatus('default/a', { phase: 'Provisioning', observedGeneration: i });
    await store.flush();
    const text = await readFile(store.stateFile, 'utf8');
    expect(JSON.parse(text).proxies['default/a'].status.observedGeneration).toBe(49);
    await store.close();
  });

  it('sees changes through the folder watch', async () => {
    const { dir } = await folder();
    const store = await StandaloneStore.open({ dir, rescanMs: 50 });
    const seen: string[] = [];
    store.watch((k) => seen.push(k));
    await writeFile(join(dir, 'w.yaml'), manifest('w'));
    const end = Date.now() + 3000;
    while (seen.length === 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    expect(seen).toEqual(['default/w']);
    await store.close();
  });
});
