// Peer: none but Node's own HTTP client on loopback: the status page's server over a memory
// store whose statuses the test writes (its headers, methods, Host check, the event stream's
// format and bounds, what it sends and never sends) and the built bundle's weight.
import { readdir, readFile } from 'node:fs/promises';
import { request } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { runProcess } from '@proxy-op/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import type { ProxyStatus } from '../src/api/proxy.js';
import { DEFAULTS, type Settings } from '../src/defaults.js';
import { EventLog } from '../src/page/events.js';
import {
  allowedHost,
  CONTENT_SECURITY_POLICY,
  type StatusPage,
  startStatusPage,
} from '../src/page/server.js';
import { withoutCredentials } from '../src/page/snapshot.js';
import type { PagePatch, PageState, ProxyDetail } from '../src/page/wire.js';
import { MemoryStore } from '../src/store/proxies.js';
import { readStream, until } from './page-support.js';
import { spec } from './support.js';

const BUNDLE = fileURLToPath(new URL('../dist/status-page/', import.meta.url));

let page: StatusPage | undefined;
afterEach(async () => {
  await page?.close();
  page = undefined;
});

async function start(store: MemoryStore, settings: Partial<Settings> = {}) {
  const events = new EventLog({
    statusEventsPerProxy: DEFAULTS.statusEventsPerProxy,
    exists: (k) => store.get(k) !== undefined,
  });
  page = await startStatusPage({
    listen: '127.0.0.1:0',
    role: () => ({ store: 'memory', state: 'leading' }),
    source: { store, events },
    settings: { ...DEFAULTS, statusPushMs: 50, ...settings },
  });
  return { page, events };
}

