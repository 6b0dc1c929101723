// Peer: the HTTPS fake of the PVE API over real TLS (CA made with openssl), through the undici client.
import { copyFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { createProvider, errorClassOf } from '@proxy-op/contract';
import { createLogSink, createSpanRecorder, leakedIn } from '@proxy-op/providertest';
import { afterEach, describe, expect, it } from 'vitest';
import { classify } from '../src/classify.js';
import { HttpProxmoxApi } from '../src/client.js';
import { ApiError } from '../src/errors.js';
import { providerModule } from '../src/module.js';
import {
  createProxmoxFixture,
  FAST_BUDGETS,
  type ProxmoxFixture,
  TOKEN_LINE,
  TOKEN_SENTINEL,
} from './support/fixture.js';
import { fastTiming, type Timing } from './support/pve-model.js';

const fixtures: ProxmoxFixture[] = [];
const clients: HttpProxmoxApi[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  for (const f of fixtures.splice(0)) await f.cleanup?.();
});

async function setup(config: Record<string, unknown> = {}, timing: Partial<Timing> = fastTiming()) {
  const logs = createLogSink();
  const spans = createSpanRecorder();
  // Speed asked for explicitly unless a test passes a timing of its own.
  const fx = await createProxmoxFixture(
    { logger: logs.logger, tracer: spans.tracer },
    { nodes: ['pv1-1'], config, timing },
  );
  fixtures.push(fx);
  return { ...fx, logs, spans, p: fx.provider, m: fx.model };
}

function client(
  fx: ProxmoxFixture,
  over: Partial<ConstructorParameters<typeof HttpProxmoxApi>[0]> = {},
) {
  const c = new HttpProxmoxApi({
    url: fx.fake!.url,
    tokenFile: fx.tokenFile,
    caFile: fx.fake!.pki.caFile,
    requestTimeoutMs: 5_000,
    ...over,
  });
  clients.push(c);
  return c;
}

async function failure(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a rejection');
}

let n = 0;
function request() {
  n++;
  return {
    name: `proxy-tls-${n}`,
    namespace: 'default',
    uid: `0f0e0d0c-0000-4000-8000-${String(n).padStart(12, '0')}`,
    port: 3128,
    cloudInit: new TextEncoder().encode('#cloud-config\n# CLOUDINIT-SENTINEL-tls-51fa\n'),
    placement: { machineType: 'small', image: 'debian-13' },
  };
}

