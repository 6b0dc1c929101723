// Peer: the Kubernetes API test server, through the real @kubernetes/client-node, behind the HTTPS
// front of test/support, with its garbage collector; the harness plays scheduler and kubelet.
// Proxy credentials as the cluster stores them: the password file's Secret beside its Pod, a
// retried or mismatched Create, UpdateAuth and its refusals, and the password file never in a log
// line, a span or an error.
import { inspect } from 'node:util';
import { type CreateRequest, isNotFound, type ProxyAuth } from '@proxy-op/contract';
import { createLogSink, createSpanRecorder, leakedIn } from '@proxy-op/providertest';
import { afterEach, describe, expect, it } from 'vitest';
import { admin, adminOk } from './support/admin.js';
import {
  createKubeFixture,
  type KubeFixture,
  PASSWORD_FILE_SENTINEL,
  proxyRequest,
  SENTINEL_PASSWORD_FILE,
} from './support/fixture.js';

let fixtures: KubeFixture[] = [];
afterEach(async () => {
  for (const f of fixtures) await f.cleanup?.();
  fixtures = [];
});

async function fixture(deps: Parameters<typeof createKubeFixture>[0] = {}): Promise<KubeFixture> {
  const f = await createKubeFixture(deps);
  fixtures.push(f);
  return f;
}

const REALM = 'proxy-op default/web';
const auth = (text = SENTINEL_PASSWORD_FILE, realm = REALM): ProxyAuth => ({
  realm,
  passwordFile: new TextEncoder().encode(text),
});

let n = 0;
function request(patch: Partial<CreateRequest> = {}): CreateRequest {
  n++;
  return proxyRequest(`proxy-auth-${n}`, { auth: auth(), ...patch });
}

// biome-ignore lint/suspicious/noExplicitAny: stored objects are read as plain JSON
type Json = any;

const stored = (f: KubeFixture, resource: string, name: string): Json =>
  f.server.objects('', resource, 'default').find((o) => (o.metadata as Json).name === name);
const passwd = (secret: Json) => Buffer.from(secret.data.passwd, 'base64').toString('utf8');
const secretPath = (name: string) => `/api/v1/namespaces/default/secrets/${name}-auth`;

