// Peer: the server itself over HTTPS (node:https): protobuf request bodies, held to the real API
// server's create/update handlers (k8s.io/apiserver handlers/create.go, rest.go) and negotiation.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { KubeTestServer } from '../src/index.js';
import { call, createCrd } from './helpers.js';
import {
  CONFIGMAP_X,
  hex,
  NAMESPACE_PROBE,
  SECRET_S,
  SERVICEACCOUNT_SA,
} from './protobuf-fixtures.js';

const PROTOBUF = 'application/vnd.kubernetes.protobuf';
/** What kubectl 1.32 and client-go send. */
const KUBECTL_ACCEPT = 'application/vnd.kubernetes.protobuf,application/json';
const NS = '/api/v1/namespaces';
const CM = '/api/v1/namespaces/default/configmaps';
const crd = parse(readFileSync(new URL('fixtures/widgets-crd.yaml', import.meta.url), 'utf8'));

let server: KubeTestServer;

beforeAll(async () => {
  server = await KubeTestServer.start();
  await createCrd(server, crd);
});

afterAll(async () => {
  await server.stop();
});

const post = (path: string, body: Uint8Array, accept = KUBECTL_ACCEPT) =>
  call(server, 'POST', path, { body, contentType: PROTOBUF, accept });

/** A length-delimited field: tag byte, one-byte length, payload (hex). */
const ld = (tag: string, payload: string) =>
  `${tag}${(payload.replace(/\s+/g, '').length / 2).toString(16).padStart(2, '0')}${payload}`;
const text = (s: string) => Buffer.from(s).toString('hex');

/** `k8s\0`, then an Unknown with typeMeta `v1 <kind>` and `raw` (hex). */
const envelope = (kind: string, raw: string) =>
  hex(`6b387300${ld('0a', ld('0a', text('v1')) + ld('12', text(kind)))}${ld('12', raw)}`);

/** The Status a 400 or 415 answers. */
const status = (code: number, reason: string, message: string) => ({
  kind: 'Status',
  apiVersion: 'v1',
  metadata: {},
  status: 'Failure',
  message,
  reason,
  code,
});

