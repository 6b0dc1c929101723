// Peer: the server itself over HTTPS (node:https), held to the real API server's Status shapes and messages.
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { KubeTestServer } from '../src/index.js';
import { call, createCrd, eventually, openWatch } from './helpers.js';

const crd = parse(readFileSync(new URL('fixtures/widgets-crd.yaml', import.meta.url), 'utf8'));
const W = '/apis/example.com/v1/namespaces/default/widgets';
const CM = '/api/v1/namespaces/default/configmaps';

let server: KubeTestServer;

beforeAll(async () => {
  server = await KubeTestServer.start({ bookmarkIntervalMs: 50 });
  await createCrd(server, crd);
});

afterAll(async () => {
  await server.stop();
});

function widget(name: string, spec: object = { color: 'red' }, metadata: object = {}) {
  return { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name, ...metadata }, spec };
}

describe('discovery', () => {
  it('serves /version, legacy /api and /apis, and aggregated discovery when asked', async () => {
    expect((await call(server, 'GET', '/version')).body).toMatchObject({
      major: '1',
      minor: '32',
      gitVersion: 'v1.32.0',
    });
    expect((await call(server, 'GET', '/api')).body).toMatchObject({
      kind: 'APIVersions',
      versions: ['v1'],
    });
    const groups = (await call(server, 'GET', '/apis')).body;
    expect(groups.kind).toBe('APIGroupList');
    expect(groups.groups.map((g: { name: string }) => g.name)).toContain('example.com');
    const agg = await call(server, 'GET', '/apis', {
      accept:
        'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json',
    });
    expect(agg.headers['content-type']).toBe(
      'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList',
    );
    const ex = agg.body.items.find(
      (i: { metadata: { name: string } }) => i.metadata.name === 'example.com',
    );
    expect(ex.versions[0].resources[0]).toMatchObject({
      resource: 'widgets',
      responseKind: { group: 'example.com', version: 'v1', kind: 'Widget' },
      scope: 'Namespaced',
      singularResource: 'widget',
      shortNames: ['wd'],
      subresources: [{ subresource: 'status', verbs: ['get', 'patch', 'update'] }],
    });
    const list = (await call(server, 'GET', '/apis/example.com/v1')).body;
    expect(list).toMatchObject({ kind: 'APIResourceList', groupVersion: 'example.com/v1' });
    expect(list.resources.map((r: { name: string }) => r.name)).toEqual([
      'widgets',
      'widgets/status',
    ]);
  });

  it('publishes OpenAPI v3 documents whose PATCH operations take fieldValidation', async () => {
    const root = (await call(server, 'GET', '/openapi/v3')).body;
    const rel = root.paths['apis/example.com/v1'].serverRelativeURL as string;
    expect(rel).toMatch(/^\/openapi\/v3\/apis\/example.com\/v1\?hash=[0-9A-F]+$/);
    const doc = (await call(server, 'GET', rel)).body;
    const patch = doc.paths['/apis/example.com/v1/namespaces/{namespace}/widgets/{name}'].patch;
    expect(patch['x-kubernetes-group-version-kind']).toEqual({
      group: 'example.com',
      version: 'v1',
      kind: 'Widget',
    });
    expect(patch.parameters.map((p: { name: string }) => p.name)).toContain('fieldValidation');
    expect(Object.keys(patch.requestBody.content)).not.toContain(
      'application/strategic-merge-patch+json',
    );
    const core = (await call(server, 'GET', root.paths['api/v1'].serverRelativeURL)).body;
    expect(
      Object.keys(
        core.paths['/api/v1/namespaces/{namespace}/configmaps/{name}'].patch.requestBody.content,
      ),
    ).toContain('application/strategic-merge-patch+json');
  });
});

describe('authentication', () => {
  it('answers a bad token with 401 and treats no token as system:anonymous', async () => {
    const bad = await call(server, 'GET', CM, { token: 'nope' });
    expect(bad.status).toBe(401);
    expect(bad.body).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'Unauthorized',
      reason: 'Unauthorized',
      code: 401,
    });
  });
});

describe('connections', () => {
  it('keeps an idle keep-alive connection open past five seconds, as the real server (90 s)', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1, ca: server.caCert });
    try {
      const get = () =>
        new Promise<{ status: number; port: number }>((resolve, reject) => {
          const req = request(
            new URL('/version', server.url),
            { agent, headers: { Authorization: `Bearer ${server.adminToken}` } },
            (res) => {
              res.resume();
              res.on('end', () =>
                resolve({ status: res.statusCode ?? 0, port: req.socket?.localPort ?? -1 }),
              );
            },
          );
          req.on('error', reject);
          req.end();
        });
      const first = await get();
      let closed = false;
      const [socket] = Object.values(agent.freeSockets).flat();
      socket?.once('close', () => {
        closed = true;
      });
      await new Promise((r) => setTimeout(r, 6000));
      expect(closed, 'the server closed the idle connection').toBe(false);
      const second = await get();
      expect([first.status, second.status]).toEqual([200, 200]);
      expect(second.port, 'the same connection, reused').toBe(first.port);
    } finally {
      agent.destroy();
    }
  }, 20_000);
});

