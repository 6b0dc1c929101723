// Peers: the real Squid (Debian `squid`) with its real basic_ncsa_auth helper, run on loopback
// with a rendered configuration; curl and keep-alive Node.js clients; hashes from the system's
// crypt(3) through perl.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import {
  authMatrix,
  curlThroughProxy,
  describeWithPeers,
  expectedAuthMatrix,
  freePort,
  nextSecond,
  type RunningSquid,
  rotateUnderLoad,
  startHttpEchoOrigin,
  startSquid,
} from '@proxy-op/testkit';
import * as vitest from 'vitest';
import { renderSquidConfig } from '../src/index.js';

const { afterAll, beforeAll, expect, it } = vitest;

/** Squid listens here; only `INSIDE` may use it, `OUTSIDE` is another loopback address. */
const SQUID = '127.0.0.2';
const INSIDE = '127.0.0.1';
const OUTSIDE = '127.0.0.3';
const REALM = 'proxy-op web-0a1b';
const TTL_SECONDS = 2;

/** A SHA-512-crypt hash of `password` made by the system's crypt(3), with a random salt. */
function systemCrypt(password: string): string {
  const salt = randomBytes(12).toString('base64').replace(/\+/g, '.');
  return execFileSync(
    'perl',
    [
      '-e',
      'print crypt(pack(q(H*), $ARGV[0]), $ARGV[1])',
      Buffer.from(password).toString('hex'),
      `$6$${salt}$`,
    ],
    { encoding: 'utf8' },
  );
}

/** The passwords that need escaping somewhere on their way. */
const AWKWARD = ['p$ss:w@rd %20 ünï', 'colon:at@percent%25', ' spaces at both ends '];

describeWithPeers(
  vitest,
  'a real Squid with Basic authentication',
  ['squid', 'curl', 'perl'],
  () => {
    let origin: Awaited<ReturnType<typeof startHttpEchoOrigin>>;
    let squid: RunningSquid;
    let port: number;
    const alice = { user: 'alice', password: 'SENTINEL-squid-7d2e' };
    const awkward = AWKWARD.map((password, i) => ({ user: `awk${i}`, password }));

    beforeAll(async () => {
      origin = await startHttpEchoOrigin();
      port = await freePort(SQUID);
      squid = await startSquid({
        host: SQUID,
        port,
        files: {
          passwd: [alice, ...awkward].map((c) => `${c.user}:${systemCrypt(c.password)}\n`).join(''),
        },
        config: (dir) =>
          renderSquidConfig({
            port,
            listenAddress: SQUID,
            allowedSources: [`${INSIDE}/32`],
            egress: { allow: [`127.0.0.1:${origin.port}`] },
            paths: { accessLog: join(dir, 'access.log'), cacheLog: join(dir, 'cache.log') },
            auth: {
              realm: REALM,
              passwordFile: join(dir, 'passwd'),
              credentialsTtlSeconds: TTL_SECONDS,
            },
          }),
      });
    });
    afterAll(async () => {
      await squid?.stop();
      origin?.server.close();
    });

    it('answers 407 with the realm, 200 for the right credential, 403 outside the sources', async () => {
      const matrix = await authMatrix({
        proxy: { address: SQUID, port },
        url: `http://127.0.0.1:${origin.port}/page`,
        right: alice,
        inside: INSIDE,
        outside: OUTSIDE,
      });
      expect(matrix).toEqual(expectedAuthMatrix(REALM));
    });

    it('takes passwords with $, :, @, %, spaces and non-ASCII, both ways curl sends them', async () => {
      for (const credential of awkward) {
        for (const form of ['option', 'url'] as const) {
          const a = await curlThroughProxy({
            proxy: { address: SQUID, port },
            url: `http://127.0.0.1:${origin.port}/`,
            credential,
            form,
            localAddress: INSIDE,
          });
          expect([credential.password, form, a.status]).toEqual([credential.password, form, 200]);
        }
      }
    });

    it('rotates under load with no failed request, and refuses the old user after credentialsttl', async () => {
      const next = { user: 'alice-2', password: 'SENTINEL-squid-next-9b41' };
      const report = await rotateUnderLoad({
        proxy: { address: SQUID, port },
        url: `http://127.0.0.1:${origin.port}/load`,
        passwordFile: join(squid.dir, 'passwd'),
        hash: systemCrypt,
        old: alice,
        next,
        concurrency: 20,
        loadMs: 1_000,
        // basic_ncsa_auth re-reads the file when its modification time, in whole seconds, changes.
        beforeWrite: nextSecond,
      });
      console.info(
        `Squid: new user accepted ${report.newUserSeenMs} ms after the rewrite; ` +
          `removed user refused ${report.oldUserRefusedMs} ms after it (credentialsttl ${TTL_SECONDS} s); ` +
          `requests: ${JSON.stringify(report.ok)}`,
      );
      expect(report.failures).toEqual([]);
      expect(report.ok[alice.user]).toBeGreaterThan(0);
      expect(report.ok[next.user]).toBeGreaterThan(0);
      // Squid trusts a verified credential for credentialsttl, then asks the helper again.
      expect(report.oldUserRefusedMs).toBeLessThan((TTL_SECONDS + 5) * 1_000);
    }, 60_000);
  },
);
