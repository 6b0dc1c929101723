// Peer: the real file system (temp folders, files owned by another user where the test runs as
// root) and the real `proxy-op` command for validate.
import {
  chmod,
  chown,
  mkdir,
  mkdtemp,
  readFile,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULTS } from '../src/defaults.js';
import { FileCredentialStore } from '../src/standalone/credentials.js';
import { ManifestReader, readBounded } from '../src/standalone/manifests.js';
import { endpointsFile, type StandalonePools, upstreamsFile } from '../src/standalone/pools.js';
import { endpointsDir } from '../src/standalone/state-file.js';
import { StandaloneStore } from '../src/standalone/store.js';
import { runCli } from './cli-support.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function folder() {
  const root = await mkdtemp(join(tmpdir(), 'proxy-op-files-'));
  dirs.push(root);
  return { root, dir: join(root, 'proxies') };
}

const PROXY = [
  'apiVersion: proxy-op.io/v1alpha1',
  'kind: Proxy',
  'metadata:',
  '  name: web',
  'spec:',
  '  provider: lab',
  '  allowedSources: [10.0.0.0/8]',
  '',
].join('\n');

const POOL = [
  'apiVersion: proxy-op.io/v1alpha1',
  'kind: ProxyPool',
  'metadata:',
  '  name: edge',
  'spec:',
  '  replicas: 1',
  '  template:',
  '    spec: { provider: lab, allowedSources: [10.0.0.0/8] }',
  '',
].join('\n');

const root = process.getuid?.() === 0;
if (!root)
  console.warn(
    'standalone-files: not root, so no folder of another user can be made: that test is skipped',
  );

describe('the standalone operator’s own files', () => {
  it.skipIf(!root)('refuses a state folder another user owns, naming it and the fix', async () => {
    const { root: top } = await folder();
    const theirs = join(top, 'theirs');
    await mkdir(join(theirs, 'proxies'), { recursive: true, mode: 0o755 });
    await chown(theirs, 65534, 65534);
    await expect(
      StandaloneStore.open({ dir: join(theirs, 'proxies'), watch: false }),
    ).rejects.toMatchObject({ code: 'FOLDER_OWNED_BY_OTHER', path: theirs });
  });

  it('refuses a state folder group or others can write, and leaves its mode alone', async () => {
    const { root: top } = await folder();
    const open = join(top, 'open');
    await mkdir(join(open, 'proxies'), { recursive: true });
    await chmod(open, 0o777);
    const err = await StandaloneStore.open({ dir: join(open, 'proxies'), watch: false }).catch(
      (e: unknown) => e as Error & { code?: string },
    );
    expect(err).toMatchObject({ code: 'FOLDER_WRITABLE_BY_OTHERS' });
    expect((err as Error).message).toContain(open);
    expect((err as Error).message).toContain('chmod');
    expect((await stat(open)).mode & 0o777).toBe(0o777);
  });

  it('never writes through a link planted as the state file or a credential file', async () => {
    const { root: top, dir } = await folder();
    await mkdir(dir);
    const victim = join(top, 'victim');
    await writeFile(victim, 'untouched\n', { mode: 0o600 });
    // The state file: refused on read, never followed.
    const stateFile = join(top, 'proxies.state.json');
    await symlink(victim, stateFile);
    await expect(StandaloneStore.open({ dir, watch: false })).rejects.toMatchObject({
      code: 'FILE_IS_SYMLINK',
    });
    await rm(stateFile);
    // A credential file: replaced by a file of ours, the link's target untouched.
    const creds = new FileCredentialStore(join(top, 'creds'));
    const owner = { namespace: 'default', name: 'web', uid: 'u' };
    await mkdir(join(top, 'creds'), { mode: 0o700 });
    await symlink(victim, creds.locate(owner));
    await expect(creds.read(owner)).rejects.toMatchObject({ code: 'FILE_IS_SYMLINK' });
    await creds.write(
      owner,
      {
        source: 'generated',
        current: { username: 'u', password: 'p', salt: 'saltsalt' },
        rotatedTime: new Date(0).toISOString(),
      },
      undefined,
    );
    expect(await readFile(victim, 'utf8')).toBe('untouched\n');
    expect((await stat(creds.locate(owner))).mode & 0o777).toBe(0o600);
    expect((await creds.read(owner))?.current.username).toBe('u');
  });
});