describe('objects', () => {
  it('creates with uid, creationTimestamp and resourceVersion; AlreadyExists, Conflict and NotFound as the real server', async () => {
    const created = await call(server, 'POST', CM, {
      body: { metadata: { name: 'c1' }, data: { a: '1' } },
    });
    expect(created.status).toBe(201);
    expect(created.body.metadata).toMatchObject({ name: 'c1', namespace: 'default' });
    expect(created.body.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(created.body.metadata.creationTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const again = await call(server, 'POST', CM, { body: { metadata: { name: 'c1' } } });
    expect(again.status).toBe(409);
    expect(again.body).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'configmaps "c1" already exists',
      reason: 'AlreadyExists',
      details: { name: 'c1', kind: 'configmaps' },
      code: 409,
    });
    const stale = {
      ...created.body,
      metadata: { ...created.body.metadata, resourceVersion: '1' },
      data: { a: '2' },
    };
    const conflict = await call(server, 'PUT', `${CM}/c1`, { body: stale });
    expect(conflict.status).toBe(409);
    expect(conflict.body.reason).toBe('Conflict');
    expect(conflict.body.message).toBe(
      'Operation cannot be fulfilled on configmaps "c1": the object has been modified; please apply your changes to the latest version and try again',
    );
    const missing = await call(server, 'GET', `${CM}/nope`);
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({
      message: 'configmaps "nope" not found',
      reason: 'NotFound',
      details: { name: 'nope', kind: 'configmaps' },
    });
    const lease = await call(
      server,
      'GET',
      '/apis/coordination.k8s.io/v1/namespaces/default/leases/x',
    );
    expect(lease.body.message).toBe('leases.coordination.k8s.io "x" not found');
    expect(lease.body.details).toEqual({ name: 'x', group: 'coordination.k8s.io', kind: 'leases' });
  });

  it('does not bump resourceVersion for a no-op update, and deletes with a Success Status (the object for pods)', async () => {
    const c = (
      await call(server, 'POST', CM, { body: { metadata: { name: 'c2' }, data: { a: '1' } } })
    ).body;
    const same = await call(server, 'PUT', `${CM}/c2`, { body: c });
    expect(same.body.metadata.resourceVersion).toBe(c.metadata.resourceVersion);
    const del = await call(server, 'DELETE', `${CM}/c2`);
    expect(del.status).toBe(200);
    expect(del.body).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Success',
      details: { name: 'c2', kind: 'configmaps', uid: c.metadata.uid },
    });
    const pod = await call(server, 'POST', '/api/v1/namespaces/default/pods', {
      body: {
        metadata: { name: 'p' },
        spec: { containers: [{ name: 'c', image: 'busybox:1.36' }] },
      },
    });
    expect(pod.body.spec.containers[0]).toMatchObject({
      imagePullPolicy: 'IfNotPresent',
      terminationMessagePath: '/dev/termination-log',
    });
    expect(pod.body.status.phase).toBe('Pending');
    const gone = await call(server, 'DELETE', '/api/v1/namespaces/default/pods/p');
    expect(gone.body).toMatchObject({ kind: 'Pod', metadata: { name: 'p' } });
  });

  it('refuses a pod without containers with 422 Invalid', async () => {
    const r = await call(server, 'POST', '/api/v1/namespaces/default/pods', {
      body: { metadata: { name: 'bad' }, spec: {} },
    });
    expect(r.status).toBe(422);
    expect(r.body.message).toBe('Pod "bad" is invalid: spec.containers: Required value');
    expect(r.body.details).toEqual({
      name: 'bad',
      kind: 'Pod',
      causes: [
        { reason: 'FieldValueRequired', message: 'Required value', field: 'spec.containers' },
      ],
    });
  });

  it('creating in a missing namespace is NotFound on the namespace', async () => {
    const r = await call(server, 'POST', '/api/v1/namespaces/ghost/configmaps', {
      body: { metadata: { name: 'x' } },
    });
    expect(r.status).toBe(404);
    expect(r.body.message).toBe('namespaces "ghost" not found');
  });
});

