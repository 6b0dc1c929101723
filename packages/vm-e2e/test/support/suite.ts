// The VM end-to-end suite both libvirt providers run: the operator, standalone, over SSH to a real
// libvirtd in a network namespace, turning a Proxy manifest with the default cloud-init into a
// real Debian guest; real cloud-init reads the seed, real Squid serves the configuration, a real
// client (curl) goes through it.
import { copyFile, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CLOUD_NETWORK,
  CLOUD_STACK_PEERS,
  type CloudStack,
  guestAddresses,
  startCloudStack,
} from '@proxy-op/libvirt-harness';
import { renderCloudInit, renderSquidConfig } from '@proxy-op/operator';
import { describeWithPeers } from '@proxy-op/testkit';
import type * as Vitest from 'vitest';
import { type ProxyStatus, type RunningOperator, startOperator } from './operator.js';
import { type Milestone, Timeline } from './timeline.js';

/** How long one boot may take to reach Ready and serve: a bound for a guest that never does. */
const BOOT_BUDGET_MS = 600_000;
/** How long a Delete may take to leave nothing behind. */
const DELETE_BUDGET_MS = 180_000;
const PORT = 3128;
const NAME = 'web';
/** The client the Proxy allows: the namespace's address on the bridge. */
const ALLOWED = `${CLOUD_NETWORK.gateway}/32`;
/** A client it does not allow, until the spec change adds it. */
const OUTSIDER = CLOUD_NETWORK.outsider;
const FINISHED = /Cloud-init v\. \S+ finished at/;
/**
 * The origin and the operator's probe target listen on the bridge's address, a private one the
 * default destination policy refuses: the Proxy allows it.
 */
const EGRESS_ALLOW = `${CLOUD_NETWORK.gateway}/32`;

/** The overlap of a rotation: longer than a probe round, short enough for a test. */
const OVERLAP = '20s';
/** Squid's credentialsttl in the rendered configuration, in ms: how long it may go on accepting a removed credential. */
const SQUID_CREDENTIALS_TTL_MS = 60_000;

function manifest(allowedSources: readonly string[], rotate?: string): string {
  return [
    'apiVersion: proxy-op.io/v1alpha1',
    'kind: Proxy',
    'metadata:',
    `  name: ${NAME}`,
    ...(rotate === undefined
      ? []
      : ['  annotations:', `    proxy-op.io/rotate-credentials: "${rotate}"`]),
    'spec:',
    '  provider: vm',
    '  placement: { zone: kvm1, machineType: small, image: debian }',
    `  port: ${PORT}`,
    `  allowedSources: [${allowedSources.join(', ')}]`,
    `  auth: { type: basic, overlap: ${OVERLAP} }`,
    `  egress: { allow: [${EGRESS_ALLOW}] }`,
    '',
  ].join('\n');
}

/** The Proxy's credential as the operator keeps it standalone (the file `proxy-op url` reads). */
async function credentialOf(dir: string): Promise<{ username: string; password: string }> {
  const file = join(`${dir}.state.credentials.d`, `default.${NAME}.json`);
  const kept = JSON.parse(await readFile(file, 'utf8')) as {
    record: { current: { username: string; password: string } };
  };
  return kept.record.current;
}

/** `http://user:pass@ip:port`: the proxy URL a client uses, with the Proxy's credential. */
function withCredential(c: { username: string; password: string }, ip: string): string {
  return `http://${encodeURIComponent(c.username)}:${encodeURIComponent(c.password)}@${ip}:${PORT}`;
}

/** The domain name in a provider ID (`hosts/<host>/domains/<name>`). */
function domainOf(status: ProxyStatus | undefined): string | undefined {
  return status?.providerID?.split('/').at(-1);
}

