// Peer: real proxy processes started by the provider, real state folders in temp folders, a real
// origin on 127.0.0.1, and another local user (nobody, 65534): its folders and files made with
// chown, its rename run by a shell as that user. Those cases need root; elsewhere they are skipped
// with the reason printed.
import { spawnSync } from 'node:child_process';
import {
  chmod,
  chown,
  lstat,
  mkdtemp,
  readdir,
  readFile,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createProvider, isPermanent, type Provider, type ProviderError } from '@proxy-op/contract';
import { UnsafePathError } from '@proxy-op/contract/files';
import { hashPassword } from '@proxy-op/forward-proxy';
import { basicAuthorization, type Credential } from '@proxy-op/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalConfig, providerModule } from '../src/index.js';
import { createProcessSeam } from '../src/process.js';
import { killAllSpawned, removeStateDir, spawnedPids, testConfig } from './fixture.js';
import { freePort, startOrigin, viaProxy } from './support.js';

/** The other local user: nobody. */
const OTHER_UID = 65534;
const AS_ROOT = process.getuid?.() === 0;
if (!AS_ROOT) {
  console.warn(
    `skipping the other-user cases of owned-files.test.ts: only root can act as user ${OTHER_UID}`,
  );
}

const RANGE = '127.0.12.0/24';
const REALM = 'proxy-op default/owned';
const ours: Credential = { user: 'owner-1a2b', password: 'SENTINEL-ours-5f1e' };
const theirs: Credential = { user: 'intruder', password: 'SENTINEL-theirs-9c0d' };
const passwordFile = (c: Credential) =>
  new TextEncoder().encode(`${c.user}:${hashPassword(c.password)}\n`);

const modeOf = async (p: string) => (await lstat(p)).mode & 0o7777;

/** What `p` rejected with, which must be a Permanent ProviderError. */
async function permanentFrom(p: Promise<unknown>): Promise<ProviderError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(isPermanent(err), String(err)).toBe(true);
  return err as ProviderError;
}

let port: number;
let origin: Awaited<ReturnType<typeof startOrigin>>;
const folders: string[] = [];

beforeAll(async () => {
  port = await freePort('127.0.0.1');
  origin = await startOrigin();
});

afterAll(async () => {
  origin?.server.close();
  await killAllSpawned();
  // Last made first: a state folder inside another is cleared (its processes killed) before it.
  for (const dir of folders.reverse()) await removeStateDir(dir);
});

/** A provider over `stateDir` (a fresh temp folder when not given). */
async function localProvider(
  name: string,
  stateDir?: string,
): Promise<{ provider: Provider; config: LocalConfig }> {
  const config = await testConfig({
    addressRange: RANGE,
    ...(stateDir === undefined ? {} : { stateDir }),
  });
  folders.push(config.stateDir);
  return { provider: await createProvider(providerModule, name, config, {}), config };
}

const request = (name: string, auth?: Credential) => ({
  name,
  namespace: 'default',
  uid: `uid-${name}`,
  port,
  cloudInit: new Uint8Array(),
  allowedSources: ['127.0.0.1/32'],
  // The origin is on this host: the destination policy refuses it unless allowed.
  egress: { allow: [`127.0.0.1:${origin.port}`] },
  placement: {},
  ...(auth === undefined ? {} : { auth: { realm: REALM, passwordFile: passwordFile(auth) } }),
});

/** The status of a GET through the proxy of `provider`'s `name` with credential `c`. */
async function statusWith(provider: Provider, name: string, c: Credential): Promise<number> {
  const inst = await provider.get(`processes/${name}`);
  const answer = await viaProxy(
    { address: inst.ip ?? '', port },
    `http://127.0.0.1:${origin.port}/owned`,
    { proxyAuthorization: basicAuthorization({ user: c.user, password: c.password }) },
  );
  return answer.status;
}