describe('the password file on the cluster', () => {
  it('is an Opaque Secret with one key, owned by the Pod and carrying its mark, mounted as a directory', async () => {
    const f = await fixture();
    f.front.onPodCreated = undefined; // no scheduler: only the provider's requests are counted
    f.server.counters.reset();
    const req = request();
    await f.provider.create(req);
    expect(f.server.counters.count(), 'requests: read Pod, create Pod, create Secret').toBe(3);
    expect(f.server.counters.writes({ resource: 'secrets' })).toBe(1);
    const pod = stored(f, 'pods', req.name);
    const secret = stored(f, 'secrets', `${req.name}-auth`);
    expect(secret.type).toBe('Opaque');
    expect(Object.keys(secret.data)).toEqual(['passwd']);
    expect(passwd(secret)).toBe(SENTINEL_PASSWORD_FILE);
    expect(secret.metadata.ownerReferences).toEqual([
      { apiVersion: 'v1', kind: 'Pod', name: req.name, uid: pod.metadata.uid, controller: true },
    ]);
    expect(secret.metadata.labels).toMatchObject({
      'proxy-operator-managed': 'true',
      'proxy-operator-uid': req.uid,
      'proxy-operator-installation': 'default',
      'app.kubernetes.io/managed-by': 'proxy-op',
    });
    expect(pod.spec.volumes).toContainEqual({
      name: 'squid-auth',
      secret: {
        secretName: `${req.name}-auth`,
        defaultMode: 0o440,
        items: [{ key: 'passwd', path: 'passwd' }],
      },
    });
    const mount = pod.spec.containers[0].volumeMounts.find((m: Json) => m.name === 'squid-auth');
    expect(mount).toEqual({ name: 'squid-auth', mountPath: '/etc/squid/auth', readOnly: true });
    expect(pod.spec.securityContext.fsGroup).toBe(65534);
    const conf = pod.metadata.annotations['proxy-op.io/squid.conf'];
    expect(conf).toContain(
      'auth_param basic program /usr/lib/squid/basic_ncsa_auth /etc/squid/auth/passwd',
    );
    expect(conf).toContain(`auth_param basic realm ${REALM}`);
    expect(conf).toContain('auth_param basic credentialsttl 60 seconds');

    f.server.counters.reset();
    await f.provider.create(req);
    expect(f.server.counters.writes(), 'writes of a repeat Create').toBe(0);
    expect(f.server.counters.count(), 'requests of a repeat Create: the Pod, the Secret').toBe(2);
  });

  it('goes with its Pod: the garbage collector removes it once the Pod is deleted', async () => {
    const f = await fixture();
    const req = request();
    const id = await f.provider.create(req);
    await f.provider.delete(id);
    await f.kubelet.settle();
    expect(stored(f, 'pods', req.name)).toBeUndefined();
    expect(stored(f, 'secrets', `${req.name}-auth`)).toBeUndefined();
  });

  it('a retried Create completes a Secret that never came, and one that holds another file', async () => {
    const f = await fixture();
    const req = request();
    await f.provider.create(req);
    // A Create that stopped after the Pod: the Secret was never made.
    await adminOk(f.server, 'DELETE', secretPath(req.name));
    await f.provider.create(req);
    expect(passwd(stored(f, 'secrets', `${req.name}-auth`))).toBe(SENTINEL_PASSWORD_FILE);
    await f.provider.create({ ...req, auth: auth('bob:$6$x$y\n') });
    expect(passwd(stored(f, 'secrets', `${req.name}-auth`))).toBe('bob:$6$x$y\n');
  });

  it('a Secret with the name that is not the proxy’s is Permanent and left alone', async () => {
    const f = await fixture();
    const req = request();
    await adminOk(f.server, 'POST', '/api/v1/namespaces/default/secrets', {
      body: { metadata: { name: `${req.name}-auth` }, data: { other: 'eA==' } },
    });
    const err = await f.provider.create(req).catch((e: unknown) => e);
    expect(err).toMatchObject({ errorClass: 'Permanent' });
    expect(String(err)).toMatch(
      /Secret default\/proxy-auth-\d+-auth exists and is not this proxy's/,
    );
    expect(stored(f, 'secrets', `${req.name}-auth`).data).toEqual({ other: 'eA==' });
  });

  it('a Pod asking for other credentials is replaced: Transient until it is gone, then made anew', async () => {
    const f = await fixture();
    const plain = request({ auth: undefined });
    const id = await f.provider.create(plain);
    const withAuth = { ...plain, auth: auth() };
    const err = await f.provider.create(withAuth).catch((e: unknown) => e);
    expect(err).toMatchObject({ errorClass: 'Transient' });
    expect(stored(f, 'pods', plain.name).metadata.deletionTimestamp).toBeDefined();
    await f.kubelet.settle();
    expect(await f.provider.create(withAuth)).toBe(id);
    expect(stored(f, 'pods', plain.name).spec.volumes.map((v: Json) => v.name)).toContain(
      'squid-auth',
    );
    // Another realm is another configuration too.
    const other = await f.provider
      .create({ ...withAuth, auth: auth(undefined, 'another') })
      .catch((e: unknown) => e);
    expect(other).toMatchObject({ errorClass: 'Transient' });
  });
});