/** Registers the suite for the provider `type` (`kvm2` or `kvm`). */
export function describeVmEndToEnd(vitest: typeof Vitest, type: 'kvm2' | 'kvm'): void {
  const { afterAll, afterEach, beforeAll, expect, it } = vitest;
  describeWithPeers(
    vitest,
    `${type}: a Proxy with the default cloud-init on a real Debian guest, end to end`,
    [...CLOUD_STACK_PEERS],
    () => {
      let stack: CloudStack;
      let op: RunningOperator;
      let root = '';
      let dir = '';
      /** The current instance: its domain, its UUID and the guest's address. */
      let current: { name: string; uuid: string; ip: string; specHash: string } | undefined;
      const names = new Set<string>();
      const timings: string[] = [];

      beforeAll(async () => {
        const started = Date.now();
        stack = await startCloudStack();
        const g = stack.guest;
        timings.push(
          `image: ${g.built ? `built in ${(g.buildMs / 1000).toFixed(1)} s` : 'from the cache'}, ${(g.bytes / 2 ** 20).toFixed(0)} MiB (Debian ${g.suite}, kernel ${g.kernelVersion}); stack up in ${((Date.now() - started - g.buildMs) / 1000).toFixed(1)} s`,
        );
        console.log(timings[0]);
        // In the stack's dir, which goes with the stack even when this process is killed.
        root = join(stack.dir, 'operator');
        dir = join(root, 'proxies');
        await mkdir(dir, { recursive: true });
        const providers = join(root, 'providers.yaml');
        await writeFile(
          providers,
          `installation: e2e\nproviders:\n  - name: vm\n    type: ${type}\n    ${type}: ${JSON.stringify(stack.config())}\n`,
        );
        // The operator's own probe target on the bridge's address, where the guests reach it: the
        // GET to its HTTP port, the CONNECT to 443 (the only port Squid tunnels to).
        op = startOperator(stack.netns, dir, providers, [
          '--provisioning-poll',
          '2s',
          '--probe-interval',
          '5s',
          '--probe-listen',
          `${CLOUD_NETWORK.gateway}:8080`,
          '--probe-tls-listen',
          `${CLOUD_NETWORK.gateway}:443`,
        ]);
      });

      afterEach(async (ctx) => {
        if (ctx.task.result?.state !== 'fail') return;
        const base = process.env.PROXY_OP_ARTIFACTS ?? join(tmpdir(), 'proxy-op-vm-e2e-artifacts');
        const out = join(base, `${type}-${new Date().toISOString().replace(/[:.]/g, '-')}`);
        await mkdir(out, { recursive: true });
        for (const name of names) {
          await writeFile(join(out, `${name}-console.log`), await stack.consoleLog(name));
          for (const f of ['cloud-init.log', 'cloud-init-output.log']) {
            const text = await stack.guestFile(name, `/var/log/${f}`);
            if (text !== undefined) await writeFile(join(out, `${name}-${f}`), text);
          }
        }
        await writeFile(join(out, 'operator.log'), op?.log() ?? '');
        await writeFile(join(out, 'operator-lines.json'), JSON.stringify(op?.lines ?? [], null, 2));
        await copyFile(stack.daemon.logFile, join(out, 'libvirtd.log')).catch(() => {});
        console.error(`${type}: artifacts of "${ctx.task.name}" kept in ${out}`);
      });

      afterAll(async () => {
        if (timings.length > 0) console.log(`${type} timings\n${timings.join('\n')}`);
        await op?.stop();
        await stack?.stop();
      });

      /**
       * Watches a boot from the manifest write (`start`) to Ready and Squid serving, and
       * records the timings; a replacement names the instance it replaces.
       */
      const watchBoot = async (title: string, start: number, replaces?: typeof current) => {
        const tl = new Timeline(`${type} ${title}, from the manifest write`, start);
        let name: string | undefined;
        let uuid = '';
        let ip = '';
        const status = () => op.status(NAME);
        const fresh = (s: ProxyStatus | undefined) =>
          s !== undefined && s.specHash !== replaces?.specHash && s.phase !== 'Replacing';
        const milestones: Milestone[] = [
          {
            name: 'domain running',
            check: async () => {
              const s = await status();
              name = domainOf(s);
              if (name === undefined || !fresh(s)) return false;
              uuid = (await stack.virsh(['domuuid', name])).trim();
              if (uuid === replaces?.uuid) return false;
              names.add(name);
              return (await stack.virsh(['domstate', name])).trim() === 'running';
            },
          },
          {
            name: 'Running (address reported)',
            check: async () => {
              const s = await status();
              // Ready implies it (a status read between two checks can show Ready first).
              const running = s?.instanceState === 'Running' || s?.phase === 'Ready';
              return tl.at('domain running') !== undefined && fresh(s) && running;
            },
          },
          {
            name: 'cloud-init done',
            check: async () =>
              tl.at('domain running') !== undefined &&
              FINISHED.test(await stack.consoleLog(name ?? '')),
          },
          {
            // Served with our configuration: cloud-init has written it and restarted Squid.
            name: 'Squid serving',
            check: async () => {
              if (tl.at('cloud-init done') === undefined || name === undefined) return false;
              ip = (await guestAddresses(stack, name))[0] ?? '';
              if (ip === '') return false;
              const proxy = withCredential(await credentialOf(dir), ip);
              const a = await stack.request(proxy, stack.origin.url('/probe'));
              return a.status === 200 && a.body.includes('"origin":true');
            },
          },
          {
            name: 'Ready',
            check: async () => {
              const s = await status();
              return fresh(s) && s?.phase === 'Ready' && s.endpoint !== undefined;
            },
          },
        ];
        await tl.watch(milestones, BOOT_BUDGET_MS);
        timings.push(tl.report());
        console.log(tl.report());
        const s = (await status()) as ProxyStatus;
        return { name: name as string, uuid, ip, specHash: s.specHash as string, status: s };
      };

      it('the Proxy becomes Ready: real cloud-init applies our user-data and Squid serves our configuration', async () => {
        const start = Date.now();
        await writeFile(join(dir, `${NAME}.yaml`), manifest([ALLOWED]));
        const boot = await watchBoot('first boot (the image upload included)', start);
        current = boot;
        // The address the operator serves is the one the guest agent reports, from dnsmasq's range.
        expect(boot.status.ip).toBe(boot.ip);
        // Ready through the data plane: the probe's target saw the guest as the client.
        expect(boot.status.egressIP).toBe(boot.ip);
        expect(boot.status.endpoint).toBe(`http://${boot.ip}:${PORT}`);
        expect(boot.ip.startsWith('192.168.150.')).toBe(true);
        expect(await stack.volumes()).toEqual(
          expect.arrayContaining([`${boot.name}.qcow2`, `${boot.name}-seed.iso`]),
        );
        // cloud-init found our seed, ran without an error, and got our user-data byte for byte.
        const result = JSON.parse(
          (await stack.guestFile(boot.name, '/run/cloud-init/result.json'))?.toString() ?? '{}',
        ) as { v1?: { datasource?: string; errors?: unknown[] } };
        expect(result.v1?.datasource).toMatch(/^DataSourceNoCloud/);
        expect(result.v1?.errors).toEqual([]);
        const spec = { port: PORT, allowedSources: [ALLOWED], egress: { allow: [EGRESS_ALLOW] } };
        // The policy the proxy got: the spec's, with the operator's probe target allowed on top.
        const egress = {
          allow: [EGRESS_ALLOW, `${CLOUD_NETWORK.gateway}:8080`, `${CLOUD_NETWORK.gateway}:443`],
        };
        const realm = 'proxy-op default/web';
        // The password file cloud-init wrote for Squid: the credential's SHA-512-crypt line alone,
        // of 1000 rounds (a generated password), which the guest's Squid then accepts.
        const cred = await credentialOf(dir);
        const passwd = (await stack.guestFile(boot.name, '/etc/squid/passwd'))?.toString() ?? '';
        expect(passwd).toMatch(
          new RegExp(
            `^${cred.username}:\\$6\\$rounds=1000\\$[./0-9A-Za-z]{16}\\$[./0-9A-Za-z]{86}\n$`,
          ),
        );
        expect(passwd).not.toContain(cred.password);
        const userData = (
          await stack.guestFile(boot.name, '/var/lib/cloud/instance/user-data.txt')
        )?.toString();
        expect(userData).toBe(
          renderCloudInit(spec, { realm, passwordFile: new TextEncoder().encode(passwd) }, egress),
        );
        expect(userData).not.toContain(cred.password);
        expect(
          (await stack.guestFile(boot.name, '/etc/squid/conf.d/proxy-op.conf'))?.toString(),
        ).toBe(renderSquidConfig(spec, { realm }, egress));
      });

      it('a client with the credential reaches the origin, which sees the guest; without it, 407', async () => {
        const bare = `http://${current?.ip}:${PORT}`;
        const before = stack.origin.requests().length;
        const refused = await stack.request(bare, stack.origin.url('/no-credential'));
        expect(refused.status).toBe(407);
        expect(refused.headers['proxy-authenticate']).toBe('Basic realm="proxy-op default/web"');
        const wrong = await stack.request(
          withCredential({ ...(await credentialOf(dir)), password: 'wrong' }, current?.ip ?? ''),
          stack.origin.url('/wrong-credential'),
        );
        expect(wrong.status).toBe(407);
        expect((await stack.connect(bare, `${CLOUD_NETWORK.gateway}:443`)).status).toBe(407);
        expect(stack.origin.requests().length).toBe(before);
        const proxy = withCredential(await credentialOf(dir), current?.ip ?? '');
        const a = await stack.request(proxy, stack.origin.url('/hello?secret=1'));
        expect(a.status).toBe(200);
        const seen = JSON.parse(a.body) as {
          url: string;
          remoteAddress: string;
          via?: string;
          forwardedFor?: string;
        };
        expect(seen.url).toBe('/hello?secret=1');
        expect(seen.remoteAddress).toBe(current?.ip);
        expect(seen.via).toMatch(/squid/);
        expect(seen.forwardedFor).toBe(CLOUD_NETWORK.gateway);
        // CONNECT goes to 443 only.
        expect(
          (await stack.connect(proxy, `${CLOUD_NETWORK.gateway}:${stack.origin.port}`)).status,
        ).toBe(403);
      });

      it('a client outside allowedSources gets 403, even with the credential, for HTTP and CONNECT, and never reaches the origin', async () => {
        const proxy = withCredential(await credentialOf(dir), current?.ip ?? '');
        const before = stack.origin.requests().length;
        const a = await stack.request(proxy, stack.origin.url('/outsider'), OUTSIDER);
        expect(a.status).toBe(403);
        expect(a.headers['x-squid-error']).toMatch(/^ERR_ACCESS_DENIED/);
        expect((await stack.connect(proxy, `${CLOUD_NETWORK.gateway}:443`, OUTSIDER)).status).toBe(
          403,
        );
        expect(stack.origin.requests().length).toBe(before);
      });

      it('the cloud metadata address and link-local destinations are refused, from an allowed client with the credential', async () => {
        const proxy = withCredential(await credentialOf(dir), current?.ip ?? '');
        for (const url of [
          'http://169.254.169.254/latest/meta-data/',
          'http://169.254.1.1/',
          'http://[fe80::1]/',
        ]) {
          const a = await stack.request(proxy, url);
          expect([url, a.status]).toEqual([url, 403]);
          expect(a.headers['x-squid-error']).toMatch(/^ERR_ACCESS_DENIED/);
        }
        expect((await stack.connect(proxy, '169.254.169.254:443')).status).toBe(403);
      });

      // One provider is enough for the guest side (both run the same engine): the rotation takes
      // the overlap and Squid's credential TTL, about a minute and a half.
      if (type === 'kvm2') {
        it('the rotate annotation rotates the credential in place, through the guest agent: a client that follows the kept credential never fails, the old one gets 407 after the overlap', async () => {
          const now = current as NonNullable<typeof current>;
          const old = await credentialOf(dir);
          const started = Date.now();
          const failures: string[] = [];
          let served = 0;
          let stop = false;
          const loop = (async () => {
            while (!stop) {
              const c = await credentialOf(dir);
              const a = await stack.request(withCredential(c, now.ip), stack.origin.url('/loop'));
              if (a.status === 200) served++;
              else failures.push(`${a.status} for ${c.username} at ${Date.now() - started} ms`);
              await new Promise((r) => setTimeout(r, 100));
            }
          })();
          const until = async (what: string, cond: () => Promise<boolean>, ms: number) => {
            const end = Date.now() + ms;
            while (!(await cond())) {
              if (Date.now() > end) throw new Error(`${type}: ${what} not within ${ms} ms`);
              await new Promise((r) => setTimeout(r, 500));
            }
            return Date.now() - started;
          };
          const through = async (c: { username: string; password: string }) =>
            (await stack.request(withCredential(c, now.ip), stack.origin.url('/rotation'))).status;
          try {
            await writeFile(join(dir, `${NAME}.yaml`), manifest([ALLOWED], '1'));
            const handedOut = await until(
              'the new credential handed out',
              async () => (await credentialOf(dir)).username !== old.username,
              120_000,
            );
            const fresh = await credentialOf(dir);
            // Inside the overlap: both let in, the guest's file holds both lines.
            expect(await through(fresh)).toBe(200);
            expect(await through(old)).toBe(200);
            const both = (await stack.guestFile(now.name, '/etc/squid/passwd'))?.toString() ?? '';
            expect(
              both
                .split('\n')
                .filter(Boolean)
                .map((l) => l.split(':')[0]),
            ).toEqual(expect.arrayContaining([old.username, fresh.username]));
            const ended = await until(
              'the old credential refused',
              async () => (await through(old)) === 407,
              60_000 + SQUID_CREDENTIALS_TTL_MS + 60_000,
            );
            stop = true;
            await loop;
            timings.push(
              `${type} rotation: new credential handed out ${(handedOut / 1000).toFixed(1)} s after the annotation, the old one refused at ${(ended / 1000).toFixed(1)} s (overlap ${OVERLAP}, Squid credentialsttl ${SQUID_CREDENTIALS_TTL_MS / 1000} s); ${served} requests through it meanwhile`,
            );
            expect(failures).toEqual([]);
            expect(served).toBeGreaterThan(20);
            expect(await through(fresh)).toBe(200);
            const after = (await stack.guestFile(now.name, '/etc/squid/passwd'))?.toString() ?? '';
            expect(after).toMatch(new RegExp(`^${fresh.username}:\\$6\\$rounds=1000\\$`));
            expect(after.trim().split('\n')).toHaveLength(1);
            // In place: the same domain, nothing replaced.
            expect(await stack.domains()).toEqual([now.name]);
            expect((await stack.virsh(['domuuid', now.name])).trim()).toBe(now.uuid);
            expect((await op.status(NAME))?.specHash).toBe(now.specHash);
          } finally {
            stop = true;
            await loop;
          }
        });
      }

      it('a spec change replaces the VM, and the new one serves the new spec', async () => {
        const old = current as NonNullable<typeof current>;
        const start = Date.now();
        await writeFile(join(dir, `${NAME}.yaml`), manifest([ALLOWED, `${OUTSIDER}/32`]));
        const boot = await watchBoot('replacement', start, old);
        current = boot;
        expect(boot.uuid).not.toBe(old.uuid);
        expect(boot.specHash).not.toBe(old.specHash);
        expect(await stack.domains()).toEqual([boot.name]);
        const a = await stack.request(
          withCredential(await credentialOf(dir), boot.ip),
          stack.origin.url('/now-allowed'),
          OUTSIDER,
        );
        expect(a.status).toBe(200);
      });

      it('delete leaves no domain, volume or seed behind', async () => {
        const name = current?.name as string;
        const start = Date.now();
        await rm(join(dir, `${NAME}.yaml`));
        const tl = new Timeline(`${type} delete`, start);
        await tl.watch(
          [
            { name: 'gone from the state', check: async () => !(await op.has(NAME)) },
            { name: 'no domain', check: async () => (await stack.domains()).length === 0 },
          ],
          DELETE_BUDGET_MS,
        );
        timings.push(tl.report());
        const left = await stack.volumes();
        expect(left.filter((v) => !v.startsWith('proxy-op-image-'))).toEqual([]);
        expect(left).not.toContain(`${name}.qcow2`);
        expect(left).not.toContain(`${name}-seed.iso`);
      });
    },
  );
}