/** One plain HTTP exchange (any method, any Host). */
function http(
  url: string,
  opts: { method?: string; host?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname + u.search,
        method: opts.method ?? 'GET',
        headers: { ...(opts.host === undefined ? {} : { host: opts.host }), ...opts.headers },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          body += d;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const SENTINEL = 'SENTINEL-c0ffee-never-on-the-page';

describe('the status page server', () => {
  it('serves the page with a strict CSP, nosniff and no framing, on every answer', async () => {
    const { page } = await start(new MemoryStore());
    for (const path of ['', 'api/state', 'nope', 'events?x']) {
      const r =
        path === 'events?x'
          ? await readStream(`${page.url}events`, (m) => m.length > 0)
          : await http(`${page.url}${path}`);
      expect(r.headers['content-security-policy'], path).toBe(CONTENT_SECURITY_POLICY);
      expect(r.headers['x-content-type-options'], path).toBe('nosniff');
      expect(r.headers['x-frame-options'], path).toBe('DENY');
    }
    expect(CONTENT_SECURITY_POLICY).toContain("script-src 'self'");
    expect(CONTENT_SECURITY_POLICY).toContain("style-src 'self'");
    expect(CONTENT_SECURITY_POLICY).not.toContain('unsafe-inline');
    expect(CONTENT_SECURITY_POLICY).not.toContain('unsafe-eval');
    expect(CONTENT_SECURITY_POLICY).toContain("require-trusted-types-for 'script'");
    const html = await http(page.url);
    expect(html.status).toBe(200);
    expect(html.headers['content-type']).toBe('text/html; charset=utf-8');
    // No inline script or style: the page's only script and style sheet are its own files.
    expect(html.body).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html.body).not.toMatch(/<style|\sstyle=/);
    expect(html.body).not.toMatch(/https?:\/\//);
    const [, script] = /<script[^>]*src="\.\/([^"]+)"/.exec(html.body) ?? [];
    const js = await http(`${page.url}${script}`, { headers: { 'accept-encoding': 'gzip' } });
    expect(js.status).toBe(200);
    expect(js.headers['content-encoding']).toBe('gzip');
    expect(js.headers['cache-control']).toContain('immutable');
  });

  it('is read-only: every method but GET and HEAD is 405', async () => {
    const { page } = await start(new MemoryStore());
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']) {
      const r = await http(`${page.url}api/state`, { method });
      expect(r.status, method).toBe(405);
      expect(r.headers.allow).toBe('GET, HEAD');
    }
    expect((await http(page.url, { method: 'HEAD' })).status).toBe(200);
  });

  it('answers only to loopback names and addresses (no DNS rebinding)', async () => {
    const { page } = await start(new MemoryStore());
    expect((await http(page.url, { host: 'evil.example:9465' })).status).toBe(403);
    expect((await http(page.url, { host: 'localhost:9465' })).status).toBe(200);
    for (const h of ['127.0.0.1:1', '[::1]:9465', 'localhost', 'a.localhost:3', '10.1.2.3']) {
      expect(allowedHost(h), h).toBe(true);
    }
    for (const h of ['example.com', 'localhost.example.com', '', undefined, '127.0.0.1.nip.io']) {
      expect(allowedHost(h), String(h)).toBe(false);
    }
  });

  it('streams a snapshot, then one patch per change, and the detail reads from memory', async () => {
    const store = new MemoryStore();
    store.apply('default', 'web', spec({ provider: 'lab' }));
    const { page, events } = await start(store);
    events.record('default/web', 'Normal', 'Created', 'instance proxy-default-web created');
    const changes = (async () => {
      await new Promise((r) => setTimeout(r, 200));
      await store.updateStatus('default/web', { phase: 'Provisioning' });
      await new Promise((r) => setTimeout(r, 200));
      await store.updateStatus('default/web', {
        phase: 'Ready',
        endpoint: 'http://10.0.0.10:3128',
        providerID: 'vms/web',
      });
      store.apply('default', 'db', spec({ provider: 'lab' }));
      await new Promise((r) => setTimeout(r, 200));
      store.delete('default/db');
    })();
    const { messages, headers } = await readStream(`${page.url}events`, (m) =>
      m.some((x) => x.event === 'patch' && x.data.includes('"remove"')),
    );
    await changes;
    expect(headers['content-type']).toBe('text/event-stream; charset=utf-8');
    const [first, ...rest] = messages;
    expect(first?.event).toBe('snapshot');
    const snap = JSON.parse(first?.data ?? '{}') as PageState;
    expect(snap.proxies.map((p) => [p.key, p.phase])).toEqual([['default/web', 'Pending']]);
    expect(snap.providers.map((p) => [p.name, p.configured])).toEqual([['lab', false]]);
    const patches = rest.map((m) => JSON.parse(m.data) as PagePatch);
    const phases = patches
      .flatMap((p) => p.upsert?.proxies ?? [])
      .map((r) => `${r.key} ${r.phase}`);
    expect(phases).toEqual(['default/web Provisioning', 'default/web Ready', 'default/db Pending']);
    expect(patches.at(-1)?.remove?.proxies).toEqual(['default/db']);
    const detail = JSON.parse(
      (await http(`${page.url}api/proxies/default/web`)).body,
    ) as ProxyDetail;
    expect(detail.instance.providerID).toBe('vms/web');
    expect(detail.events.map((e) => e.reason)).toEqual(['Created']);
    expect((await http(`${page.url}api/proxies/default/nope`)).status).toBe(404);
    expect((await http(`${page.url}api/proxies/default/%E0%A4%A`)).status).toBe(400);
  });

  it('does nothing while no viewer is connected, and remembers nothing', async () => {
    const store = new MemoryStore();
    store.apply('default', 'web', spec({ provider: 'lab' }));
    let lists = 0;
    const list = store.list.bind(store);
    store.list = () => {
      lists++;
      return list();
    };
    const { page } = await start(store);
    await new Promise((r) => setTimeout(r, 300));
    expect(lists).toBe(0);
    await readStream(`${page.url}events`, (m) => m.length > 0);
    await until(() => page.stats().viewers === 0, 5000);
    const after = lists;
    await new Promise((r) => setTimeout(r, 300));
    expect(lists).toBe(after);
  });

  it('serves every viewer the same patches; a viewer that does not read is cut off at the bound', async () => {
    const store = new MemoryStore();
    for (let i = 0; i < 200; i++) store.apply('default', `p-${i}`, spec({ provider: 'lab' }));
    const { page } = await start(store, { statusClientBufferBytes: 64 * 1024 });
    // A viewer that never reads: its socket's buffers fill, then the server's.
    const stalled = request(`${page.url}events`);
    stalled.on('response', (res) => res.pause());
    stalled.on('error', () => {});
    stalled.end();
    // Rounds of changes go on until the stalled viewer is cut off; then one last round, which
    // the reading viewer must get (it was not cut off: it reads, however slowly).
    let n = 0;
    let final = Number.POSITIVE_INFINITY;
    const reader = readStream(
      `${page.url}events`,
      (m) => m.some((x) => x.event === 'patch' && x.data.includes(`round ${final} `)),
      60_000,
    );
    const churn = setInterval(() => {
      n++;
      if (page.stats().dropped >= 1 || n >= 2000) {
        clearInterval(churn);
        final = n;
      }
      for (const p of store.list()) {
        void store.updateStatus(`default/${p.metadata.name}`, {
          phase: n % 2 === 0 ? 'Ready' : 'Provisioning',
          lastError: { class: 'Transient', message: `round ${n} ${'x'.repeat(1000)}` },
        });
      }
    }, 50);
    const { messages } = await reader;
    clearInterval(churn);
    stalled.destroy();
    expect(page.stats().dropped).toBe(1);
    const last = messages.findLast((m) => m.event === 'patch');
    expect(last?.data).toContain(`round ${final} `);
  });

  it('caps the event streams one address holds, so one client cannot lock every viewer out', async () => {
    const { page } = await start(new MemoryStore(), {
      statusStreamsPerSource: 2,
      statusMaxViewers: 3,
    });
    const open: Array<() => void> = [];
    /** Opens a stream from `from` (a loopback address of its own); resolves with its status. */
    const stream = (from: string) =>
      new Promise<number>((resolve, reject) => {
        const u = new URL(`${page.url}events`);
        const req = request(
          { host: u.hostname, port: u.port, path: u.pathname, localAddress: from },
          (res) => {
            open.push(() => req.destroy());
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('error', reject);
        req.end();
      });
    try {
      expect(await stream('127.0.0.1')).toBe(200);
      expect(await stream('127.0.0.1')).toBe(200);
      // A third from the same address is refused; another address still gets in.
      expect(await stream('127.0.0.1')).toBe(429);
      expect(await stream('127.0.0.2')).toBe(200);
      // Past the viewers' bound, anyone is refused.
      expect(await stream('127.0.0.3')).toBe(503);
      expect(page.stats().viewers).toBe(3);
      // A stream closed frees its address's place.
      open.shift()?.();
      await until(() => page.stats().viewers === 2, 5000, 'the closed stream gone');
      expect(await stream('127.0.0.1')).toBe(200);
    } finally {
      for (const close of open) close();
    }
  });

  it('never sends credentials: no user info in an endpoint, no cloud-init, not on the page, the stream or the detail', async () => {
    const store = new MemoryStore();
    store.apply(
      'default',
      'web',
      spec({ provider: 'lab', cloudInit: `#cloud-config\npassword: ${SENTINEL}\n` }),
    );
    const status: ProxyStatus = {
      phase: 'Ready',
      endpoint: `http://user:${SENTINEL}@10.0.0.10:3128`,
      ip: '10.0.0.10',
    };
    await store.updateStatus('default/web', status);
    await store.writeHealth({
      name: 'lab',
      status: {
        type: 'memory',
        ready: true,
        targets: [
          {
            target: 'zone-a',
            address: `https://admin:${SENTINEL}@pve.example:8006`,
            ready: true,
            reason: 'Reachable',
            message: 'answered',
            details: { token: SENTINEL },
            lastTransitionTime: new Date().toISOString(),
          },
        ],
      },
    });
    const { page } = await start(store);
    const stream = await readStream(`${page.url}events`, (m) => m.length > 0);
    const bodies = [
      stream.raw,
      (await http(`${page.url}api/state`)).body,
      (await http(`${page.url}api/proxies/default/web`)).body,
      (await http(page.url)).body,
    ];
    for (const f of await readdir(join(BUNDLE, 'assets'))) {
      bodies.push(await readFile(join(BUNDLE, 'assets', f), 'utf8'));
    }
    for (const b of bodies) expect(b).not.toContain(SENTINEL);
    expect(stream.raw).toContain('"endpoint":"http://10.0.0.10:3128"');
    expect(stream.raw).toContain('"address":"https://pve.example:8006"');
    expect(withoutCredentials('http://u:p@h:1/x')).toBe('http://h:1/x');
    expect(withoutCredentials('10.0.0.1')).toBe('10.0.0.1');
  });

  it('the bundled page weighs under 200 KiB gzipped, all of it its own files', async () => {
    const html = await readFile(join(BUNDLE, 'index.html'), 'utf8');
    const refs = [...html.matchAll(/(?:src|href)="\.\/([^"]+)"/g)].map((m) => m[1] as string);
    expect(refs.length).toBe(2);
    let total = gzipSync(html, { level: 9 }).byteLength;
    for (const r of refs)
      total += gzipSync(await readFile(join(BUNDLE, r)), { level: 9 }).byteLength;
    console.log(
      `status page weight: ${(total / 1024).toFixed(1)} KiB gzipped (${refs.join(', ')})`,
    );
    expect(total).toBeLessThan(200 * 1024);
  });

  it('the package ships the bundle, and not the page’s sources', async () => {
    const r = await runProcess('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
      cwd: fileURLToPath(new URL('..', import.meta.url)),
      timeoutMs: 60_000,
    });
    expect(r.code).toBe(0);
    const [info] = JSON.parse(r.stdout) as [{ files: { path: string }[] }];
    const files = info.files.map((f) => f.path);
    expect(files).toContain('dist/status-page/index.html');
    expect(files.filter((f) => /^dist\/status-page\/assets\/.+\.(js|css)$/.test(f))).toHaveLength(
      2,
    );
    expect(files.filter((f) => f.startsWith('web/') || f.startsWith('docs/'))).toEqual([]);
  }, 60_000);
});
