// Peer: the HTTPS fake of the PVE API, probed with raw HTTPS requests and
// raw TLS sockets. Each check states a fact of a real host, from the spec's
// recorded behaviour (F<n>) or the PVE sources (pve-http-server,
// qemu-server, pve-storage, pve-common, pve-manager), so the double is held
// to it; the provider's own tests then run against a double that keeps them.
import { Agent, request as httpsRequest } from 'node:https';
import { connect } from 'node:tls';
import { gunzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { readAnswer } from '../src/answers.js';
import { createProxmoxFixture, type ProxmoxFixture, TOKEN_LINE } from './support/fixture.js';
import { fastTiming, type Timing } from './support/pve-model.js';

const fixtures: ProxmoxFixture[] = [];
const agents: Agent[] = [];
afterEach(async () => {
  for (const a of agents.splice(0)) a.destroy();
  for (const f of fixtures.splice(0)) await f.cleanup?.();
});

async function setup(timing: Partial<Timing> = fastTiming(), idleTimeoutMs?: number) {
  const fx = await createProxmoxFixture(
    {},
    {
      nodes: ['pv1-1', 'pv1-2'],
      timing,
      https: idleTimeoutMs === undefined ? {} : { idleTimeoutMs },
    },
  );
  fixtures.push(fx);
  return fx;
}

interface Raw {
  status: number;
  reason: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  data: unknown;
  errors: Record<string, string> | undefined;
  socket: object;
}

/** One HTTPS request, over `agent` (keep-alive) or a connection of its own. */
function raw(
  fx: ProxmoxFixture,
  method: string,
  path: string,
  opts: {
    token?: string | null;
    body?: string | Buffer;
    headers?: Record<string, string>;
    agent?: Agent;
    form?: Record<string, string>;
  } = {},
): Promise<Raw> {
  const url = new URL(path, fx.fake!.url);
  const body = opts.form === undefined ? opts.body : new URLSearchParams(opts.form).toString();
  const headers: Record<string, string> = {
    ...(body === undefined || opts.headers?.['transfer-encoding'] !== undefined
      ? {}
      : { 'content-length': String(Buffer.byteLength(body)) }),
    ...(opts.form === undefined ? {} : { 'content-type': 'application/x-www-form-urlencoded' }),
    ...(opts.token === null ? {} : { authorization: `PVEAPIToken=${opts.token ?? TOKEN_LINE}` }),
    ...opts.headers,
  };
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      url,
      { method, rejectUnauthorized: false, agent: opts.agent ?? false, headers },
      (res) => {
        const socket = res.socket;
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const buf = Buffer.concat(chunks);
          const text = (
            res.headers['content-encoding'] === 'gzip' ? gunzipSync(buf) : buf
          ).toString('utf8');
          let parsed: { data?: unknown; errors?: Record<string, string> } = {};
          try {
            parsed = JSON.parse(text) as typeof parsed;
          } catch {
            // not JSON
          }
          resolve({
            status: res.statusCode ?? 0,
            reason: res.statusMessage ?? '',
            headers: res.headers,
            body: text,
            data: parsed.data,
            errors: parsed.errors,
            socket,
          });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * Writes bytes on a TLS connection of its own and resolves with what came
 * back before it closed (or `ms` passed since the handshake, which a loaded
 * machine can make slow); with `hangUp`, the client closes its side as soon
 * as the bytes are out.
 */
function tlsRaw(
  fx: ProxmoxFixture,
  bytes: Buffer | string,
  ms = 2_000,
  hangUp = false,
): Promise<string> {
  const port = Number(new URL(fx.fake!.url).port);
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      if (hangUp) s.end(bytes);
      else s.write(bytes);
      setTimeout(() => {
        s.destroy();
      }, ms).unref();
    });
    const chunks: Buffer[] = [];
    s.on('data', (c: Buffer) => chunks.push(c));
    const done = () => resolve(Buffer.concat(chunks).toString('latin1'));
    s.on('close', done);
    s.on('error', () => {});
  });
}