describe('the HTTPS client', () => {
  it('Client: answers come back as data over TLS with the generated CA', async () => {
    const fx = await setup();
    const c = client(fx);
    expect((await c.version()).version).toBe('9.2.20');
    const resources = await c.clusterResources();
    expect(resources.find((r) => r.vmid === 9001)).toMatchObject({ template: 1, node: 'pv1-1' });
    expect(fx.fake!.requests).toEqual([
      'GET /api2/json/version',
      'GET /api2/json/cluster/resources?type=vm',
    ]);
  });

  it('Client: a cancelled signal returns promptly', async () => {
    const fx = await setup();
    const c = client(fx);
    const gate = fx.model.blockCalls(0);
    const ac = new AbortController();
    const other = c.version();
    const p = c.clusterResources(ac.signal);
    p.catch(() => {});
    await gate.reached;
    const t0 = Date.now();
    ac.abort();
    const err = await failure(p);
    expect(Date.now() - t0).toBeLessThan(500);
    expect(err.name).toBe('AbortError');
    gate.release();
    // The other request in flight is unharmed, and the client still works.
    expect((await other).version).toBe('9.2.20');
    expect((await c.version()).version).toBe('9.2.20');
  });

  it('Client: the token never reaches errors or logs', async () => {
    const fx = await setup();
    fx.model.acceptedToken = 'someone@pve!else=x';
    fx.model.echoRejectedToken = true;
    const c = client(fx);
    const err = await failure(c.clusterResources());
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).status).toBe(401);
    const everything = JSON.stringify({ m: err.message, s: err.stack, e: { ...err } });
    expect(everything).not.toContain(TOKEN_SENTINEL);
    // Through the provider: logs, spans and errors.
    const { p, logs, spans } = fx;
    const errors = await Promise.all([
      failure(p.create(request())),
      failure(p.get('vms/100100/proxy-x')),
      failure(p.listByTag()),
      failure(p.delete('vms/100100/proxy-x')),
    ]);
    for (const e of errors) {
      expect(errorClassOf(e)).toBe('Permanent');
      expect(`${e.message}${e.stack}${JSON.stringify(e)}`).not.toContain(TOKEN_SENTINEL);
    }
    const results = await p.check!();
    expect(results[0]?.reason).toBe('Unauthorized');
    expect(JSON.stringify(results)).not.toContain(TOKEN_SENTINEL);
    expect(logs.text()).not.toContain(TOKEN_SENTINEL);
    expect(spans.text()).not.toContain(TOKEN_SENTINEL);
  });

  it('Client: a 401 without a body, a 403 naming the privilege, a 400 with field errors, 595', async () => {
    const fx = await setup();
    const c = client(fx);
    fx.model.acceptedToken = 'someone@pve!else=x';
    const e401 = (await failure(c.version())) as ApiError;
    expect([e401.status, e401.apiMessage]).toEqual([401, 'Authentication failed!']);
    fx.model.acceptedToken = TOKEN_LINE;
    fx.model.forbidden.set('clone', '/vms/100123, VM.Clone');
    const e403 = (await failure(
      c.clone({ node: 'pv1-1', vmid: 9001, newid: 100_123, name: 'x', description: '' }),
    )) as ApiError;
    expect(e403.status).toBe(403);
    expect(e403.message).toContain('VM.Clone');
    const e400 = (await failure(c.storageStatus({ node: 'pv1-1', storage: 'nope' }))) as ApiError;
    expect(e400.status).toBe(400);
    expect(e400.errors).toEqual({ storage: 'No such storage.' });
    expect(e400.message).toContain('storage: No such storage.');
    fx.model.unreachableNodes.add('pv1-1');
    const e595 = (await failure(c.nodeStatus({ node: 'pv1-1' }))) as ApiError;
    expect(e595.status).toBe(595);
    const unknownNode = (await failure(c.vmConfig({ node: 'pv1-9', vmid: 4242 }))) as ApiError;
    expect([unknownNode.status, unknownNode.apiMessage]).toEqual([
      500,
      "no such cluster node 'pv1-9'",
    ]);
    fx.model.unreachableNodes.clear();
    const gone = (await failure(c.vmConfig({ node: 'pv1-1', vmid: 4242 }))) as ApiError;
    expect([gone.status, gone.apiMessage]).toEqual([
      500,
      "Configuration file 'nodes/pv1-1/qemu-server/4242.conf' does not exist",
    ]);
  });

  it('Client: a request held at the server is still carried out after its client gave up', async () => {
    const fx = await setup();
    const c = client(fx);
    const gate = fx.model.blockCalls(0);
    const ac = new AbortController();
    const p = c.clone(
      { node: 'pv1-1', vmid: 9001, newid: 100_123, name: 'proxy-held', description: 'd' },
      ac.signal,
    );
    p.catch(() => {});
    await gate.reached;
    ac.abort();
    expect((await failure(p)).name).toBe('AbortError');
    expect(fx.model.vms.has(100_123)).toBe(false);
    gate.release();
    for (let i = 0; i < 100 && !fx.model.vms.has(100_123); i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(fx.model.vms.has(100_123)).toBe(true);
    expect((await c.version()).version).toBe('9.2.20');
  });

  it('Client: answers that cannot be read are malformed-answer errors of the provider', async () => {
    const fx = await setup();
    const id = await fx.p.create(request());
    const codes: string[] = [];
    for (let i = 0; i < 4; i++) {
      fx.model.malformNext();
      const err = (await failure(fx.p.get(id))) as Error & { code?: string; op?: string };
      expect(errorClassOf(err)).toBe('Transient');
      expect(err.op).toBe('get');
      codes.push(err.code ?? '');
    }
    // null data, {} for the list, an HTML page, a body without data.
    expect(codes).toEqual(Array(4).fill('PROVIDER_MALFORMED_ANSWER'));
    expect((await fx.p.get(id)).id).toBe(id);
  });

  it('Client: a token an answer echoes is redacted in every form from errors and logs', async () => {
    const fx = await setup();
    // A careless proxy in front of pveproxy quoting the request's header in a 403.
    fx.model.forbidden.set('clusterResources', `/, Sys.Audit; header PVEAPIToken=${TOKEN_LINE}`);
    const err = await failure(fx.p.listByTag());
    expect(errorClassOf(err)).toBe('Permanent');
    expect(err.message).toContain('Sys.Audit');
    const everything = `${err.message}\n${err.stack}\n${JSON.stringify(err)}\n${inspect(err, { depth: 8 })}`;
    expect(leakedIn(everything, TOKEN_SENTINEL)).toBeUndefined();
    expect(leakedIn(fx.logs.text(), TOKEN_SENTINEL)).toBeUndefined();
  });

  it('Client: HTTP/1.1 only, at most 4 keep-alive connections to the host', async () => {
    const fx = await setup();
    const c = client(fx);
    await Promise.all(Array.from({ length: 24 }, () => c.version()));
    await Promise.all(Array.from({ length: 24 }, () => c.clusterResources()));
    expect([...fx.fake!.httpVersions]).toEqual(['1.1']);
    expect(fx.fake!.connections()).toBeLessThanOrEqual(4);
    expect(fx.fake!.requests).toHaveLength(48);
  });

  it('Client: a request that outlives requestTimeoutSeconds is Transient, and the Checker says Timeout', async () => {
    const fx = await setup({ requestTimeoutSeconds: 0.2 });
    const gate = fx.model.blockCalls(0);
    try {
      const t0 = Date.now();
      const err = await failure(fx.p.listByTag());
      expect(Date.now() - t0).toBeLessThan(2_000);
      expect(errorClassOf(err)).toBe('Transient');
      const [r] = await fx.p.check!();
      expect(r?.reason).toBe('Timeout');
    } finally {
      gate.release();
    }
  });

  it('Client: 596 from pveproxy is Transient, and Unreachable for the Checker', async () => {
    const fx = await setup();
    const id = await fx.p.create(request());
    fx.model.brokenNodes.add('pv1-1');
    const c = client(fx);
    expect(((await failure(c.nodeStatus({ node: 'pv1-1' }))) as ApiError).status).toBe(596);
    expect(errorClassOf(await failure(fx.p.get(id)))).toBe('Transient');
    const [r] = await fx.p.check!();
    expect(r?.reason).toBe('Unreachable');
  });

  it('Client: a TLS verification failure is Permanent', async () => {
    const fx = await setup({});
    const wrongCa = join(fx.dir, 'wrong-ca.pem');
    copyFileSync(fx.fake!.pki.otherCaFile, wrongCa);
    const logs = createLogSink();
    const p = await createProvider(
      providerModule,
      'proxmox-home',
      { ...fx.config, caFile: wrongCa },
      { logger: logs.logger, budgets: FAST_BUDGETS },
    );
    try {
      expect(errorClassOf(await failure(p.get('vms/100100/proxy-x')))).toBe('Permanent');
      expect((await p.check!())[0]?.reason).toBe('CertificateInvalid');
    } finally {
      await p.close?.();
    }
    // Without a CA file the system roots do not know the fake's CA either.
    const { caFile: _ca, ...noCa } = fx.config;
    const p2 = await createProvider(providerModule, 'proxmox-home', noCa, {
      budgets: FAST_BUDGETS,
    });
    try {
      expect(errorClassOf(await failure(p2.listByTag()))).toBe('Permanent');
    } finally {
      await p2.close?.();
    }
  });

  it('Client: insecureSkipTLSVerify connects without the CA and warns when built', async () => {
    const fx = await setup();
    const { caFile: _ca, ...noCa } = fx.config;
    const logs = createLogSink();
    const p = await createProvider(
      providerModule,
      'proxmox-home',
      { ...noCa, insecureSkipTLSVerify: true },
      { logger: logs.logger, budgets: FAST_BUDGETS },
    );
    try {
      expect(logs.lines.filter((l) => l.level === 'warn').map((l) => l.msg)).toEqual([
        'proxmox TLS verification is off (insecureSkipTLSVerify)',
      ]);
      expect(await p.listByTag()).toEqual([]);
    } finally {
      await p.close?.();
    }
  });

  it('Client: a missing CA file is Transient until it lands; one without a certificate is Permanent', async () => {
    const fx = await setup();
    const ca = join(fx.dir, 'late-ca.pem');
    const c = client(fx, { caFile: ca });
    expect(classify('get', await failure(c.version()))).toBe('Transient');
    copyFileSync(fx.fake!.pki.caFile, ca);
    expect((await c.version()).version).toBe('9.2.20');
    const junk = join(fx.dir, 'junk.pem');
    writeFileSync(junk, 'not a certificate');
    const c2 = client(fx, { caFile: junk });
    expect(classify('get', await failure(c2.version()))).toBe('Permanent');
  });

  it('Client: reads the token file on every request, so a rotated token is used at once', async () => {
    const fx = await setup();
    const c = client(fx);
    await c.version();
    fx.model.acceptedToken = 'proxy-operator@pve!op=rotated-secret';
    expect(((await failure(c.version())) as ApiError).status).toBe(401);
    writeFileSync(fx.tokenFile, 'proxy-operator@pve!op=rotated-secret\n');
    expect((await c.version()).version).toBe('9.2.20');
    rmSync(fx.tokenFile);
    const missing = await failure(c.version());
    expect((missing as { code?: string }).code).toBe('PROXMOX_TOKEN_MISSING');
    writeFileSync(fx.tokenFile, 'no-realm-token');
    expect(((await failure(c.version())) as { code?: string }).code).toBe(
      'PROXMOX_TOKEN_MALFORMED',
    );
  });

  it('Client: the upload is multipart and overwrites the file of the same name', async () => {
    const fx = await setup();
    const c = client(fx);
    const upload = async (bytes: number[]) => {
      const upid = await c.uploadIso({
        node: 'pv1-1',
        storage: 'proxy-seeds',
        filename: 'proxy-a-seed.iso',
        data: new Uint8Array(bytes),
      });
      expect(upid).toMatch(/^UPID:pv1-1:[0-9A-F]{8}:[0-9A-F]{8}:[0-9A-F]{8}:imgcopy:/);
      expect(await c.taskStatus({ node: 'pv1-1', upid })).toMatchObject({
        status: 'stopped',
        exitstatus: 'OK',
      });
    };
    await upload([1, 2, 3]);
    await upload([4, 5]);
    expect([...(fx.model.isos.get('pv1-1/proxy-seeds/proxy-a-seed.iso') ?? [])]).toEqual([4, 5]);
  });

  it('Client: a child span under its parent, none without', async () => {
    const fx = await setup();
    const c = client(fx, { tracer: fx.spans.tracer });
    await c.version();
    expect(fx.spans.spans()).toHaveLength(0);
    const parent = fx.spans.tracer.startSpan('caller');
    await context.with(trace.setSpan(context.active(), parent), () => c.clusterResources());
    parent.end();
    const spans = fx.spans.spans();
    const http = spans.find((s) => s.name === 'HTTP GET');
    expect(http?.kind).toBe(SpanKind.CLIENT);
    expect(http?.parentSpanContext?.spanId).toBe(parent.spanContext().spanId);
    expect(http?.attributes).toMatchObject({
      'http.request.method': 'GET',
      'server.address': '127.0.0.1',
      'url.path': '/api2/json/cluster/resources',
      'http.response.status_code': 200,
    });
    expect(JSON.stringify(http?.attributes)).not.toContain(TOKEN_SENTINEL);

    // A request cancelled mid-flight still ends its span, marked as an error.
    const gate = fx.model.blockCalls(0);
    const ac = new AbortController();
    const aborted = context.with(trace.setSpan(context.active(), parent), () =>
      c.version(ac.signal),
    );
    aborted.catch(() => {});
    await gate.reached;
    ac.abort();
    await aborted.catch(() => {});
    gate.release();
    await new Promise((r) => setTimeout(r, 20));
    const cancelled = fx.spans
      .spans()
      .filter((s) => s.name === 'HTTP GET' && s.attributes['url.path'] === '/api2/json/version');
    expect(cancelled).toHaveLength(1);
    expect(cancelled[0]?.status.code).toBe(SpanStatusCode.ERROR);
  });
});