describe('protobuf create bodies', () => {
  it('creates each kind kubectl create sends, answering in JSON', async () => {
    const ns = await post(NS, NAMESPACE_PROBE);
    expect(ns.status).toBe(201);
    expect(ns.headers['content-type']).toBe('application/json');
    expect(ns.body).toMatchObject({
      kind: 'Namespace',
      metadata: { name: 'probe', labels: { 'kubernetes.io/metadata.name': 'probe' } },
      spec: { finalizers: ['kubernetes'] },
      status: { phase: 'Active' },
    });
    expect(ns.body.metadata.managedFields[0]).toMatchObject({ operation: 'Update' });

    const cm = await post(CM, CONFIGMAP_X);
    expect(cm.status).toBe(201);
    expect(cm.body).toMatchObject({
      data: { a: 'b', 'app.conf': 'x=1\n' },
      binaryData: { 'blob.bin': '/wD+' },
      metadata: { name: 'x', namespace: 'default' },
    });

    const secret = await post('/api/v1/namespaces/default/secrets', SECRET_S);
    expect(secret.status).toBe(201);
    expect(secret.body.type).toBe('Opaque');
    expect(Buffer.from(secret.body.data.password, 'base64').toString()).toBe('not-a-real-password');

    const sa = await post('/api/v1/namespaces/default/serviceaccounts', SERVICEACCOUNT_SA);
    expect(sa.status).toBe(201);
    expect(sa.body.metadata).toMatchObject({ name: 'sa', namespace: 'default' });
  });

  it('dry-runs a create without storing it, and answers */* in JSON', async () => {
    const dry = await call(server, 'POST', `${NS}?dryRun=All`, {
      body: envelope('Namespace', ld('0a', ld('0a', text('dry')))),
      contentType: PROTOBUF,
      accept: `${PROTOBUF}, */*`,
    });
    expect(dry.status).toBe(201);
    expect(dry.body.metadata.name).toBe('dry');
    expect((await call(server, 'GET', `${NS}/dry`)).status).toBe(404);
  });

  it('replaces an object from a protobuf PUT', async () => {
    const created = await post(CM, envelope('ConfigMap', ld('0a', ld('0a', text('put')))));
    const rv = created.body.metadata.resourceVersion as string;
    const put = await call(server, 'PUT', `${CM}/put`, {
      body: envelope(
        'ConfigMap',
        ld('0a', ld('0a', text('put')) + ld('32', text(rv))) + // metadata: name, resourceVersion
          ld('12', ld('0a', text('k')) + ld('12', text('v'))), // data k=v
      ),
      contentType: PROTOBUF,
      accept: KUBECTL_ACCEPT,
    });
    expect(put.status).toBe(200);
    expect(put.body.data).toEqual({ k: 'v' });
  });

  it('answers a body that is not protobuf, or is cut short, with the 400 of the real handler', async () => {
    const json = await post(
      NS,
      Buffer.from('{"kind":"Namespace","apiVersion":"v1","metadata":{}}'),
    );
    expect(json.status).toBe(400);
    expect(json.body).toEqual(
      status(
        400,
        'BadRequest',
        'the object provided is unrecognized (must be of type Namespace): provided data does not appear to be a protobuf message, expected prefix [107 56 115 0] ({"kind":"Namespace","apiVersio ...)',
      ),
    );
    const cut = await post(NS, NAMESPACE_PROBE.subarray(0, 30));
    expect(cut.body).toEqual(
      status(
        400,
        'BadRequest',
        `the object provided is unrecognized (must be of type Namespace): unexpected EOF (${NAMESPACE_PROBE.subarray(0, 30).toString('hex')})`,
      ),
    );
    const empty = await post(NS, Buffer.alloc(0));
    expect(empty.body.message).toBe(
      'the object provided is unrecognized (must be of type Namespace): empty data (<empty>)',
    );
    const inner = await post(
      NS,
      envelope(
        'Namespace',
        '0a05 0a03', // metadata, length 5, with two bytes
      ),
    );
    expect(inner.body).toEqual(
      status(
        400,
        'BadRequest',
        'Namespace in version "v1" cannot be handled as a Namespace: unexpected EOF',
      ),
    );
    const wrongType = await post(
      NS,
      envelope(
        'Namespace',
        ld('0a', '0801'), // metadata: field 1 (name) as a varint
      ),
    );
    expect(wrongType.body.message).toBe(
      'Namespace in version "v1" cannot be handled as a Namespace: proto: wrong wireType = 0 for field Name',
    );
  });

  it('answers 415 naming a kind it cannot decode, and the plain 415 for a custom resource', async () => {
    const note = (what: string) =>
      `the body of the request was in an unknown format - accepted media types include: application/json, application/yaml (application/vnd.kubernetes.protobuf is decoded by this test server only for v1 ConfigMap, v1 Namespace, v1 Secret, v1 ServiceAccount, rbac.authorization.k8s.io/v1 ClusterRole, rbac.authorization.k8s.io/v1 ClusterRoleBinding, rbac.authorization.k8s.io/v1 Role, rbac.authorization.k8s.io/v1 RoleBinding; not for ${what})`;
    const pod = await post('/api/v1/namespaces/default/pods', envelope('Pod', ''));
    expect(pod.body).toEqual(status(415, 'UnsupportedMediaType', note('v1 Pod')));
    const podAtNs = await post(NS, envelope('Pod', ''));
    expect(podAtNs.body).toEqual(status(415, 'UnsupportedMediaType', note('v1 Pod')));
    const widget = await post(
      '/apis/example.com/v1/namespaces/default/widgets',
      envelope('Widget', ''),
    );
    expect(widget.body).toEqual(
      status(
        415,
        'UnsupportedMediaType',
        'the body of the request was in an unknown format - accepted media types include: application/json, application/yaml',
      ),
    );
    const plain = await call(server, 'POST', CM, { body: 'a=b', contentType: 'text/plain' });
    expect(plain.body.message).toBe(
      'the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf',
    );
  });

  it('answers a body naming another kind as it answers the same object in JSON', async () => {
    const asProtobuf = await post(NS, envelope('ConfigMap', ld('0a', ld('0a', text('other')))));
    const asJson = await call(server, 'POST', NS, {
      body: { kind: 'ConfigMap', apiVersion: 'v1', metadata: { name: 'other' } },
    });
    expect(asProtobuf.status).toBe(400);
    expect(asProtobuf.body).toEqual(asJson.body);
  });

  it('answers 406 to a client that accepts only protobuf', async () => {
    const r = await call(server, 'GET', `${NS}/default`, { accept: PROTOBUF });
    expect(r.body).toEqual(
      status(
        406,
        'NotAcceptable',
        'only the following media types are accepted: application/json (this test server does not answer in application/vnd.kubernetes.protobuf)',
      ),
    );
    const created = await post('/api/v1/namespaces/default/secrets', SECRET_S, PROTOBUF);
    expect(created.status).toBe(406);
  });
});