describe('manifests', () => {
  it('refuses a file over the bound, naming it and the bound, and keeps its Proxies as they were', async () => {
    const { dir } = await folder();
    await mkdir(dir);
    await writeFile(join(dir, 'web.yaml'), PROXY);
    const store = await StandaloneStore.open({ dir, watch: false });
    try {
      expect(store.get('default/web')).toBeDefined();
      // The same Proxy, padded with a comment past 1 MiB.
      const big = `${PROXY}#${'x'.repeat(DEFAULTS.manifestMaxBytes)}\n`;
      await writeFile(join(dir, 'web.yaml'), big);
      const report = await store.rescan();
      expect(report.problems).toEqual([
        `web.yaml: ${big.length} bytes, over the bound of ${DEFAULTS.manifestMaxBytes} bytes (1 MiB); split it into smaller files`,
      ]);
      expect(report.deleted).toEqual([]);
      expect(store.get('default/web')?.metadata.deletionTimestamp).toBeUndefined();
    } finally {
      await store.close();
    }
  });

  it('parses a file again only when it changed', async () => {
    const { dir } = await folder();
    await mkdir(dir);
    await writeFile(join(dir, 'a.yaml'), PROXY);
    await writeFile(join(dir, 'b.yaml'), PROXY.replace('name: web', 'name: api'));
    const reads: string[] = [];
    const reader = new ManifestReader(dir, (path, bound) => {
      reads.push(path.slice(dir.length + 1));
      return readBounded(path, bound);
    });
    const first = await reader.read();
    expect([...first.proxies.keys()].sort()).toEqual(['default/api', 'default/web']);
    expect(reads.sort()).toEqual(['a.yaml', 'b.yaml']);
    reads.length = 0;
    const again = await reader.read();
    expect(reads).toEqual([]);
    expect([...again.proxies.keys()].sort()).toEqual(['default/api', 'default/web']);
    await writeFile(join(dir, 'b.yaml'), PROXY.replace('name: web', 'name: db'));
    const changed = await reader.read();
    expect(reads).toEqual(['b.yaml']);
    expect([...changed.proxies.keys()].sort()).toEqual(['default/db', 'default/web']);
  });

  it('reports an empty file as a warning, in the store’s problems and by validate, which still passes', async () => {
    const { dir } = await folder();
    await mkdir(dir);
    await writeFile(join(dir, 'web.yaml'), PROXY);
    await writeFile(join(dir, 'empty.yaml'), '# nothing here yet\n');
    const store = await StandaloneStore.open({ dir, watch: false });
    try {
      expect(store.problems()).toEqual([
        'empty.yaml: warning: no documents (an empty manifest defines nothing)',
      ]);
    } finally {
      await store.close();
    }
    const v = await runCli(['validate', '--standalone', dir, '--providers', '/dev/null']);
    expect(v.stderr).toContain('warning: empty.yaml: no documents');
    expect(v.stdout).toContain(`${dir}: ok (1 Proxies)`);
  });
});

describe('down', () => {
  it('removes a pool’s endpoint and upstream files once the pool is gone', async () => {
    const { dir } = await folder();
    await mkdir(dir);
    await writeFile(join(dir, 'edge.yaml'), POOL);
    const store = await StandaloneStore.open({ dir, watch: false });
    try {
      const pools: StandalonePools = store.pools;
      const pool = pools.getPool('default/edge');
      if (pool === undefined) throw new Error('no pool');
      await pools.publishEndpoints(pool, {
        plain: ['http://127.0.0.1:1'],
        withCredentials: ['http://u:p@127.0.0.1:1'],
        upstreams: [],
      });
      const files = endpointsDir(store.stateFile);
      const endpoints = endpointsFile(files, 'default/edge');
      const upstreams = upstreamsFile(files, 'default/edge');
      expect(await readFile(endpoints, 'utf8')).toBe('http://u:p@127.0.0.1:1\n');
      expect((await stat(upstreams)).mode & 0o777).toBe(0o600);
      // What `down` does: the folder read as empty.
      await rm(join(dir, 'edge.yaml'));
      await store.rescan();
      await expect(stat(endpoints)).rejects.toMatchObject({ code: 'ENOENT' });
      await expect(stat(upstreams)).rejects.toMatchObject({ code: 'ENOENT' });
    } finally {
      await store.close();
    }
  });
});
