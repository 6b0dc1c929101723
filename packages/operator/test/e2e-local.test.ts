import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { type AddressInfo, connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { fileURLToPath } from 'node:url';
import {
  describeWithPeers,
  openTunnel,
  requestThroughProxy,
  selfSignedCert,
} from '@proxy-op/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseDocument } from 'yaml';
import { runCli, spawnCli } from './cli-support.js';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const EXAMPLE = join(REPO, 'examples', 'standalone');

/** The `npx proxy-op <command> ...` lines of the root README, by command, as argument lists. */
async function readmeCommands(): Promise<Map<string, string[]>> {
  const text = await readFile(join(REPO, 'README.md'), 'utf8');
  const commands = new Map<string, string[]>();
  for (const m of text.matchAll(/^npx proxy-op (\S+)(.*)$/gm)) {
    const [, command = '', rest = ''] = m;
    commands.set(command, [
      command,
      ...rest
        .trim()
        .split(/\s+/)
        .filter((a) => a !== ''),
    ]);
  }
  return commands;
}

/** Whether `pid` is a live process (a zombie is not). */
async function alive(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  if (!existsSync('/proc/self/stat')) return true;
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
    if (state === 'Z' || state === 'X') return false;
    // A pid another program has taken since is not the proxy: pids come round again.
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8');
    return cmdline === '' || cmdline.includes('proxy-server');
  } catch {
    return false;
  }
}

/** The local provider's instance files: name -> pid, for every `<name>.json`. */
async function instances(stateDir: string): Promise<Map<string, number | undefined>> {
  const out = new Map<string, number | undefined>();
  const files = await readdir(stateDir).catch(() => [] as string[]);
  for (const f of files.filter((n) => n.endsWith('.json'))) {
    const rec = JSON.parse(await readFile(join(stateDir, f), 'utf8')) as { pid?: number };
    out.set(f.slice(0, -'.json'.length), rec.pid);
  }
  return out;
}

interface Endpoint {
  readonly address: string;
  readonly port: number;
}

function endpointOf(url: string): Endpoint {
  const u = new URL(url);
  return { address: u.hostname, port: Number(u.port) };
}

/** An absolute-URI request through the proxy; resolves with the status and body. */
function viaProxy(
  proxy: Endpoint,
  url: string,
  localAddress: string,
  proxyAuthorization?: string,
): Promise<{ status: number; body: string }> {
  return requestThroughProxy(proxy, url, { localAddress, proxyAuthorization });
}

/** An HTTPS GET over an open tunnel, the certificate checked against `ca`. */
function httpsOverTunnel(socket: Socket, ca: string, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const tls = tlsConnect({ socket, ca, host: '127.0.0.1' }, () => {
      tls.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
    });
    let out = '';
    tls.setEncoding('utf8');
    tls.on('data', (d: string) => {
      out += d;
    });
    tls.on('end', () => resolve(out));
    tls.on('error', reject);
  });
}

/** Whether a TCP connection to `e` is refused (nothing listens any more). */
function refusesConnections(e: Endpoint): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: e.address, port: e.port });
    s.once('connect', () => {
      s.destroy();
      resolve(false);
    });
    s.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ECONNREFUSED'));
  });
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
  });
}

const REFUSED_SOURCE = '127.0.0.77';