describe('custom resources', () => {
  it('applies schema defaults, validates, and bumps generation on spec changes only', async () => {
    const r = await call(server, 'POST', W, { body: widget('g1') });
    expect(r.status).toBe(201);
    expect(r.body.spec).toEqual({ color: 'red', size: 3 });
    expect(r.body.metadata.generation).toBe(1);
    const labelled = await call(server, 'PATCH', `${W}/g1`, {
      body: { metadata: { labels: { a: 'b' } } },
      contentType: 'application/merge-patch+json',
    });
    expect(labelled.body.metadata.generation).toBe(1);
    const resized = await call(server, 'PATCH', `${W}/g1`, {
      body: { spec: { size: 7 } },
      contentType: 'application/merge-patch+json',
    });
    expect(resized.body.metadata.generation).toBe(2);
    const bad = await call(server, 'POST', W, { body: widget('g2', { color: 'pink', size: 0 }) });
    expect(bad.status).toBe(422);
    expect(bad.body.message).toBe(
      'Widget.example.com "g2" is invalid: [spec.color: Unsupported value: "pink": supported values: "red", "green", "blue", spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1]',
    );
    const typed = await call(server, 'POST', W, {
      body: widget('g3', { color: 'red', size: 'big' }),
    });
    expect(typed.body.details.causes[0]).toEqual({
      reason: 'FieldValueTypeInvalid',
      message: 'Invalid value: "big": spec.size in body must be of type integer: "string"',
      field: 'spec.size',
    });
    const required = await call(server, 'POST', W, { body: widget('g4', {}) });
    expect(required.body.message).toBe(
      'Widget.example.com "g4" is invalid: spec.color: Required value',
    );
  });

  it('prunes unknown fields: 400 under Strict, a Warning header under the default Warn', async () => {
    const strict = await call(server, 'POST', `${W}?fieldValidation=Strict`, {
      body: widget('u1', { color: 'red', shade: 'dark' }),
    });
    expect(strict.status).toBe(400);
    expect(strict.body.message).toBe(
      'Widget in version "v1" cannot be handled as a Widget: strict decoding error: unknown field "spec.shade"',
    );
    const warn = await call(server, 'POST', W, {
      body: widget('u2', { color: 'red', shade: 'dark' }),
    });
    expect(warn.status).toBe(201);
    expect(warn.headers.warning).toBe('299 - "unknown field \\"spec.shade\\""');
    expect(warn.body.spec.shade).toBeUndefined();
  });

  it('requires resourceVersion on PUT, and answers strategic merge patch with 415', async () => {
    const c = (await call(server, 'POST', W, { body: widget('v1') })).body;
    const put = await call(server, 'PUT', `${W}/v1`, { body: { ...c, metadata: { name: 'v1' } } });
    expect(put.status).toBe(422);
    expect(put.body.message).toBe(
      'widgets.example.com "v1" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update',
    );
    const smp = await call(server, 'PATCH', `${W}/v1`, {
      body: { spec: { size: 4 } },
      contentType: 'application/strategic-merge-patch+json',
    });
    expect(smp.status).toBe(415);
    expect(smp.body).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message:
        'the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml',
      reason: 'UnsupportedMediaType',
      code: 415,
    });
  });

  it('keeps status out of main writes and spec out of status writes', async () => {
    const c = (
      await call(server, 'POST', W, { body: { ...widget('s1'), status: { phase: 'Set' } } })
    ).body;
    expect(c.status).toBeUndefined();
    const st = await call(server, 'PATCH', `${W}/s1/status`, {
      body: { spec: { color: 'blue' }, status: { phase: 'Ready' } },
      contentType: 'application/merge-patch+json',
    });
    expect(st.body.status).toEqual({ phase: 'Ready' });
    expect(st.body.spec.color).toBe('red');
    expect(st.body.metadata.generation).toBe(1);
    const main = await call(server, 'PATCH', `${W}/s1`, {
      body: { spec: { color: 'green' }, status: { phase: 'Lost' } },
      contentType: 'application/merge-patch+json',
    });
    expect(main.body.status).toEqual({ phase: 'Ready' });
    expect(main.body.spec.color).toBe('green');
  });

  it('serves printer columns as a Table', async () => {
    const t = await call(server, 'GET', `${W}/g1`, {
      accept: 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json',
    });
    expect(t.body.kind).toBe('Table');
    expect(t.body.columnDefinitions.map((c: { name: string }) => c.name)).toEqual([
      'Name',
      'Size',
      'Phase',
      'Age',
    ]);
    expect(t.body.rows[0].cells.slice(0, 3)).toEqual(['g1', 7, null]);
    expect(t.body.rows[0].object).toMatchObject({
      kind: 'PartialObjectMetadata',
      apiVersion: 'meta.k8s.io/v1',
      metadata: { name: 'g1' },
    });
  });
});

