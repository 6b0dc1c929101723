// Peers: the real Squid (Debian `squid`) with its real basic_ncsa_auth helper, run with the
// configuration @proxy-op/squid-config renders, and the proxy program, side by side over one
// password file made by hashPassword; curl asks both the same questions. All on 127.0.0.0/8.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { renderSquidConfig } from '@proxy-op/squid-config';
import {
  AWKWARD_PASSWORDS,
  authMatrix,
  curlThroughProxy,
  describeWithPeers,
  expectedAuthMatrix,
  type RunningSquid,
  startSquid,
} from '@proxy-op/testkit';
import * as vitest from 'vitest';
import { hashPassword } from '../src/index.js';
import {
  freePort,
  killAllSpawned,
  type RunningProxy,
  startOrigin,
  startProgram,
  stopProgram,
} from './support.js';

const { afterAll, beforeAll, expect, it } = vitest;

/** Squid and the proxy each listen on an address of their own; only `INSIDE` may use them. */
const SQUID = '127.0.0.4';
const PROXY = '127.0.0.5';
const INSIDE = '127.0.0.1';
const OUTSIDE = '127.0.0.6';
const REALM = 'proxy-op default/web';

describeWithPeers(
  vitest,
  'the forward proxy and Squid with authentication',
  ['squid', 'curl'],
  () => {
    let origin: Awaited<ReturnType<typeof startOrigin>>;
    let squid: RunningSquid;
    let proxy: RunningProxy;
    let squidPort: number;
    let ownDir = '';
    const alice = { user: 'alice', password: 'SENTINEL-diff-61bd' };
    const awkward = AWKWARD_PASSWORDS.map((password, i) => ({ user: `awk${i}`, password }));
    const passwd = [alice, ...awkward]
      .map((c) => `${c.user}:${hashPassword(c.password)}\n`)
      .join('');

    beforeAll(async () => {
      origin = await startOrigin();
      squidPort = await freePort(SQUID);
      squid = await startSquid({
        host: SQUID,
        port: squidPort,
        files: { passwd },
        config: (dir) =>
          renderSquidConfig({
            port: squidPort,
            listenAddress: SQUID,
            allowedSources: [`${INSIDE}/32`],
            egress: { allow: [`127.0.0.1:${origin.port}`] },
            paths: { accessLog: join(dir, 'access.log'), cacheLog: join(dir, 'cache.log') },
            auth: { realm: REALM, passwordFile: join(dir, 'passwd') },
          }),
      });
      // The same lines in a file of the proxy's own: Squid's copy is its user's, which the proxy
      // does not trust (another user could have put anything in it).
      ownDir = await mkdtemp(join(tmpdir(), 'proxy-op-diff-passwd-'));
      await writeFile(join(ownDir, 'passwd'), passwd, { mode: 0o600 });
      proxy = await startProgram({
        address: PROXY,
        port: await freePort(PROXY),
        allowedSources: [`${INSIDE}/32`],
        auth: { realm: REALM, passwordFile: join(ownDir, 'passwd') },
        // Squid has no bound on failed credentials per source: asked the same wrong ones, the
        // proxy must not run out of tries before Squid's answers are all compared.
        limits: { maxAuthFailures: 10_000 },
      });
    });
    afterAll(async () => {
      await stopProgram(proxy);
      await killAllSpawned();
      await squid?.stop();
      if (ownDir !== '') await rm(ownDir, { recursive: true, force: true });
      origin?.server.close();
    });

    it('gives the same answers as Squid to every case', async () => {
      const ask = (p: { address: string; port: number }) =>
        authMatrix({
          proxy: p,
          url: `http://127.0.0.1:${origin.port}/page`,
          right: alice,
          inside: INSIDE,
          outside: OUTSIDE,
        });
      const fromSquid = await ask({ address: SQUID, port: squidPort });
      const fromProxy = await ask(proxy);
      expect(fromSquid).toEqual(expectedAuthMatrix(REALM));
      // The one known difference: Squid answers a source outside the allowed ones 403, the proxy
      // closes its connection as it is accepted, before a byte is read.
      expect(fromProxy).toEqual(expectedAuthMatrix(REALM, '0'));
    });

    it('takes the same awkward passwords as Squid, from the same hashes', async () => {
      const statuses = async (p: { address: string; port: number }) => {
        const out: string[] = [];
        for (const credential of awkward) {
          for (const form of ['option', 'url'] as const) {
            for (const c of [credential, { ...credential, password: `${credential.password}x` }]) {
              const a = await curlThroughProxy({
                proxy: p,
                url: `http://127.0.0.1:${origin.port}/`,
                credential: c,
                form,
                localAddress: INSIDE,
              });
              out.push(`${c.password} ${form} ${a.status}`);
            }
          }
        }
        return out;
      };
      const fromSquid = await statuses({ address: SQUID, port: squidPort });
      expect(fromSquid.filter((s) => s.endsWith(' 200'))).toHaveLength(awkward.length * 2);
      expect(await statuses(proxy)).toEqual(fromSquid);
    });
  },
);