function keepAlive(): Agent {
  const a = new Agent({ keepAlive: true, maxSockets: 1, rejectUnauthorized: false });
  agents.push(a);
  return a;
}

async function waitFor(check: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not met');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('pveproxy', () => {
  it('sends its headers, keeps the connection below 400 and closes it at 400 and above', async () => {
    const fx = await setup();
    const agent = keepAlive();
    const a = await raw(fx, 'GET', '/api2/json/version', { agent });
    expect(a.headers).toMatchObject({
      server: 'pve-api-daemon/3.0',
      'cache-control': 'max-age=0',
      pragma: 'no-cache',
      connection: 'Keep-Alive',
      'content-type': 'application/json;charset=UTF-8',
    });
    expect(a.headers.expires).toBe(a.headers.date);
    expect(a.headers['keep-alive']).toBeUndefined();
    const b = await raw(fx, 'GET', '/api2/json/version', { agent });
    expect(b.socket).toBe(a.socket);
    const c = await raw(fx, 'GET', '/api2/json/nodes/pv1-1/qemu/4242/config', { agent });
    expect([c.status, c.headers.connection]).toEqual([500, 'close']);
    const d = await raw(fx, 'GET', '/api2/json/version', { agent });
    expect(d.socket).not.toBe(a.socket);
    expect(fx.fake!.connections()).toBe(2);
  });

  it('serves at most 100 requests on a connection', async () => {
    const fx = await setup();
    const agent = keepAlive();
    const answers: Raw[] = [];
    for (let i = 0; i < 101; i++)
      answers.push(await raw(fx, 'GET', '/api2/json/version', { agent }));
    expect(answers[98]?.headers.connection).toBe('Keep-Alive');
    expect(answers[99]?.headers.connection).toBe('close');
    expect(fx.fake!.connections()).toBe(2);
  });

  it('closes a connection left idle', async () => {
    const fx = await setup(fastTiming(), 200);
    const agent = keepAlive();
    const a = await raw(fx, 'GET', '/api2/json/version', { agent });
    const closed = new Promise((r) => (a.socket as NodeJS.EventEmitter).once('close', r));
    await closed;
    await raw(fx, 'GET', '/api2/json/version', { agent });
    expect(fx.fake!.connections()).toBe(2);
  });

  it('holds a 401 for 3 s from the request, without a body, and closes the connection (F22)', async () => {
    const fx = await setup({ ...fastTiming(), authFailureDelayMs: 3_000 });
    const t0 = Date.now();
    const r = await raw(fx, 'GET', '/api2/json/version', { token: 'proxy-operator@pve!op=wrong' });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(2_900);
    expect([r.status, r.reason, r.body, r.headers.connection]).toEqual([
      401,
      'Authentication failed!',
      '',
      'close',
    ]);
    expect(r.headers['content-length']).toBeUndefined();
    const none = await raw(fx, 'GET', '/api2/json/version', { token: null });
    expect([none.status, none.reason]).toEqual([401, 'No ticket']);
  });

  it('refuses chunked bodies, bodies on GET and DELETE, big ones and other types; reads forms and JSON', async () => {
    const fx = await setup();
    const chunked = await raw(fx, 'PUT', '/api2/json/nodes/pv1-1/qemu/9001/config', {
      body: 'cores=2',
      headers: {
        'transfer-encoding': 'chunked',
        'content-type': 'application/x-www-form-urlencoded',
      },
    });
    expect([chunked.status, chunked.reason, chunked.body]).toEqual([
      501,
      'chunked transfer encoding not supported',
      'chunked transfer encoding not supported',
    ]);
    const get = await raw(fx, 'GET', '/api2/json/version', { body: 'x=1' });
    expect([get.status, get.reason]).toEqual([501, "Unexpected content for method 'GET'"]);
    const big = await raw(fx, 'PUT', '/api2/json/nodes/pv1-1/qemu/9001/config', {
      form: { description: 'x'.repeat(600 * 1024) },
    });
    expect([big.status, big.reason]).toEqual([501, 'for data too large']);
    const xml = await raw(fx, 'PUT', '/api2/json/nodes/pv1-1/qemu/9001/config', {
      body: '<cores>2</cores>',
      headers: { 'content-type': 'text/xml' },
    });
    expect([xml.status, xml.reason]).toEqual([
      506,
      "upload 'Content-Type 'text/xml' not implemented",
    ]);
    const json = await raw(fx, 'POST', '/api2/json/nodes/pv1-1/qemu/9001/clone', {
      body: JSON.stringify({ newid: 100200, name: 'proxy-json', full: 1 }),
      headers: { 'content-type': 'application/json' },
    });
    expect(json.status).toBe(200);
    const broken = await raw(fx, 'PUT', '/api2/json/nodes/pv1-1/qemu/9001/config', {
      body: '{"cores":',
      headers: { 'content-type': 'application/json' },
    });
    expect(broken.status).toBe(500);
    expect(broken.reason).toMatch(/^malformed JSON string/);
    expect((await raw(fx, 'GET', '/api2/json/version')).status).toBe(200);
  });

  it("reads an upload's multipart field by field, as pveproxy does, and keeps serving after a bad one (F12)", async () => {
    const fx = await setup();
    const b = 'B0undary';
    const url = '/api2/json/nodes/pv1-1/storage/proxy-seeds/upload';
    const headers = { 'content-type': `multipart/form-data; boundary=${b}` };
    const part = (name: string, v: string) =>
      `--${b}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${v}\r\n`;
    const file = (field: string, name: string, data: string) =>
      `--${b}\r\nContent-Disposition: form-data; name="${field}"; filename="${name}"\r\nContent-Type: application/octet-stream\r\n\r\n${data}\r\n`;
    const end = `--${b}--\r\n`;
    const ok = await raw(fx, 'POST', url, {
      body: `${part('content', 'iso')}${file('filename', 'a.iso', 'ISO!')}${end}`,
      headers,
    });
    expect(ok.status).toBe(200);
    await fx.model.settle();
    expect(Buffer.from(fx.model.isos.get('pv1-1/proxy-seeds/a.iso') ?? []).toString()).toBe('ISO!');
    const late = await raw(fx, 'POST', url, {
      body: `${file('filename', 'b.iso', 'x')}${part('content', 'iso')}${end}`,
      headers,
    });
    // pveproxy's reader misses the field after the file and takes it for file data.
    expect([late.status, late.errors]).toEqual([
      400,
      { content: 'property is missing and it is not optional' },
    ]);
    const field = await raw(fx, 'POST', url, {
      body: `${part('content', 'iso')}${file('file', 'c.iso', 'x')}${end}`,
      headers,
    });
    expect([field.status, field.reason]).toEqual([
      500,
      "wrong field name 'file' for file upload, expected 'filename' at /usr/share/perl5/PVE/APIServer/AnyEvent.pm line 1325.",
    ]);
    const noFile = await raw(fx, 'POST', url, { body: `${part('content', 'iso')}${end}`, headers });
    expect(noFile.status).toBe(500);
    const noContent = await raw(fx, 'POST', url, {
      body: `${file('filename', 'd.iso', 'x')}${end}`,
      headers,
    });
    expect([noContent.status, noContent.errors]).toEqual([
      400,
      { content: 'property is missing and it is not optional' },
    ]);
    // Not multipart at all: pveproxy dies on it without an answer and drops the connection.
    const dropped = await tlsRaw(
      fx,
      `POST ${url} HTTP/1.1\r\nHost: x\r\nAuthorization: PVEAPIToken=${TOKEN_LINE}\r\nContent-Type: application/octet-stream\r\nContent-Length: 4\r\n\r\nISO!`,
    );
    expect(dropped).toBe('');
    expect((await raw(fx, 'GET', '/api2/json/version')).status).toBe(200);
  });

  it('gzips an answer past 1 KiB when the client takes gzip', async () => {
    const fx = await setup();
    for (let i = 0; i < 20; i++) fx.model.addVm({ vmid: 200 + i, name: `vm-${i}` });
    const r = await raw(fx, 'GET', '/api2/json/cluster/resources?type=vm', {
      headers: { 'accept-encoding': 'gzip' },
    });
    expect(r.headers['content-encoding']).toBe('gzip');
    expect((r.data as unknown[]).length).toBe(21);
    const plain = await raw(fx, 'GET', '/api2/json/version', {
      headers: { 'accept-encoding': 'gzip' },
    });
    expect(plain.headers['content-encoding']).toBeUndefined();
  });

  it('carries out a request received whole though its client is gone; one cut off mid-body never arrives', async () => {
    const fx = await setup();
    const body = 'newid=100300&name=proxy-gone&full=1';
    const head = (len: number) =>
      `POST /api2/json/nodes/pv1-1/qemu/9001/clone HTTP/1.1\r\nHost: x\r\nAuthorization: PVEAPIToken=${TOKEN_LINE}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${len}\r\n\r\n`;
    const line = 'POST /api2/json/nodes/pv1-1/qemu/9001/clone';
    await tlsRaw(fx, `${head(body.length)}${body.slice(0, 10)}`, 100, true);
    // The head reached the server; the body never came whole.
    await waitFor(() => fx.fake!.requests.includes(line));
    await fx.model.settle();
    expect(fx.model.vm(100300)).toBeUndefined();
    await tlsRaw(fx, `${head(body.length)}${body}`, 100, true);
    await waitFor(() => fx.model.vm(100300) !== undefined);
    await fx.model.settle();
    expect(fx.model.vm(100300)?.name).toBe('proxy-gone');
    expect(fx.model.calls.filter((c) => c === 'clone')).toHaveLength(1);
  });

  it('survives any input: random requests, headers and bodies, then answers as before', async () => {
    const fx = await setup();
    let seed = 0x5eed;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const pick = <T>(xs: readonly T[]): T => xs[rnd(xs.length)] as T;
    const paths = [
      '/api2/json/version',
      '/api2/json/cluster/resources?type=vm',
      '/api2/json/cluster/resources?type=%ZZ',
      '/api2/json/nodes/pv1-1/qemu/9001/config',
      '/api2/json/nodes/pv1-1/qemu/9001/clone',
      '/api2/json/nodes/pv1-1/storage/proxy-seeds/upload',
      '/api2/json/nodes/%E0%A4%A/qemu/x',
      '/api2/json/nodes/pv1-1/tasks/UPID%3A/status',
      '/api2/json/nodes/pv1-1/storage/proxy-seeds/content/..%2F..%2Fetc',
      '/api2/json/../../etc/passwd',
      '/',
      '*',
    ];
    const types = [
      'application/x-www-form-urlencoded',
      'application/json',
      'multipart/form-data; boundary=zz',
      'multipart/form-data',
      'text/plain',
      '',
    ];
    const bodies = [
      '',
      'newid=100401&name=proxy-f&full=1',
      'newid=1e9&full=true&full=0',
      '{"newid": [1,2]}',
      '{"newid": {"a": 1}}',
      '[]',
      'null',
      '--zz\r\nContent-Disposition: form-data; name="content"\r\n\r\niso\r\n--zz\r\nContent-Disposition: form-data; name="filename"; filename="x.iso"\r\n\r\n',
      '--zz--',
      '%%%%%&&&===;;;',
      Buffer.from(Array.from({ length: 64 }, () => rnd(256))).toString('latin1'),
    ];
    const methods = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'BREW'];
    for (let i = 0; i < 150; i++) {
      const body = pick(bodies);
      const lines = [
        `${pick(methods)} ${pick(paths)} HTTP/1.1`,
        'Host: x',
        ...(rnd(4) === 0
          ? []
          : [`Authorization: PVEAPIToken=${rnd(5) === 0 ? 'junk' : TOKEN_LINE}`]),
        ...(rnd(3) === 0 ? [] : [`Content-Type: ${pick(types)}`]),
        ...(rnd(6) === 0 ? ['Transfer-Encoding: chunked'] : []),
        rnd(5) === 0
          ? `Content-Length: ${rnd(200)}`
          : `Content-Length: ${Buffer.byteLength(body, 'latin1')}`,
        ...(rnd(8) === 0 ? ['X-Broken-Header'] : []),
      ];
      await tlsRaw(fx, Buffer.from(`${lines.join('\r\n')}\r\n\r\n${body}`, 'latin1'), 150);
    }
    const r = await raw(fx, 'GET', '/api2/json/version');
    expect(r.status).toBe(200);
    expect(readAnswer.version(r.data).version).toBe('9.2.20');
  });
});