describe('patches', () => {
  it('applies JSON patch, and a failing test op is 422', async () => {
    await call(server, 'POST', CM, { body: { metadata: { name: 'jp' }, data: { a: '1' } } });
    const ok = await call(server, 'PATCH', `${CM}/jp`, {
      body: [
        { op: 'add', path: '/data/b', value: '2' },
        { op: 'remove', path: '/data/a' },
      ],
      contentType: 'application/json-patch+json',
    });
    expect(ok.body.data).toEqual({ b: '2' });
    const bad = await call(server, 'PATCH', `${CM}/jp`, {
      body: [{ op: 'test', path: '/data/b', value: 'x' }],
      contentType: 'application/json-patch+json',
    });
    expect(bad.status).toBe(422);
    expect(bad.body.reason).toBe('Invalid');
  });

  it('merges keyed lists with strategic merge patch on built-ins', async () => {
    await call(server, 'POST', '/api/v1/namespaces/default/pods', {
      body: {
        metadata: { name: 'smp' },
        spec: {
          containers: [
            { name: 'a', image: 'x:1' },
            { name: 'b', image: 'y:1' },
          ],
        },
      },
    });
    const r = await call(server, 'PATCH', '/api/v1/namespaces/default/pods/smp', {
      body: {
        metadata: { finalizers: ['f/1'] },
        spec: { containers: [{ name: 'b', image: 'y:2' }] },
      },
      contentType: 'application/strategic-merge-patch+json',
    });
    expect(
      r.body.spec.containers.map((c: { name: string; image: string }) => `${c.name}=${c.image}`),
    ).toEqual(['a=x:1', 'b=y:2']);
    const r2 = await call(server, 'PATCH', '/api/v1/namespaces/default/pods/smp', {
      body: { metadata: { finalizers: ['f/2'], '$deleteFromPrimitiveList/finalizers': ['f/1'] } },
      contentType: 'application/strategic-merge-patch+json',
    });
    expect(r2.body.metadata.finalizers).toEqual(['f/2']);
  });
});

describe('server-side apply', () => {
  const apply = (body: object, manager: string, force = false) =>
    call(server, 'PATCH', `${W}/ssa?fieldManager=${manager}${force ? '&force=true' : ''}`, {
      body,
      contentType: 'application/apply-patch+yaml',
    });

  it('creates, records managers, answers conflicts with 409, takes over with force, and removes dropped fields', async () => {
    const first = await apply(widget('ssa', { color: 'red', size: 2, labels: { a: 'x' } }), 'one');
    expect(first.status).toBe(201);
    expect(first.body.metadata.managedFields[0]).toMatchObject({
      manager: 'one',
      operation: 'Apply',
      apiVersion: 'example.com/v1',
      fieldsType: 'FieldsV1',
      fieldsV1: { 'f:spec': { 'f:color': {}, 'f:size': {}, 'f:labels': { 'f:a': {} } } },
    });
    const clash = await apply(widget('ssa', { color: 'blue' }), 'two');
    expect(clash.status).toBe(409);
    expect(clash.body).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'Apply failed with 1 conflict: conflict with "one": .spec.color',
      reason: 'Conflict',
      details: {
        causes: [
          { reason: 'FieldManagerConflict', message: 'conflict with "one"', field: '.spec.color' },
        ],
      },
      code: 409,
    });
    const same = await apply(widget('ssa', { color: 'red' }), 'two');
    expect(same.status).toBe(200);
    const forced = await apply(widget('ssa', { color: 'blue' }), 'two', true);
    expect(forced.body.spec.color).toBe('blue');
    const dropped = await apply(widget('ssa', { color: 'red', labels: { a: 'x' } }), 'one', true);
    expect(dropped.body.spec.size).toBe(3);
    // "two" owned only spec.color, which "one" took back: its entry is gone.
    const managers = dropped.body.metadata.managedFields.map((m: { manager: string }) => m.manager);
    expect(managers).toEqual(['one']);
  });

  it('requires a fieldManager', async () => {
    const r = await call(server, 'PATCH', `${W}/ssa`, {
      body: widget('ssa'),
      contentType: 'application/apply-patch+yaml',
    });
    expect(r.status).toBe(422);
    expect(r.body.message).toBe(
      'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
    );
  });
});

describe('MicroTime', () => {
  const lease = (renewTime: string) => ({
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name: `l${renewTime.length}` },
    spec: { holderIdentity: 'me', leaseDurationSeconds: 15, renewTime },
  });

  it('refuses a renewTime with 3 fractional digits with 400, as the real server', async () => {
    const r = await call(server, 'POST', '/apis/coordination.k8s.io/v1/namespaces/default/leases', {
      body: lease('2025-01-01T00:00:00.123Z'),
    });
    expect(r.status).toBe(400);
    expect(r.body.message).toBe(
      'Lease in version "v1" cannot be handled as a Lease: parsing time "2025-01-01T00:00:00.123Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse ".123Z" as ".000000"',
    );
    const ok = await call(
      server,
      'POST',
      '/apis/coordination.k8s.io/v1/namespaces/default/leases',
      { body: lease('2025-01-01T00:00:00.123456Z') },
    );
    expect(ok.status).toBe(201);
  });
});