describe('examples/standalone', () => {
  it('is valid as the README says (its providers file and both manifests)', async () => {
    const r = await runCli(
      [
        'validate',
        '--providers',
        'examples/standalone/providers.yaml',
        '--standalone',
        'examples/standalone/proxies',
      ],
      {},
      20_000,
      REPO,
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('ok (installation default, 1 providers)');
    expect(r.stdout).toContain('ok (2 Proxies)');
  }, 30_000);
});

describeWithPeers(
  { describe, it },
  "the README's main job, end to end, with the local provider",
  ['openssl'],
  () => {
    let root = '';
    let commands = new Map<string, string[]>();
    let stateDir = '';
    let stateFile = '';
    let ca = '';
    const servers: Server[] = [];
    let originPort = 0;
    let tlsPort = 0;
    const pids = new Set<number>();
    let op: ReturnType<typeof spawnCli> | undefined;
    const endpoints = new Map<string, Endpoint>();
    const instanceOf = new Map<string, string>();
    /** Each Proxy's `Proxy-Authorization`, from the URL `proxy-op url` printed. */
    const authOf = new Map<string, string>();

    beforeAll(async () => {
      commands = await readmeCommands();
      root = await mkdtemp(join(tmpdir(), 'proxy-op-e2e-'));
      const tls = await selfSignedCert();
      ca = tls.cert;
      const origin = createHttpServer((req, res) => {
        res.end(`origin ${req.method} ${req.url} via ${req.headers.via ?? '-'}`);
      });
      const secure = createHttpsServer({ key: tls.key, cert: tls.cert }, (req, res) => {
        res.end(`secure ${req.method} ${req.url}`);
      });
      servers.push(origin, secure);
      originPort = await listen(origin);
      tlsPort = await listen(secure);
      // The example, copied into a fresh "repository root" (its manifests and providers file only).
      const copy = join(root, 'examples', 'standalone');
      await mkdir(join(copy, 'proxies'), { recursive: true });
      await copyFile(join(EXAMPLE, 'providers.yaml'), join(copy, 'providers.yaml'));
      for (const f of await readdir(join(EXAMPLE, 'proxies'))) {
        if (f.endsWith('.yaml'))
          await copyFile(join(EXAMPLE, 'proxies', f), join(copy, 'proxies', f));
      }
      // `api` serves 127.0.0.1 alone, whatever the example says; both reach this test's origins,
      // on loopback, which their destination policies refuse unless allowed.
      const allow = [`127.0.0.1:${originPort}`, `127.0.0.1:${tlsPort}`];
      for (const name of ['api', 'web']) {
        const doc = parseDocument(await readFile(join(copy, 'proxies', `${name}.yaml`), 'utf8'));
        if (name === 'api') doc.setIn(['spec', 'allowedSources'], ['127.0.0.1/32']);
        doc.setIn(['spec', 'egress'], { allow });
        await writeFile(join(copy, 'proxies', `${name}.yaml`), doc.toString());
      }
      stateFile = join(copy, 'proxies.state.json');
      stateDir = join(copy, 'proxies.state.local');
    }, 60_000);

    afterAll(async () => {
      if (op !== undefined) {
        op.kill('SIGKILL');
        await op.exit;
      }
      for (const pid of (await instances(stateDir)).values()) if (pid !== undefined) pids.add(pid);
      for (const pid of pids) {
        if (await alive(pid)) process.kill(pid, 'SIGKILL');
      }
      for (const s of servers) s.close();
      if (root !== '') await rm(root, { recursive: true, force: true });
    }, 60_000);

    it('the README names the run, status and down commands on examples/standalone', () => {
      expect(commands.get('run')).toEqual(['run', '--standalone', 'examples/standalone/proxies']);
      expect(commands.get('status')?.slice(1)).toEqual(commands.get('run')?.slice(1));
      expect(commands.get('down')?.slice(1)).toEqual(commands.get('run')?.slice(1));
    });

    it("the README's run command takes both Proxies to Ready with the built-in local provider", async () => {
      const run = commands.get('run') ?? [];
      // The README's arguments, then what a test needs: no metrics port, JSON lines on stdout.
      op = spawnCli([...run, '--listen', 'off', '--output', 'json'], {}, root);
      const msg = await op.waitForLog(
        (l) => (String(l.msg).includes('using the built-in "local" provider') ? l : undefined),
        20_000,
      );
      expect(msg.block).toEqual({ stateDir });
      for (const name of ['web', 'api']) {
        const line = await op.waitForStdout(
          (l) => (l.proxy === `default/${name}` && l.phase === 'Ready' ? l : undefined),
          30_000,
        );
        expect(line.provider).toBe('local');
        expect(line.endpoint).toMatch(/^http:\/\/127\.0\.0\.\d+:\d+$/);
        // Ready means a probe through the proxy passed; the target saw the proxy's own address.
        expect(line.probe).toBe('ok');
        expect(line.egressIP).toBe(new URL(String(line.endpoint)).hostname);
        endpoints.set(name, endpointOf(String(line.endpoint)));
        instanceOf.set(name, String(line.providerID).replace(/^processes\//, ''));
      }
      expect(endpoints.get('web')?.port).toBe(3128);
      expect(endpoints.get('api')?.port).toBe(8080);
      expect(endpoints.get('web')?.address).not.toBe(endpoints.get('api')?.address);

      // Each proxy is a live process whose marks are in the private state folder.
      const found = await instances(stateDir);
      for (const name of ['web', 'api']) {
        const pid = found.get(instanceOf.get(name) ?? '');
        expect(pid).toBeTypeOf('number');
        pids.add(pid as number);
        expect(await alive(pid as number)).toBe(true);
        const rec = JSON.parse(
          await readFile(join(stateDir, `${instanceOf.get(name)}.json`), 'utf8'),
        ) as { marks: Record<string, string> };
        expect(Object.keys(rec.marks).length).toBeGreaterThan(0);
      }

      // The README's status command shows the same endpoints.
      const status = await runCli(commands.get('status') ?? [], {}, 20_000, root);
      expect(status.code).toBe(0);
      for (const [name, e] of endpoints) {
        expect(status.stdout).toMatch(
          new RegExp(
            `default\\s+${name}\\s+local\\s+Ready\\s+http://${e.address}:${e.port}\\s+${e.address}\\s+ok \\d+ms\\s`,
          ),
        );
      }
      // One probe now, step by step, as the README shows it.
      expect(commands.get('probe')).toEqual([
        'probe',
        'web',
        ...(commands.get('status') ?? []).slice(1),
      ]);
      const probed = await runCli(commands.get('probe') ?? [], {}, 20_000, root);
      expect(probed.code, probed.stderr).toBe(0);
      expect(probed.stdout).toMatch(/^get\s+status\s+ok\s+[\d.]+\s+the proxy answered 200 OK$/m);
      expect(probed.stdout).toMatch(/^connect\s+tunnel\s+ok\s/m);
      expect(probed.stdout).toContain(`the target saw ${endpoints.get('web')?.address}`);
      expect(probed.stdout).toMatch(
        /^auth\s+auth\s+ok\s+[\d.]+\s+a request without credentials was refused with 407$/m,
      );
      expect(status.stdout).toMatch(/local\s+local\s+yes\s+state-dir:Reachable/);
      // The README's url command prints each Proxy's URL with its credential; nothing else does.
      expect(commands.get('url')).toEqual([
        'url',
        'web',
        ...(commands.get('status') ?? []).slice(1),
      ]);
      for (const [name, e] of endpoints) {
        const printed = await runCli(
          ['url', name, ...(commands.get('status') ?? []).slice(1)],
          {},
          20_000,
          root,
        );
        expect(printed.code, printed.stderr).toBe(0);
        const u = new URL(printed.stdout.trim());
        expect(`${u.hostname}:${u.port}`).toBe(`${e.address}:${e.port}`);
        const user = decodeURIComponent(u.username);
        const password = decodeURIComponent(u.password);
        expect(password.length).toBeGreaterThanOrEqual(32);
        authOf.set(name, `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`);
        expect(status.stdout).not.toContain(password);
        expect(JSON.stringify([op?.logs, op?.out])).not.toContain(password);
        // The credential file is the operator's alone.
        const file = join(
          root,
          'examples',
          'standalone',
          'proxies.state.credentials.d',
          `default.${name}.json`,
        );
        expect((await stat(file)).mode & 0o777).toBe(0o600);
      }
    }, 90_000);

    it('forwards HTTP and HTTPS over CONNECT from an allowed source with the credential, 407 without', async () => {
      for (const name of ['web', 'api']) {
        const proxy = endpoints.get(name) as Endpoint;
        const auth = authOf.get(name);
        const without = await viaProxy(proxy, `http://127.0.0.1:${originPort}/hello`, '127.0.0.1');
        expect(without.status).toBe(407);
        const plain = await viaProxy(
          proxy,
          `http://127.0.0.1:${originPort}/hello`,
          '127.0.0.1',
          auth,
        );
        expect(plain).toEqual({ status: 200, body: 'origin GET /hello via 1.1 proxy-op' });
        const t = await openTunnel(proxy, `127.0.0.1:${tlsPort}`, {
          localAddress: '127.0.0.1',
          proxyAuthorization: auth,
        });
        expect(t.status).toBe(200);
        const secure = await httpsOverTunnel(t.socket, ca, `/secret-${name}`);
        expect(secure).toMatch(/^HTTP\/1\.1 200/);
        expect(secure).toContain(`secure GET /secret-${name}`);
      }
    }, 30_000);

    it('refuses a source outside allowedSources, for HTTP and CONNECT', async () => {
      const api = endpoints.get('api') as Endpoint;
      // Even with the right credential: both the source and the credential must hold.
      const auth = authOf.get('api');
      // A source the proxy does not allow is closed at once, before any byte is read.
      await expect(
        viaProxy(api, `http://127.0.0.1:${originPort}/`, REFUSED_SOURCE, auth),
      ).rejects.toMatchObject({ code: 'ECONNRESET' });
      await expect(
        openTunnel(api, `127.0.0.1:${tlsPort}`, {
          localAddress: REFUSED_SOURCE,
          proxyAuthorization: auth,
        }),
      ).rejects.toMatchObject({ code: 'ECONNRESET' });
      // The same source is fine for `web`, whose allowedSources is 127.0.0.0/8.
      const web = endpoints.get('web') as Endpoint;
      const ok = await viaProxy(
        web,
        `http://127.0.0.1:${originPort}/`,
        REFUSED_SOURCE,
        authOf.get('web'),
      );
      expect(ok.status).toBe(200);
    }, 30_000);

    it('deleting a manifest stops its proxy, removes its marks, and the state forgets it', async () => {
      const web = instanceOf.get('web') as string;
      const webPid = (await instances(stateDir)).get(web) as number;
      await rm(join(root, 'examples', 'standalone', 'proxies', 'web.yaml'));
      await op?.waitForStdout(
        (l) => (l.proxy === 'default/web' && l.phase === 'Deleted' ? l : undefined),
        30_000,
      );
      expect(await alive(webPid)).toBe(false);
      const left = await readdir(stateDir);
      expect(left.filter((f) => f.startsWith(web))).toEqual([]);
      expect(left).toContain(`${instanceOf.get('api')}.json`);
      expect(await refusesConnections(endpoints.get('web') as Endpoint)).toBe(true);
      // Status writes are coalesced: the state file follows within moments.
      type State = { proxies: Record<string, { status: { phase?: string } }> };
      let state = JSON.parse(await readFile(stateFile, 'utf8')) as State;
      for (let i = 0; i < 100 && 'default/web' in state.proxies; i++) {
        await new Promise((r) => setTimeout(r, 50));
        state = JSON.parse(await readFile(stateFile, 'utf8')) as State;
      }
      expect(Object.keys(state.proxies)).toEqual(['default/api']);
      expect(state.proxies['default/api']?.status.phase).toBe('Ready');
    }, 60_000);

    it('SIGTERM stops the operator cleanly; the proxy left outlives it until down deletes it', async () => {
      const running = op as ReturnType<typeof spawnCli>;
      running.kill('SIGTERM');
      const exit = await running.exit;
      op = undefined;
      expect(exit).toEqual({ code: 0, signal: null });
      await running.waitForLog((l) => (l.msg === 'proxy-op stopped' ? l : undefined), 1_000);
      expect(existsSync(`${stateFile}.lock`)).toBe(false);
      // The documented standalone behaviour: proxies outlive the operator (only deleted ones stop).
      const apiPid = (await instances(stateDir)).get(instanceOf.get('api') as string) as number;
      expect(await alive(apiPid)).toBe(true);
      for (const pid of pids) {
        if (pid !== apiPid) expect(await alive(pid)).toBe(false);
      }

      // The README's down command deletes what is left and empties the state.
      const down = await runCli(commands.get('down') ?? [], {}, 60_000, root);
      expect(down.code).toBe(0);
      expect(await alive(apiPid)).toBe(false);
      expect((await instances(stateDir)).size).toBe(0);
      const state = JSON.parse(await readFile(stateFile, 'utf8')) as { proxies: object };
      expect(state.proxies).toEqual({});
      for (const pid of pids) expect(await alive(pid)).toBe(false);
      // The manifest that was kept is still there for the next run.
      expect(await readdir(join(root, 'examples', 'standalone', 'proxies'))).toEqual(['api.yaml']);
    }, 90_000);
  },
);