describe('the state folder', () => {
  it('is refused when group or others can write it, naming it and the fix, and left as it is', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'provider-local-open-'));
    await chmod(dir, 0o777);
    const { provider } = await localProvider('local-open', dir);
    const err = await permanentFrom(provider.create(request('proxy-open')));
    expect(err.message).toContain(`folder ${dir} can be written by group and others`);
    expect(err.message).toContain(`chmod 700 ${dir}`);
    expect(UnsafePathError.isInstance(err.cause)).toBe(true);
    expect(await modeOf(dir)).toBe(0o777);
    expect(await readdir(dir)).toEqual([]);
    const [target] = (await provider.check?.()) ?? [];
    expect(target).toMatchObject({ target: 'state-dir', reason: 'StateDirUnsafe', ready: false });
    expect(target?.message).toContain(`chmod 700 ${dir}`);
  });

  it('is made with mode 0700 when missing, its files 0600: state, password file, both logs', async () => {
    const parent = await mkdtemp(join(tmpdir(), 'provider-local-made-'));
    folders.push(parent);
    const dir = join(parent, 'state', 'proxy-op', 'local');
    const { provider } = await localProvider('local-made', dir);
    await provider.create(request('proxy-made', ours));
    expect(await modeOf(dir)).toBe(0o700);
    expect(await modeOf(join(parent, 'state'))).toBe(0o700);
    expect(await statusWith(provider, 'proxy-made', ours)).toBe(200);
    for (const f of ['proxy-made.json', 'proxy-made.passwd', 'proxy-made.log']) {
      expect(await modeOf(join(dir, f)), f).toBe(0o600);
    }
    const access = join(dir, 'proxy-made.access.log');
    expect(await modeOf(access)).toBe(0o600);
    // The proxy appends to the file the provider made (its lines come in within 100 ms).
    for (let i = 0; i < 100 && (await stat(access)).size === 0; i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(await readFile(access, 'utf8')).toContain('"status":200');
    expect(await modeOf(access)).toBe(0o600);
    // No temporary file is left beside them.
    expect((await readdir(dir)).sort()).toEqual([
      'proxy-made.access.log',
      'proxy-made.json',
      'proxy-made.log',
      'proxy-made.passwd',
    ]);
    await provider.delete('processes/proxy-made');
    expect(await readdir(dir)).toEqual([]);
  });

  it('takes a diagnostics log of ours from an earlier version (umask 0644) at 0600', async () => {
    const { provider, config } = await localProvider('local-earlier');
    const log = join(config.stateDir, 'proxy-earlier.log');
    await writeFile(log, 'an earlier run\n', { mode: 0o644 });
    await chmod(log, 0o644);
    await provider.create(request('proxy-earlier'));
    expect(await modeOf(log)).toBe(0o600);
    expect(await readFile(log, 'utf8')).toMatch(/^an earlier run\n/);
    await provider.delete('processes/proxy-earlier');
  });

  describe.skipIf(!AS_ROOT)('of another user', () => {
    it('is refused, naming it and the fix, and nothing is written or started in it', async () => {
      const dir = await mkdtemp(join(tmpdir(), 'provider-local-theirs-'));
      await chown(dir, OTHER_UID, OTHER_UID);
      const { provider } = await localProvider('local-theirs', dir);
      const before = spawnedPids.size;
      const err = await permanentFrom(provider.create(request('proxy-theirs', ours)));
      expect(err.message).toContain(`folder ${dir} belongs to user ${OTHER_UID}`);
      expect(err.message).toContain('choose another folder');
      expect(err.message).not.toContain('SENTINEL');
      expect(await readdir(dir)).toEqual([]);
      expect(spawnedPids.size).toBe(before);
      const [target] = (await provider.check?.()) ?? [];
      expect(target).toMatchObject({ reason: 'StateDirUnsafe', ready: false });
    });
  });
});

describe('a link planted in the state folder', () => {
  it.each([
    ['proxy-link.log', 'the diagnostics log'],
    ['proxy-link.access.log', 'the access log'],
  ])('as %s (%s) is never written through: its target is unchanged', async (planted) => {
    const { provider, config } = await localProvider('local-link');
    const outside = await mkdtemp(join(tmpdir(), 'provider-local-target-'));
    folders.push(outside);
    const target = join(outside, 'root-only');
    await writeFile(target, 'root only\n', { mode: 0o600 });
    await symlink(target, join(config.stateDir, planted));
    const err = await permanentFrom(provider.create(request('proxy-link')));
    expect(err.message).toContain(`file ${join(config.stateDir, planted)} is a symbolic link`);
    expect(await readFile(target, 'utf8')).toBe('root only\n');
    expect(await modeOf(target)).toBe(0o600);
    // No proxy was started on it.
    const rec = JSON.parse(await readFile(join(config.stateDir, 'proxy-link.json'), 'utf8'));
    expect(rec.pid).toBeUndefined();
    // Once the link is gone the same Create starts the proxy, and the target stays as it was.
    await rm(join(config.stateDir, planted));
    await provider.create(request('proxy-link'));
    expect((await provider.get('processes/proxy-link')).state).toBe('Running');
    expect(await readFile(target, 'utf8')).toBe('root only\n');
    await provider.delete('processes/proxy-link');
  });
});