describe('graceful deletion of pods', () => {
  const P = '/api/v1/namespaces/default/pods';
  const pod = (name: string, extra: Record<string, unknown> = {}) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: { containers: [{ name: 'app', image: 'squid:6' }], ...extra },
  });
  /** Whether an RFC 3339 time (whole seconds) lies `s` seconds after some moment in [from, to]. */
  const inAbout = (time: string, s: number, from: number, to: number) => {
    const t = Date.parse(time) - s * 1000;
    return t >= Math.floor(from / 1000) * 1000 && t <= to;
  };

  it('keeps a scheduled pod terminating for its grace period, which a later delete may only shorten', async () => {
    await call(server, 'POST', P, { body: pod('graceful', { nodeName: 'node-a' }) });
    const t0 = Date.now();
    const del = await call(server, 'DELETE', `${P}/graceful`);
    const t1 = Date.now();
    expect(del.status).toBe(200);
    expect(del.body.metadata.deletionGracePeriodSeconds).toBe(30);
    expect(inAbout(del.body.metadata.deletionTimestamp, 30, t0, t1)).toBe(true);
    const table = await call(server, 'GET', `${P}/graceful`, {
      accept: 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json',
    });
    expect(table.body.rows[0].cells[2]).toBe('Terminating');
    // A longer period changes nothing; a shorter one moves the deadline.
    const longer = await call(server, 'DELETE', `${P}/graceful?gracePeriodSeconds=60`);
    expect(longer.body.metadata.deletionGracePeriodSeconds).toBe(30);
    const shorter = await call(server, 'DELETE', `${P}/graceful`, {
      body: { kind: 'DeleteOptions', apiVersion: 'v1', gracePeriodSeconds: 5 },
    });
    expect(shorter.body.metadata.deletionGracePeriodSeconds).toBe(5);
    // Counted from the first delete, not from this one.
    expect(inAbout(shorter.body.metadata.deletionTimestamp, 5, t0, t1)).toBe(true);
    // A status write by the kubelet meanwhile does not let it go.
    const status = await call(server, 'PATCH', `${P}/graceful/status`, {
      body: { status: { phase: 'Running' } },
      contentType: 'application/merge-patch+json',
    });
    expect(status.status).toBe(200);
    expect((await call(server, 'GET', `${P}/graceful`)).status).toBe(200);
    // The kubelet's final delete, with 0.
    expect((await call(server, 'DELETE', `${P}/graceful?gracePeriodSeconds=0`)).status).toBe(200);
    expect((await call(server, 'GET', `${P}/graceful`)).status).toBe(404);
  });

  it('deletes an unscheduled or finished pod at once', async () => {
    await call(server, 'POST', P, { body: pod('pending') });
    expect((await call(server, 'DELETE', `${P}/pending`)).status).toBe(200);
    expect((await call(server, 'GET', `${P}/pending`)).status).toBe(404);
    await call(server, 'POST', P, { body: pod('done', { nodeName: 'node-a' }) });
    await call(server, 'PATCH', `${P}/done/status`, {
      body: { status: { phase: 'Succeeded' } },
      contentType: 'application/merge-patch+json',
    });
    expect((await call(server, 'DELETE', `${P}/done`)).status).toBe(200);
    expect((await call(server, 'GET', `${P}/done`)).status).toBe(404);
  });
});