describe('the provider over HTTPS', () => {
  it('Tracing: HTTP spans sit under the operation span and carry neither token nor cloud-init', async () => {
    const { p, spans } = await setup();
    const id = await p.create(request());
    await p.get(id);
    await p.delete(id);
    const all = spans.spans();
    for (const op of ['provider.create', 'provider.get', 'provider.delete']) {
      const parent = all.find((s) => s.name === op);
      const children = all.filter(
        (s) => s.parentSpanContext?.spanId === parent?.spanContext().spanId,
      );
      expect(children.length, op).toBeGreaterThan(0);
      expect(
        children.every((s) => /^HTTP (GET|POST|PUT|DELETE)$/.test(s.name)),
        op,
      ).toBe(true);
    }
    const get = all.find((s) => s.name === 'provider.get');
    expect(
      all
        .filter((s) => s.parentSpanContext?.spanId === get?.spanContext().spanId)
        .map((s) => s.name),
    ).toEqual(['HTTP GET', 'HTTP GET', 'HTTP GET', 'HTTP GET']);
    expect(
      all
        .filter((s) => s.parentSpanContext === undefined)
        .map((s) => s.name)
        .sort(),
    ).toEqual(['provider.create', 'provider.delete', 'provider.get']);
    expect(spans.text()).not.toContain('CLOUDINIT-SENTINEL');
    expect(spans.text()).not.toContain(TOKEN_SENTINEL);
  });

  it('Create: the cloud-init sentinel is never logged or put in errors', async () => {
    const { p, logs, spans, m } = await setup();
    const req = request();
    const id = await p.create(req);
    m.forbidden.set('uploadIso', '/storage/proxy-seeds, Datastore.AllocateTemplate');
    vmStop(m, id);
    const err = await failure(p.create(req));
    expect(errorClassOf(err)).toBe('Permanent');
    expect(err.message).toContain('Datastore.AllocateTemplate');
    for (const text of [
      logs.text(),
      spans.text(),
      `${err.message}${err.stack}${JSON.stringify(err)}`,
    ]) {
      expect(text).not.toContain('CLOUDINIT-SENTINEL');
    }
    // The seed on the storage holds it byte for byte.
    const iso = m.isos.get(`pv1-1/proxy-seeds/${req.name}-seed.iso`)!;
    expect(Buffer.from(iso).includes(Buffer.from(req.cloudInit))).toBe(true);
  });

  it('Create makes a full clone: the VM keeps nothing linked to its template', async () => {
    const { p, m } = await setup();
    const id = await p.create(request());
    const vmid = Number(id.split('/')[1]);
    expect(m.vm(vmid)?.config.scsi0).toBe(`local-lvm:vm-${vmid}-disk-0,size=3G`);
    expect([...m.volumes.keys()].sort()).toEqual([
      'local-lvm:base-9001-disk-0',
      `local-lvm:vm-${vmid}-disk-0`,
    ]);
  });

  it('Delete leaves nothing of the VMID: disks its config does not name, its place in backup jobs', async () => {
    const { p, m } = await setup();
    const id = await p.create(request());
    const vmid = Number(id.split('/')[1]);
    // A disk of the VMID the config does not name (an interrupted disk move),
    // and the VMID in a backup job an admin made.
    const orphan = m.addOrphanDisk(vmid);
    m.backupJobs.set('nightly', new Set([vmid, 9001]));
    await p.delete(id);
    expect(m.volumes.has(orphan)).toBe(false);
    expect([...(m.backupJobs.get('nightly') ?? [])]).toEqual([9001]);
    expect(m.secondaryCount()).toBe(0);
  });

  it('API calls per operation over the wire: every request line, query strings included', async () => {
    const { p, fake, m } = await setup();
    const lines = async (fn: () => Promise<unknown>) => {
      const before = fake!.requests.length;
      await fn();
      // UPIDs vary: name the task by its type.
      return fake!.requests
        .slice(before)
        .map((r) =>
          r.replace(
            /tasks\/([^/]+)\/status/,
            (_m, u: string) => `tasks/<${decodeURIComponent(u).split(':')[5]}>/status`,
          ),
        );
    };
    const req = request();
    let id = '';
    const create = await lines(async () => {
      id = await p.create(req);
    });
    const vmid = id.split('/')[1];
    const vm = `/api2/json/nodes/pv1-1/qemu/${vmid}`;
    const seed = `proxy-seeds%3Aiso%2F${req.name}-seed.iso`;
    expect(create).toEqual([
      'GET /api2/json/cluster/resources?type=vm',
      'GET /api2/json/nodes/pv1-1/qemu/9001/config',
      'POST /api2/json/nodes/pv1-1/qemu/9001/clone',
      'GET /api2/json/nodes/pv1-1/tasks/<qmclone>/status',
      'POST /api2/json/nodes/pv1-1/storage/proxy-seeds/upload',
      'GET /api2/json/nodes/pv1-1/tasks/<imgcopy>/status',
      `PUT ${vm}/config`,
      `POST ${vm}/status/start`,
      'GET /api2/json/nodes/pv1-1/tasks/<qmstart>/status',
      `GET ${vm}/status/current`,
    ]);
    expect(await lines(() => p.get(id))).toEqual([
      'GET /api2/json/cluster/resources?type=vm',
      `GET ${vm}/config`,
      `GET ${vm}/status/current`,
      `GET ${vm}/agent/network-get-interfaces`,
    ]);
    expect(await lines(() => p.listByTag())).toEqual([
      'GET /api2/json/cluster/resources?type=vm',
      `GET ${vm}/config`,
    ]);
    m.refreshStats(); // pvestatd has reported the VM running
    expect(await lines(() => p.delete(id))).toEqual([
      'GET /api2/json/cluster/resources?type=vm',
      `GET ${vm}/config`,
      `POST ${vm}/status/stop`,
      'GET /api2/json/nodes/pv1-1/tasks/<qmstop>/status',
      `DELETE /api2/json/nodes/pv1-1/storage/proxy-seeds/content/${seed}`,
      'GET /api2/json/nodes/pv1-1/tasks/<imgdel>/status',
      `DELETE ${vm}?purge=1&destroy-unreferenced-disks=1`,
      'GET /api2/json/nodes/pv1-1/tasks/<qmdestroy>/status',
    ]);
  });
});

function vmStop(m: ProxmoxFixture['model'], id: string) {
  const vm = m.vms.get(Number(id.split('/')[1]))!;
  vm.status = 'stopped';
  vm.qmpstatus = 'stopped';
}