describe('UpdateAuth', () => {
  it('replaces the Secret’s file (with its resourceVersion); the same file again writes nothing', async () => {
    const f = await fixture();
    const req = request();
    const id = await f.provider.create(req);
    const before = stored(f, 'secrets', `${req.name}-auth`);
    f.server.counters.reset();
    await f.provider.updateAuth!(id, auth('alice:$6$a$b\nbob:$6$c$d\n'));
    expect(f.server.counters.writes({ resource: 'secrets' })).toBe(1);
    expect(f.server.counters.count({ verb: 'update', resource: 'secrets' })).toBe(1);
    const after = stored(f, 'secrets', `${req.name}-auth`);
    expect(passwd(after)).toBe('alice:$6$a$b\nbob:$6$c$d\n');
    expect(after.metadata.resourceVersion).not.toBe(before.metadata.resourceVersion);
    expect(after.metadata.uid).toBe(before.metadata.uid);
    f.server.counters.reset();
    await f.provider.updateAuth!(id, auth('alice:$6$a$b\nbob:$6$c$d\n'));
    expect(f.server.counters.writes()).toBe(0);
    // Someone wrote it between the read and the write: Transient, for the caller to try again.
    f.server.faults.conflictNextWrites(1, { resource: 'secrets' });
    const conflict = await f.provider.updateAuth!(id, auth('dave:$6$i$j\n')).catch(
      (e: unknown) => e,
    );
    expect(conflict).toMatchObject({ errorClass: 'Transient' });
    await f.provider.updateAuth!(id, auth('dave:$6$i$j\n'));
    expect(passwd(stored(f, 'secrets', `${req.name}-auth`))).toBe('dave:$6$i$j\n');
  });

  it('is NotFound for a gone Pod, Permanent for one without credentials or with another realm', async () => {
    const f = await fixture();
    const gone = await f.provider.updateAuth!('default/proxy-never-made', auth()).catch(
      (e: unknown) => e,
    );
    expect(isNotFound(gone)).toBe(true);
    const plain = await f.provider.create(request({ auth: undefined }));
    const without = await f.provider.updateAuth!(plain, auth()).catch((e: unknown) => e);
    expect(without).toMatchObject({ errorClass: 'Permanent', op: 'updateAuth' });
    expect(String(without)).toMatch(/created without authentication/);
    const id = await f.provider.create(request());
    const realm = await f.provider.updateAuth!(id, auth(undefined, 'another')).catch(
      (e: unknown) => e,
    );
    expect(realm).toMatchObject({ errorClass: 'Permanent' });
    const malformed = await f.provider.updateAuth!('not/an/id', auth()).catch((e: unknown) => e);
    expect(malformed).toMatchObject({ errorClass: 'Permanent' });
  });

  it('makes the Secret again when it is missing', async () => {
    const f = await fixture();
    const req = request();
    const id = await f.provider.create(req);
    await adminOk(f.server, 'DELETE', secretPath(req.name));
    await f.provider.updateAuth!(id, auth('carol:$6$e$f\n'));
    expect(passwd(stored(f, 'secrets', `${req.name}-auth`))).toBe('carol:$6$e$f\n');
  });
});

describe('the password file never leaks', () => {
  it('in no log line, span or error, in any encoding, through Create, UpdateAuth and their failures', async () => {
    const logs = createLogSink();
    const spans = createSpanRecorder();
    const f = await fixture({ logger: logs.logger, tracer: spans.tracer });
    const errors: unknown[] = [];
    const keep = (p: Promise<unknown>) =>
      p.then(
        () => undefined,
        (e: unknown) => errors.push(e),
      );
    const req = request();
    const id = await f.provider.create(req);
    await f.provider.create(req);
    await f.provider.updateAuth!(id, auth(`${SENTINEL_PASSWORD_FILE}second:$6$g$h\n`));
    // A Secret someone else holds, an answer that cannot be read, a Pod without credentials.
    const foreign = request();
    await adminOk(f.server, 'POST', '/api/v1/namespaces/default/secrets', {
      body: { metadata: { name: `${foreign.name}-auth` } },
    });
    await keep(f.provider.create(foreign));
    f.front.injectMalformed();
    await keep(f.provider.updateAuth!(id, auth()));
    await keep(
      f.provider.updateAuth!(await f.provider.create(request({ auth: undefined })), auth()),
    );
    // The API server refusing the Secret (a size limit, say) while it stores the Pod.
    f.server.faults.fail(422, {
      reason: 'Invalid',
      message: 'Secret "x" is invalid: data: Too long: must have at most 1048576 bytes',
      filter: { verb: 'update', resource: 'secrets' },
    });
    await keep(f.provider.updateAuth!(id, auth()));
    f.server.faults.reset();
    expect(errors.length).toBeGreaterThanOrEqual(4);
    for (const err of errors) {
      // The message, the fields and the cause chain, as anyone printing the error sees them.
      const shown = `${String(err)}\n${inspect(err, { depth: 8 })}`;
      expect(leakedIn(shown, PASSWORD_FILE_SENTINEL), 'in an error').toBeUndefined();
    }
    expect(leakedIn(logs.text(), PASSWORD_FILE_SENTINEL), 'in the logs').toBeUndefined();
    expect(leakedIn(spans.text(), PASSWORD_FILE_SENTINEL), 'in the spans').toBeUndefined();
    // The check can fail: the Secret as stored holds it (base64, which leakedIn decodes).
    const secret = await admin(f.server, 'GET', secretPath(req.name));
    expect(leakedIn(secret.text, PASSWORD_FILE_SENTINEL)).toBe('base64');
  });
});