describe('finalizers and owners', () => {
  it('holds a deleted object until its finalizers are gone', async () => {
    await call(server, 'POST', W, {
      body: widget('fin', { color: 'red' }, { finalizers: ['example.com/hold'] }),
    });
    const w = openWatch(server, `${W}?watch=true&fieldSelector=metadata.name%3Dfin`);
    await w.waitFor(1);
    const del = await call(server, 'DELETE', `${W}/fin`);
    expect(del.status).toBe(200);
    expect(del.body.metadata.deletionTimestamp).toBeDefined();
    expect((await call(server, 'GET', `${W}/fin`)).status).toBe(200);
    const added = await call(server, 'PATCH', `${W}/fin`, {
      body: { metadata: { finalizers: ['example.com/hold', 'example.com/more'] } },
      contentType: 'application/merge-patch+json',
    });
    expect(added.status).toBe(422);
    expect(added.body.message).toContain(
      'no new finalizers can be added if the object is being deleted',
    );
    await call(server, 'PATCH', `${W}/fin`, {
      body: { metadata: { finalizers: null } },
      contentType: 'application/merge-patch+json',
    });
    expect((await call(server, 'GET', `${W}/fin`)).status).toBe(404);
    await w.waitFor(3);
    expect(w.events.map((e) => e.type)).toEqual(['ADDED', 'MODIFIED', 'DELETED']);
    w.stop();
  });

  it('collects dependents in the background, orphans them on request, and deletes them first in the foreground', async () => {
    const owner = (await call(server, 'POST', W, { body: widget('owner') })).body;
    const ref = {
      apiVersion: 'example.com/v1',
      kind: 'Widget',
      name: 'owner',
      uid: owner.metadata.uid,
    };
    await call(server, 'POST', CM, { body: { metadata: { name: 'dep', ownerReferences: [ref] } } });
    await call(server, 'DELETE', `${W}/owner`);
    await server.settled();
    expect((await call(server, 'GET', `${CM}/dep`)).status).toBe(404);

    const o2 = (await call(server, 'POST', W, { body: widget('owner2') })).body;
    await call(server, 'POST', CM, {
      body: {
        metadata: {
          name: 'dep2',
          ownerReferences: [{ ...ref, name: 'owner2', uid: o2.metadata.uid }],
        },
      },
    });
    await call(server, 'DELETE', `${W}/owner2?propagationPolicy=Orphan`);
    await server.settled();
    const kept = await call(server, 'GET', `${CM}/dep2`);
    expect(kept.status).toBe(200);
    expect(kept.body.metadata.ownerReferences).toBeUndefined();

    const o3 = (await call(server, 'POST', W, { body: widget('owner3') })).body;
    await call(server, 'POST', CM, {
      body: {
        metadata: {
          name: 'dep3',
          finalizers: ['x/y'],
          ownerReferences: [{ ...ref, name: 'owner3', uid: o3.metadata.uid }],
        },
      },
    });
    const fg = await call(server, 'DELETE', `${W}/owner3`, {
      body: { propagationPolicy: 'Foreground' },
    });
    expect(fg.body.metadata.finalizers).toEqual(['foregroundDeletion']);
    await server.settled();
    expect((await call(server, 'GET', `${W}/owner3`)).status).toBe(200);
    await call(server, 'PATCH', `${CM}/dep3`, {
      body: { metadata: { finalizers: null } },
      contentType: 'application/merge-patch+json',
    });
    await server.settled();
    expect((await call(server, 'GET', `${W}/owner3`)).status).toBe(404);
  });
});

describe('lists', () => {
  it('filters by label and field selectors and pages with limit and continue', async () => {
    for (const n of ['l1', 'l2', 'l3'])
      await call(server, 'POST', '/api/v1/namespaces/kube-public/configmaps', {
        body: { metadata: { name: n, labels: { tier: n === 'l2' ? 'b' : 'a' } } },
      });
    const base = '/api/v1/namespaces/kube-public/configmaps';
    const byLabel = (await call(server, 'GET', `${base}?labelSelector=tier%3Da`)).body;
    expect(byLabel.items.map((i: { metadata: { name: string } }) => i.metadata.name)).toEqual([
      'l1',
      'l3',
    ]);
    expect(byLabel.kind).toBe('ConfigMapList');
    const setBased = (await call(server, 'GET', `${base}?labelSelector=tier%20notin%20(a)`)).body;
    expect(setBased.items.map((i: { metadata: { name: string } }) => i.metadata.name)).toEqual([
      'l2',
    ]);
    const byField = (await call(server, 'GET', `${base}?fieldSelector=metadata.name%3Dl3`)).body;
    expect(byField.items).toHaveLength(1);
    const badField = await call(server, 'GET', `${base}?fieldSelector=data.x%3Dy`);
    expect(badField.status).toBe(400);
    expect(badField.body.message).toBe('field label not supported: data.x');
    const page1 = (await call(server, 'GET', `${base}?limit=2`)).body;
    expect(page1.items).toHaveLength(2);
    expect(page1.metadata.remainingItemCount).toBe(1);
    const page2 = (
      await call(
        server,
        'GET',
        `${base}?limit=2&continue=${encodeURIComponent(page1.metadata.continue)}`,
      )
    ).body;
    expect(page2.items.map((i: { metadata: { name: string } }) => i.metadata.name)).toEqual(['l3']);
    expect(page2.metadata.continue).toBeUndefined();
    expect(page2.metadata.resourceVersion).toBe(page1.metadata.resourceVersion);
  });
});