describe('the API', () => {
  it('checks every parameter against the schema, query strings as much as bodies', async () => {
    const fx = await setup();
    const clone = (form: Record<string, string>) =>
      raw(fx, 'POST', '/api2/json/nodes/pv1-1/qemu/9001/clone', { form });
    expect((await clone({ newid: '100500', full: '1', colour: 'blue' })).errors).toEqual({
      colour:
        'property is not defined in schema and the schema does not allow additional properties',
    });
    expect((await clone({ full: '1' })).errors).toEqual({
      newid: 'property is missing and it is not optional',
    });
    expect((await clone({ newid: '100500', full: 'true' })).errors).toEqual({
      full: "type check ('boolean') failed - got 'true'",
    });
    expect((await clone({ newid: 'x' })).errors).toEqual({
      newid: "type check ('integer') failed - got 'x'",
    });
    expect((await clone({ newid: '100500', name: 'not_a_dns_name' })).errors).toEqual({
      name: 'invalid format - value does not look like a valid DNS name\n',
    });
    expect((await clone({ newid: '100500', bwlimit: '-1' })).errors).toEqual({
      bwlimit: 'value must have a minimum value of 0',
    });
    expect((await clone({ newid: '100500', format: 'vdi' })).errors).toEqual({
      format: "value 'vdi' does not have a value in the enumeration 'raw, qcow2, vmdk'",
    });
    const dup = await raw(fx, 'POST', '/api2/json/nodes/pv1-1/qemu/9001/clone?vmid=9002', {
      form: { newid: '100500' },
    });
    expect(dup.errors).toEqual({
      vmid: 'duplicate parameter (already defined in URI) with conflicting values!',
    });
    const q = await raw(fx, 'DELETE', '/api2/json/nodes/pv1-1/qemu/9001?purge=yes');
    expect(q.errors).toEqual({ purge: "type check ('boolean') failed - got 'yes'" });
    const unknown = await raw(fx, 'GET', '/api2/json/cluster/resources?type=vm&sort=name');
    expect(unknown.status).toBe(400);
    expect((await raw(fx, 'GET', '/api2/json/cluster/resources?type=vms')).errors).toEqual({
      type: "value 'vms' does not have a value in the enumeration 'vm, storage, node, sdn'",
    });
  });

  it('answers a path or a method it does not have with 501', async () => {
    const fx = await setup();
    const p = await raw(fx, 'GET', '/api2/json/nodes/pv1-1/qemu/9001/nonsense');
    expect([p.status, p.reason]).toEqual([
      501,
      "Method 'GET /nodes/pv1-1/qemu/9001/nonsense' not implemented",
    ]);
    const m = await raw(fx, 'PATCH', '/api2/json/version');
    expect([m.status, m.reason]).toEqual([501, "method 'PATCH' not available"]);
  });

  it('lists guests with type=vm only; without it nodes and storages too, which the client refuses to read as guests', async () => {
    const fx = await setup();
    const vm = await raw(fx, 'GET', '/api2/json/cluster/resources?type=vm');
    expect(
      (vm.data as { type: string }[]).every((e) => e.type === 'qemu' || e.type === 'lxc'),
    ).toBe(true);
    const all = await raw(fx, 'GET', '/api2/json/cluster/resources');
    const kinds = new Set((all.data as { type: string }[]).map((e) => e.type));
    expect(kinds).toEqual(new Set(['qemu', 'node', 'storage']));
    expect(() => readAnswer.clusterResources(all.data)).toThrow(TypeError);
  });

  it('a clone: the VMID taken at once, nameless and locked, config writes refused, a start queued behind it (F3, F7, F8)', async () => {
    const fx = await setup();
    const m = fx.model;
    await raw(fx, 'GET', '/api2/json/cluster/resources?type=vm'); // pvestatd's round has passed
    // The clone copies its disks until released.
    const copying = m.holdNextTask('qmclone');
    const c = await raw(fx, 'POST', '/api2/json/nodes/pv1-1/qemu/9001/clone', {
      form: { newid: '100123', name: 'proxy-web-1', description: 'mark', full: '1' },
    });
    const upid = readAnswer.clone(c.data);
    await copying.reached;
    const entry = (
      (await raw(fx, 'GET', '/api2/json/cluster/resources?type=vm')).data as { vmid: number }[]
    ).find((e) => e.vmid === 100123);
    expect(entry).toEqual({
      id: 'qemu/100123',
      lock: 'clone',
      node: 'pv1-1',
      status: 'unknown',
      type: 'qemu',
      vmid: 100123,
    });
    const config = (await raw(fx, 'GET', '/api2/json/nodes/pv1-1/qemu/100123/config'))
      .data as Record<string, unknown>;
    expect(Object.keys(config).sort()).toEqual(['digest', 'lock']);
    const put = await raw(fx, 'PUT', '/api2/json/nodes/pv1-1/qemu/100123/config', {
      form: { cores: '2' },
    });
    expect([put.status, put.reason]).toEqual([500, 'VM is locked (clone)']);
    const again = await raw(fx, 'POST', '/api2/json/nodes/pv1-1/qemu/9001/clone', {
      form: { newid: '100123', full: '1' },
    });
    expect([again.status, again.reason]).toEqual([
      500,
      'unable to create VM 100123: config file already exists',
    ]);
    const start = readAnswer.start(
      (await raw(fx, 'POST', '/api2/json/nodes/pv1-1/qemu/100123/status/start')).data,
    );
    const task = async (u: string) =>
      readAnswer.taskStatus(
        (await raw(fx, 'GET', `/api2/json/nodes/pv1-1/tasks/${encodeURIComponent(u)}/status`)).data,
      );
    expect((await task(upid)).status).toBe('running');
    // The start waits for the VM's lock file, which the clone holds (F3).
    expect((await task(start)).status).toBe('running');
    expect(m.vm(100123)?.status).toBe('stopped');
    copying.release();
    await m.settle();
    expect(await task(upid)).toMatchObject({ status: 'stopped', exitstatus: 'OK' });
    expect(await task(start)).toMatchObject({ status: 'stopped', exitstatus: 'OK' });
    const cloned = (await raw(fx, 'GET', '/api2/json/nodes/pv1-1/qemu/100123/config'))
      .data as Record<string, string>;
    expect(cloned).toMatchObject({
      name: 'proxy-web-1',
      description: 'mark',
      scsi0: 'local-lvm:vm-100123-disk-0,size=3G',
    });
    expect(cloned.template).toBeUndefined();
    expect(cloned.lock).toBeUndefined();
    expect(cloned.net0).toMatch(/^virtio=BC:24:11:[0-9A-F:]{8},bridge=vmbr0,firewall=1$/);
    expect(cloned.net0).not.toContain('BC:24:11:00:00:01');
    // The listing's name and status wait for pvestatd's next round.
    const listed = () =>
      raw(fx, 'GET', '/api2/json/cluster/resources?type=vm').then((r) =>
        (r.data as { vmid: number; name?: string; status: string }[]).find(
          (e) => e.vmid === 100123,
        ),
      );
    expect(await listed()).toMatchObject({ status: 'unknown' });
    m.refreshStats();
    expect(await listed()).toMatchObject({ name: 'proxy-web-1', status: 'running' });
  });

  it('a clone takes about two seconds at the default pace (F16)', async () => {
    const fx = await setup({});
    const t0 = Date.now();
    const c = await raw(fx, 'POST', '/api2/json/nodes/pv1-1/qemu/9001/clone', {
      form: { newid: '100125', name: 'proxy-pace', full: '1' },
    });
    const upid = readAnswer.clone(c.data);
    await fx.model.settle();
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1_900);
    expect(fx.model.tasks.get(upid)?.exitstatus).toBe('OK');
  });

  it('a clone without full=1 from a template is linked to it', async () => {
    const fx = await setup();
    await raw(fx, 'POST', '/api2/json/nodes/pv1-1/qemu/9001/clone', {
      form: { newid: '100124', name: 'proxy-linked' },
    });
    await fx.model.settle();
    expect(fx.model.vm(100124)?.config.scsi0).toBe(
      'local-lvm:base-9001-disk-0/vm-100124-disk-0,size=3G',
    );
  });

  it('a destroy keeps the VMID in backup jobs without purge and the unreferenced disks without destroy-unreferenced-disks', async () => {
    const fx = await setup();
    const m = fx.model;
    const make = (vmid: number) => {
      m.cloneNow(9001, vmid, `proxy-${vmid}`, 'd');
      m.backupJobs.set(`job-${vmid}`, new Set([vmid]));
      return m.addOrphanDisk(vmid);
    };
    const destroy = async (vmid: number, query: string) => {
      await raw(fx, 'DELETE', `/api2/json/nodes/pv1-1/qemu/${vmid}${query}`);
      await m.settle();
    };
    const orphanA = make(100131);
    await destroy(100131, '');
    expect(m.vm(100131)).toBeUndefined();
    expect(m.volumes.has('local-lvm:vm-100131-disk-0')).toBe(false);
    expect(m.volumes.has(orphanA)).toBe(true);
    expect(m.backupJobs.get('job-100131')?.has(100131)).toBe(true);
    const orphanB = make(100132);
    await destroy(100132, '?purge=1&destroy-unreferenced-disks=1');
    expect(m.volumes.has(orphanB)).toBe(false);
    expect(m.backupJobs.get('job-100132')?.has(100132)).toBe(false);
  });

  it('a second destroy waits for the first, then fails as the VM is gone; one of a locked VM fails in its task', async () => {
    const fx = await setup({ ...fastTiming(), tasks: { ...fastTiming().tasks!, qmdestroy: 400 } });
    const m = fx.model;
    m.cloneNow(9001, 100140, 'proxy-twice', 'd');
    const first = readAnswer.destroy(
      (await raw(fx, 'DELETE', '/api2/json/nodes/pv1-1/qemu/100140?purge=1')).data,
    );
    const second = readAnswer.destroy(
      (await raw(fx, 'DELETE', '/api2/json/nodes/pv1-1/qemu/100140?purge=1')).data,
    );
    await m.settle();
    expect(m.tasks.get(first)?.exitstatus).toBe('OK');
    expect(m.tasks.get(second)?.exitstatus).toBe(
      "Configuration file 'nodes/pv1-1/qemu-server/100140.conf' does not exist",
    );
    m.cloneNow(9001, 100141, 'proxy-locked', 'd');
    m.vms.get(100141)!.lock = 'backup';
    const locked = readAnswer.destroy(
      (await raw(fx, 'DELETE', '/api2/json/nodes/pv1-1/qemu/100141')).data,
    );
    await m.settle();
    expect(m.tasks.get(locked)?.exitstatus).toBe('VM is locked (backup)');
  });

  it('config writes: delete= removes keys, a NIC gets a MAC, ide2 joins the boot order, tags fold to lowercase; conflicts refused', async () => {
    const fx = await setup();
    const m = fx.model;
    m.cloneNow(9001, 100150, 'proxy-cfg', 'd');
    const put = (form: Record<string, string>) =>
      raw(fx, 'PUT', '/api2/json/nodes/pv1-1/qemu/100150/config', { form });
    expect(
      (
        await put({
          delete: 'agent',
          net0: 'virtio,bridge=vmbr0,tag=4',
          ide2: 'proxy-seeds:iso/x.iso,media=cdrom',
          tags: 'Proxy_Operator',
        })
      ).status,
    ).toBe(200);
    const cfg = m.vm(100150)!.config;
    expect(cfg.agent).toBeUndefined();
    expect(cfg.net0).toMatch(/^virtio=BC:24:11:[0-9A-F:]{8},bridge=vmbr0,tag=4$/);
    expect(cfg.boot).toBe('order=scsi0;ide2');
    expect(cfg.tags).toBe('proxy_operator');
    expect((await put({ delete: 'cores', cores: '2' })).errors).toEqual({
      delete: "you can't use '-cores' and -delete cores' at the same time",
    });
    expect((await put({ delete: 'colour' })).errors).toEqual({ delete: "unknown option 'colour'" });
    expect((await put({ colour: 'blue' })).status).toBe(400);
    const none = await put({});
    expect([none.status, none.reason]).toEqual([500, 'no options specified']);
  });

  it('tasks: a token names its user and token apart; an unknown task is a 400', async () => {
    const fx = await setup();
    const upid = readAnswer.start(
      (await raw(fx, 'POST', '/api2/json/nodes/pv1-1/qemu/9001/status/start')).data,
    );
    expect(upid).toMatch(
      /^UPID:pv1-1:[0-9A-F]{8}:[0-9A-F]{8}:[0-9A-F]{8}:qmstart:9001:proxy-operator@pve!op:$/,
    );
    await fx.model.settle();
    const st = await raw(
      fx,
      'GET',
      `/api2/json/nodes/pv1-1/tasks/${encodeURIComponent(upid)}/status`,
    );
    expect(st.data).toMatchObject({
      user: 'proxy-operator@pve',
      tokenid: 'op',
      type: 'qmstart',
      status: 'stopped',
      exitstatus: "you can't start a vm if it's a template",
    });
    const gone = await raw(
      fx,
      'GET',
      `/api2/json/nodes/pv1-2/tasks/${encodeURIComponent(upid)}/status`,
    );
    expect(gone.errors).toEqual({ upid: 'no such task' });
    const bad = await raw(fx, 'GET', '/api2/json/nodes/pv1-1/tasks/nope/status');
    expect(bad.errors).toEqual({ upid: 'unable to parse worker upid' });
  });

  it("a start needs the VM's ISO: without it the task fails", async () => {
    const fx = await setup();
    const m = fx.model;
    m.cloneNow(9001, 100160, 'proxy-iso', 'd');
    m.vms.get(100160)!.config.ide2 = 'proxy-seeds:iso/proxy-iso-seed.iso,media=cdrom';
    const upid = readAnswer.start(
      (await raw(fx, 'POST', '/api2/json/nodes/pv1-1/qemu/100160/status/start')).data,
    );
    await m.settle();
    expect(m.tasks.get(upid)?.exitstatus).toBe(
      "volume 'proxy-seeds:iso/proxy-iso-seed.iso' does not exist",
    );
  });
});