describe.skipIf(!AS_ROOT)('a password file renamed over ours by another user', () => {
  /** Runs `script` in a shell as the other user, with `args` as $1.. and `input` on stdin. */
  const asOther = (script: string, args: string[], input: string) => {
    const run = spawnSync('sh', ['-c', script, 'sh', ...args], {
      uid: OTHER_UID,
      gid: OTHER_UID,
      input,
      encoding: 'utf8',
    });
    if (run.status !== 0) throw new Error(`as user ${OTHER_UID}: ${run.stderr}`);
  };

  it('is detected: the instance reads Stopped, and a repeat Create restores ours and restarts the proxy', async () => {
    const { provider, config } = await localProvider('local-swap');
    const dir = config.stateDir;
    const passwd = join(dir, 'proxy-swap.passwd');
    await provider.create(request('proxy-swap', ours));
    const first = JSON.parse(await readFile(join(dir, 'proxy-swap.json'), 'utf8')).pid as number;
    expect(await statusWith(provider, 'proxy-swap', ours)).toBe(200);

    // The owner opens the folder by mistake; the other user writes its own file and renames it
    // over ours.
    await chmod(dir, 0o777);
    asOther(
      'cat > "$1/.planted" && mv "$1/.planted" "$1/proxy-swap.passwd"',
      [dir],
      new TextDecoder().decode(passwordFile(theirs)),
    );
    expect((await stat(passwd)).uid).toBe(OTHER_UID);
    // While the folder is open, nothing in it is trusted: every call says so, with the fix.
    const open = await permanentFrom(provider.get('processes/proxy-swap'));
    expect(open.message).toContain(`chmod 700 ${dir}`);
    await chmod(dir, 0o700);

    // The password file is not ours: the proxy reading it is not to be trusted, Stopped.
    expect((await provider.get('processes/proxy-swap')).state).toBe('Stopped');

    // A repeat Create writes ours again and starts the proxy anew, so nothing it verified from
    // their file is kept.
    await provider.create(request('proxy-swap', ours));
    const after = JSON.parse(await readFile(join(dir, 'proxy-swap.json'), 'utf8')).pid as number;
    expect(after).not.toBe(first);
    const inst = await provider.get('processes/proxy-swap');
    expect(inst.state).toBe('Running');
    expect((await stat(passwd)).uid).toBe(0);
    expect(await modeOf(passwd)).toBe(0o600);
    expect(await statusWith(provider, 'proxy-swap', ours)).toBe(200);
    expect(await statusWith(provider, 'proxy-swap', theirs)).toBe(407);
    await provider.delete('processes/proxy-swap');
  }, 60_000);

  it('is never handed to a proxy: the spawn refuses it and starts nothing', async () => {
    const { config } = await localProvider('local-spawn');
    const dir = config.stateDir;
    const seam = createProcessSeam(config);
    const record = {
      version: 1 as const,
      name: 'proxy-spawn',
      marks: {},
      address: '127.0.12.200',
      outgoingAddress: '127.0.12.200',
      port,
      allowedSources: ['127.0.0.1/32'],
      accessLog: join(dir, 'proxy-spawn.access.log'),
      auth: { realm: REALM, passwordFile: join(dir, 'proxy-spawn.passwd') },
      phase: 'starting',
    };
    await seam.writeState(record);
    await writeFile(join(dir, 'proxy-spawn.passwd'), passwordFile(theirs), { mode: 0o600 });
    await chown(join(dir, 'proxy-spawn.passwd'), OTHER_UID, OTHER_UID);
    const err = await seam.spawn(record).catch((e: unknown) => e);
    expect(UnsafePathError.isInstance(err)).toBe(true);
    expect((err as UnsafePathError).code).toBe('FILE_OWNED_BY_OTHER');
    expect((await seam.readState('proxy-spawn'))?.pid).toBeUndefined();
    expect(await seam.ownsPasswordFile('proxy-spawn')).toBe(false);
  });
});