describe('watch', () => {
  it('flushes headers before any event, resumes from a resourceVersion, and answers an expired one with a 410 ERROR event', async () => {
    const list = (await call(server, 'GET', '/api/v1/namespaces/kube-system/configmaps')).body;
    const rv = list.metadata.resourceVersion;
    const w = openWatch(
      server,
      `/api/v1/namespaces/kube-system/configmaps?watch=true&resourceVersion=${rv}`,
    );
    await eventually(() => w.status === 200);
    expect(w.events).toHaveLength(0);
    await call(server, 'POST', '/api/v1/namespaces/kube-system/configmaps', {
      body: { metadata: { name: 'w1' } },
    });
    await w.waitFor(1);
    expect(w.events[0]).toMatchObject({
      type: 'ADDED',
      object: { kind: 'ConfigMap', apiVersion: 'v1', metadata: { name: 'w1' } },
    });
    w.stop();
    const resumed = openWatch(
      server,
      `/api/v1/namespaces/kube-system/configmaps?watch=true&resourceVersion=${rv}`,
    );
    await resumed.waitFor(1);
    expect(resumed.events[0].object.metadata.name).toBe('w1');
    resumed.stop();
    // Strictly after the version given: from w1's own version, w1 is not sent again.
    const after = openWatch(
      server,
      `/api/v1/namespaces/kube-system/configmaps?watch=true&resourceVersion=${w.events[0].object.metadata.resourceVersion}`,
    );
    await eventually(() => after.status === 200);
    await call(server, 'POST', '/api/v1/namespaces/kube-system/configmaps', {
      body: { metadata: { name: 'w2' } },
    });
    await after.waitFor(1);
    expect(after.events.map((e) => e.object.metadata.name)).toEqual(['w2']);
    after.stop();
    server.faults.expireWatchWindow();
    // As after a compaction: the latest version is still served, an earlier one is gone.
    const latest = openWatch(
      server,
      `/api/v1/namespaces/kube-system/configmaps?watch=true&resourceVersion=${server.resourceVersion}`,
    );
    await eventually(() => latest.status === 200);
    expect(latest.events).toEqual([]);
    expect(latest.ended).toBe(false);
    latest.stop();
    const gone = openWatch(
      server,
      `/api/v1/namespaces/kube-system/configmaps?watch=true&resourceVersion=${rv}`,
    );
    await gone.ended$;
    expect(gone.events).toEqual([
      {
        type: 'ERROR',
        object: {
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Failure',
          message: `too old resource version: ${rv} (${server.resourceVersion})`,
          reason: 'Expired',
          code: 410,
        },
      },
    ]);
  });

  it('sends bookmarks only when asked, and ends after timeoutSeconds', async () => {
    // The window was expired above: a write moves past it.
    await call(server, 'POST', '/api/v1/namespaces/kube-node-lease/configmaps', {
      body: { metadata: { name: 'b' } },
    });
    const rv = server.resourceVersion;
    const quiet = openWatch(
      server,
      `/api/v1/namespaces/kube-node-lease/configmaps?watch=true&resourceVersion=${rv}`,
    );
    const chatty = openWatch(
      server,
      `/api/v1/namespaces/kube-node-lease/configmaps?watch=true&allowWatchBookmarks=true&resourceVersion=${rv}&timeoutSeconds=1`,
    );
    await chatty.waitFor(1);
    expect(chatty.events[0]).toMatchObject({
      type: 'BOOKMARK',
      object: { kind: 'ConfigMap', metadata: { resourceVersion: server.resourceVersion } },
    });
    await chatty.ended$;
    expect(quiet.events).toEqual([]);
    expect(quiet.ended).toBe(false);
    quiet.stop();
    // A bookmark's version resumes after it: what comes later, nothing before.
    const bookmark = chatty.events[0].object.metadata.resourceVersion;
    const resumed = openWatch(
      server,
      `/api/v1/namespaces/kube-node-lease/configmaps?watch=true&resourceVersion=${bookmark}`,
    );
    await eventually(() => resumed.status === 200);
    await call(server, 'POST', '/api/v1/namespaces/kube-node-lease/configmaps', {
      body: { metadata: { name: 'after-bookmark' } },
    });
    await resumed.waitFor(1);
    expect(resumed.events.map((e) => [e.type, e.object.metadata.name])).toEqual([
      ['ADDED', 'after-bookmark'],
    ]);
    resumed.stop();
  });

  it('turns a change that leaves a field selector into DELETED', async () => {
    await call(server, 'POST', CM, { body: { metadata: { name: 'sel', labels: { on: 'yes' } } } });
    const w = openWatch(server, `${CM}?watch=true&labelSelector=on%3Dyes`);
    await eventually(() => w.events.some((e) => e.object.metadata.name === 'sel'));
    await call(server, 'PATCH', `${CM}/sel`, {
      body: { metadata: { labels: { on: 'no' } } },
      contentType: 'application/merge-patch+json',
    });
    await eventually(() =>
      w.events.some((e) => e.type === 'DELETED' && e.object.metadata.name === 'sel'),
    );
    w.stop();
  });
});

