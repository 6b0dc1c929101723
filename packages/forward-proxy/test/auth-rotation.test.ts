// Peers: the proxy program (spawned as a child process) with its password file on disk, keep-alive
// Node.js clients and a local origin, all on 127.0.0.0/8.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rotateUnderLoad } from '@proxy-op/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPassword } from '../src/index.js';
import {
  freePort,
  killAllSpawned,
  type RunningProxy,
  startOrigin,
  startProgram,
  stopProgram,
} from './support.js';

const TTL_MS = 1_000;

describe('a credential rotation under load', () => {
  let origin: Awaited<ReturnType<typeof startOrigin>>;
  let proxy: RunningProxy;
  let dir: string;
  const old = { user: 'alice', password: 'SENTINEL-rotate-old-40c2' };
  const next = { user: 'alice-2', password: 'SENTINEL-rotate-new-a7e9' };

  beforeAll(async () => {
    origin = await startOrigin();
    dir = await mkdtemp(join(tmpdir(), 'forward-proxy-rotation-'));
    await writeFile(join(dir, 'passwd'), `${old.user}:${hashPassword(old.password)}\n`);
    proxy = await startProgram({
      address: '127.0.0.2',
      port: await freePort('127.0.0.2'),
      allowedSources: ['127.0.0.1/32'],
      auth: { realm: 'rotation', passwordFile: join(dir, 'passwd'), credentialsTtlMs: TTL_MS },
      // The rotation polls the new user every 25 ms until it exists, and the old one until it is
      // refused, all from one source: each refusal is a failed check, which the proxy otherwise
      // answers 429 after its burst (auth-bounds and front-door test that bound).
      limits: { maxAuthFailures: 10_000 },
    });
  });
  afterAll(async () => {
    await stopProgram(proxy);
    await killAllSpawned();
    origin.server.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('fails no request, sees the new user within a second, refuses the removed one', async () => {
    const report = await rotateUnderLoad({
      proxy,
      url: `http://127.0.0.1:${origin.port}/load`,
      passwordFile: join(dir, 'passwd'),
      hash: (password) => hashPassword(password),
      old,
      next,
      concurrency: 20,
      loadMs: 1_000,
    });
    console.info(
      `forward proxy: new user accepted ${report.newUserSeenMs} ms after the rewrite; ` +
        `removed user refused ${report.oldUserRefusedMs} ms after it (credentialsTtlMs ${TTL_MS}); ` +
        `requests: ${JSON.stringify(report.ok)}`,
    );
    expect(report.failures).toEqual([]);
    expect(report.ok[old.user]).toBeGreaterThan(0);
    expect(report.ok[next.user]).toBeGreaterThan(0);
    // The file is looked at once a second at most, and a changed line ends what was kept of it.
    expect(report.newUserSeenMs).toBeLessThan(2_000);
    expect(report.oldUserRefusedMs).toBeLessThan(2_000);
  });
});