describe('RBAC', () => {
  it('forbids a service account with the real message, and allows what its Role grants', async () => {
    const token = server.serviceAccountToken('default', 'robot');
    const denied = await call(server, 'GET', `${W}`, { token });
    expect(denied.status).toBe(403);
    expect(denied.body).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message:
        'widgets.example.com is forbidden: User "system:serviceaccount:default:robot" cannot list resource "widgets" in API group "example.com" in the namespace "default"',
      reason: 'Forbidden',
      details: { group: 'example.com', kind: 'widgets' },
      code: 403,
    });
    const ns = await call(server, 'GET', '/api/v1/namespaces', { token });
    expect(ns.body.message).toBe(
      'namespaces is forbidden: User "system:serviceaccount:default:robot" cannot list resource "namespaces" in API group "" at the cluster scope',
    );
    expect((await call(server, 'GET', '/apis', { token })).status).toBe(200);
    await call(server, 'POST', '/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles', {
      body: {
        metadata: { name: 'widgets' },
        rules: [
          { apiGroups: ['example.com'], resources: ['widgets'], verbs: ['get', 'list', 'watch'] },
        ],
      },
    });
    await call(
      server,
      'POST',
      '/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings',
      {
        body: {
          metadata: { name: 'robot-widgets' },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'widgets' },
          subjects: [{ kind: 'ServiceAccount', name: 'robot', namespace: 'default' }],
        },
      },
    );
    expect((await call(server, 'GET', W, { token })).status).toBe(200);
    const status = await call(server, 'PATCH', `${W}/g1/status`, {
      token,
      body: { status: {} },
      contentType: 'application/merge-patch+json',
    });
    expect(status.body.message).toBe(
      'widgets.example.com "g1" is forbidden: User "system:serviceaccount:default:robot" cannot patch resource "widgets/status" in API group "example.com" in the namespace "default"',
    );
    expect(
      (await call(server, 'GET', '/apis/example.com/v1/namespaces/kube-system/widgets', { token }))
        .status,
    ).toBe(403);
  });
});

describe('faults and counters', () => {
  it('answers the next N writes with 409, fails and delays on request, and counts by verb and resource', async () => {
    server.counters.reset();
    server.faults.conflictNextWrites(2, { resource: 'configmaps' });
    const body = { metadata: { name: 'f1' } };
    expect((await call(server, 'POST', CM, { body })).status).toBe(409);
    expect((await call(server, 'POST', CM, { body })).status).toBe(409);
    expect((await call(server, 'POST', CM, { body })).status).toBe(201);
    server.faults.fail(503, { count: 1, filter: { verb: 'get' } });
    const failed = await call(server, 'GET', `${CM}/f1`);
    expect(failed.status).toBe(503);
    expect(failed.body.reason).toBe('InternalError');
    expect((await call(server, 'GET', `${CM}/f1`)).status).toBe(200);
    server.faults.delay(150, { verb: 'get' });
    const t0 = Date.now();
    await call(server, 'GET', `${CM}/f1`);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(140);
    server.faults.reset();
    expect(server.counters.count({ verb: 'create', resource: 'configmaps' })).toBe(3);
    expect(server.counters.count({ verb: 'get', resource: 'configmaps' })).toBe(3);
    expect(server.counters.writes()).toBe(3);
  });

  it('drops every watch at once', async () => {
    const a = openWatch(server, `${CM}?watch=true`);
    const b = openWatch(server, `${W}?watch=true`);
    await eventually(() => a.status === 200 && b.status === 200);
    expect(server.faults.dropWatches()).toBeGreaterThanOrEqual(2);
    await a.ended$;
    await b.ended$;
  });
});

describe('controllers', () => {
  it('empties a deleted namespace, then removes it; creating in it meanwhile is Forbidden', async () => {
    await call(server, 'POST', '/api/v1/namespaces', { body: { metadata: { name: 'doomed' } } });
    await call(server, 'POST', '/api/v1/namespaces/doomed/configmaps', {
      body: { metadata: { name: 'held', finalizers: ['x/y'] } },
    });
    const del = await call(server, 'DELETE', '/api/v1/namespaces/doomed');
    expect(del.body.status.phase).toBe('Terminating');
    await server.settled();
    const blocked = await call(server, 'POST', '/api/v1/namespaces/doomed/configmaps', {
      body: { metadata: { name: 'new' } },
    });
    expect(blocked.status).toBe(403);
    expect(blocked.body.message).toBe(
      'configmaps "new" is forbidden: unable to create new content in namespace doomed because it is being terminated',
    );
    expect((await call(server, 'GET', '/api/v1/namespaces/doomed')).status).toBe(200);
    await call(server, 'PATCH', '/api/v1/namespaces/doomed/configmaps/held', {
      body: { metadata: { finalizers: null } },
      contentType: 'application/merge-patch+json',
    });
    await server.settled();
    expect((await call(server, 'GET', '/api/v1/namespaces/doomed')).status).toBe(404);
  });
});
