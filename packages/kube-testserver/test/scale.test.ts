// Peer: the server itself over HTTPS (node:https), held to apiextensions-apiserver's scale subresource
// (ScaleREST, the CRD validation of subresources.scale, the custom resource validator) and its messages.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { KubeTestServer } from '../src/index.js';
import { call, createCrd, openWatch } from './helpers.js';

const crd = parse(readFileSync(new URL('fixtures/crews-crd.yaml', import.meta.url), 'utf8'));
const C = '/apis/example.com/v1/namespaces/default/crews';
const CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
const MERGE = 'application/merge-patch+json';

let server: KubeTestServer;

beforeAll(async () => {
  server = await KubeTestServer.start();
  await createCrd(server, crd);
});

afterAll(async () => {
  await server.stop();
});

function crew(name: string, spec: object = { members: 2 }, metadata: object = {}) {
  return { apiVersion: 'example.com/v1', kind: 'Crew', metadata: { name, ...metadata }, spec };
}

async function create(name: string, spec?: object) {
  const r = await call(server, 'POST', C, { body: crew(name, spec) });
  expect(r.status).toBe(201);
  return r.body;
}

/** The test CRD in another group, its first version with these subresources (the others with status only). */
function crdWith(subresources: object, versions = 1) {
  const base = crd.spec.versions[0];
  return {
    ...crd,
    metadata: { name: 'crews.other.example.com' },
    spec: {
      ...crd.spec,
      group: 'other.example.com',
      versions: Array.from({ length: versions }, (_, i) => ({
        ...base,
        name: `v${i + 1}`,
        storage: i === 0,
        subresources: i === 0 ? subresources : { status: {} },
      })),
    },
  };
}

describe('CRD validation of subresources.scale', () => {
  const prefix =
    'CustomResourceDefinition.apiextensions.k8s.io "crews.other.example.com" is invalid: ';

  it('requires both replicas paths, under .spec and .status, named at spec.subresources', async () => {
    const cases: [object, string, string][] = [
      [
        { scale: { statusReplicasPath: '.status.readyMembers' } },
        'spec.subresources.scale.specReplicasPath: Required value',
        'FieldValueRequired',
      ],
      [
        { scale: { specReplicasPath: '.spec.members' } },
        'spec.subresources.scale.statusReplicasPath: Required value',
        'FieldValueRequired',
      ],
      [
        { scale: { specReplicasPath: '.status.members', statusReplicasPath: '.status.ready' } },
        'spec.subresources.scale.specReplicasPath: Invalid value: ".status.members": should be a json path under .spec',
        'FieldValueInvalid',
      ],
      [
        { scale: { specReplicasPath: '.spec', statusReplicasPath: '.status.ready' } },
        'spec.subresources.scale.specReplicasPath: Invalid value: ".spec": should be a json path under .spec',
        'FieldValueInvalid',
      ],
      [
        { scale: { specReplicasPath: 'spec.members', statusReplicasPath: '.status.ready' } },
        'spec.subresources.scale.specReplicasPath: Invalid value: "spec.members": must be a simple json path starting with .',
        'FieldValueInvalid',
      ],
      [
        { scale: { specReplicasPath: '.spec.members', statusReplicasPath: '.spec.ready' } },
        'spec.subresources.scale.statusReplicasPath: Invalid value: ".spec.ready": should be a json path under .status',
        'FieldValueInvalid',
      ],
      [
        {
          scale: {
            specReplicasPath: '.spec.members',
            statusReplicasPath: '.status.ready',
            labelSelectorPath: '.metadata.labels',
          },
        },
        'spec.subresources.scale.labelSelectorPath: Invalid value: ".metadata.labels": should be a json path under either .spec or .status',
        'FieldValueInvalid',
      ],
    ];
    for (const [subresources, message, reason] of cases) {
      const r = await call(server, 'POST', `${CRDS}?dryRun=All`, { body: crdWith(subresources) });
      expect(r.status).toBe(422);
      expect(r.body.message).toBe(prefix + message);
      expect(r.body.details.causes).toEqual([
        { reason, message: message.slice(message.indexOf(': ') + 2), field: message.split(':')[0] },
      ]);
    }
  });

  it('names the version when the versions declare different subresources, and takes a selector under .spec', async () => {
    const bad = await call(server, 'POST', `${CRDS}?dryRun=All`, {
      body: crdWith({ scale: { specReplicasPath: '.spec.members' } }, 2),
    });
    expect(bad.status).toBe(422);
    expect(bad.body.message).toBe(
      `${prefix}spec.versions[0].subresources.scale.statusReplicasPath: Required value`,
    );
    const good = await call(server, 'POST', `${CRDS}?dryRun=All`, {
      body: crdWith({
        scale: {
          specReplicasPath: '.spec.members',
          statusReplicasPath: '.status.readyMembers',
          labelSelectorPath: '.spec.selector',
        },
      }),
    });
    expect(good.status).toBe(201);
  });
});

describe('discovery and OpenAPI', () => {
  it('lists <plural>/scale as autoscaling/v1 Scale in legacy and aggregated discovery', async () => {
    const list = (await call(server, 'GET', '/apis/example.com/v1')).body;
    const entries = list.resources.filter((r: { name: string }) => r.name.startsWith('crews'));
    expect(entries).toEqual([
      expect.objectContaining({ name: 'crews', kind: 'Crew' }),
      {
        name: 'crews/status',
        singularName: '',
        namespaced: true,
        kind: 'Crew',
        verbs: ['get', 'patch', 'update'],
      },
      {
        name: 'crews/scale',
        singularName: '',
        namespaced: true,
        group: 'autoscaling',
        version: 'v1',
        kind: 'Scale',
        verbs: ['get', 'patch', 'update'],
      },
    ]);
    for (const v of ['v2', 'v2beta1']) {
      const agg = await call(server, 'GET', '/apis', {
        accept: `application/json;g=apidiscovery.k8s.io;v=${v};as=APIGroupDiscoveryList`,
      });
      const group = agg.body.items.find(
        (i: { metadata: { name: string } }) => i.metadata.name === 'example.com',
      );
      const crews = group.versions[0].resources.find(
        (r: { resource: string }) => r.resource === 'crews',
      );
      expect(crews.subresources).toEqual([
        {
          subresource: 'status',
          responseKind: { group: 'example.com', version: 'v1', kind: 'Crew' },
          verbs: ['get', 'patch', 'update'],
        },
        {
          subresource: 'scale',
          responseKind: { group: 'autoscaling', version: 'v1', kind: 'Scale' },
          verbs: ['get', 'patch', 'update'],
        },
      ]);
    }
  });

  it('publishes the /scale path with the Scale schema', async () => {
    const root = (await call(server, 'GET', '/openapi/v3')).body;
    const doc = (await call(server, 'GET', root.paths['apis/example.com/v1'].serverRelativeURL))
      .body;
    const scale = doc.paths['/apis/example.com/v1/namespaces/{namespace}/crews/{name}/scale'];
    expect(scale.get['x-kubernetes-group-version-kind']).toEqual({
      group: 'autoscaling',
      version: 'v1',
      kind: 'Scale',
    });
    expect(scale.put.requestBody.content['*/*'].schema).toEqual({
      $ref: '#/components/schemas/io.k8s.api.autoscaling.v1.Scale',
    });
    expect(doc.components.schemas['io.k8s.api.autoscaling.v1.Scale']).toBeDefined();
  });
});

describe('GET /scale', () => {
  it('reads the replicas paths and the selector of the object into an autoscaling/v1 Scale', async () => {
    const created = await create('get-a', { members: 3, role: 'cook' });
    const st = await call(server, 'PATCH', `${C}/get-a/status`, {
      contentType: MERGE,
      body: { status: { readyMembers: 1, selector: 'app=cook' } },
    });
    expect(st.status).toBe(200);
    const r = await call(server, 'GET', `${C}/get-a/scale`);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      kind: 'Scale',
      apiVersion: 'autoscaling/v1',
      metadata: {
        name: 'get-a',
        namespace: 'default',
        uid: created.metadata.uid,
        resourceVersion: st.body.metadata.resourceVersion,
        creationTimestamp: created.metadata.creationTimestamp,
      },
      spec: { replicas: 3 },
      status: { replicas: 1, selector: 'app=cook' },
    });
  });

  it('leaves out zero spec replicas and an empty selector, as the Go type marshals them', async () => {
    await create('get-zero', { members: 0 });
    const r = await call(server, 'GET', `${C}/get-zero/scale`);
    expect(r.body.spec).toEqual({});
    expect(r.body.status).toEqual({ replicas: 0 });
  });

  it('is a 500 when the spec replicas path is not set, and a 404 for a missing object', async () => {
    await create('get-unset', { role: 'cook' });
    const unset = await call(server, 'GET', `${C}/get-unset/scale`);
    expect(unset.status).toBe(500);
    expect(unset.body).toMatchObject({
      reason: 'InternalError',
      message: 'Internal error occurred: the spec replicas field ".spec.members" does not exist',
    });
    const missing = await call(server, 'GET', `${C}/nobody/scale`);
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({
      reason: 'NotFound',
      message: 'crews.example.com "nobody" not found',
      details: { name: 'nobody', group: 'example.com', kind: 'crews' },
    });
  });

  it('serves a Table with Desired, Available and Age', async () => {
    await create('get-table', { members: 4 });
    const r = await call(server, 'GET', `${C}/get-table/scale`, {
      accept: 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json',
    });
    expect(r.body.kind).toBe('Table');
    expect(r.body.columnDefinitions.map((c: { name: string; type: string }) => c.name)).toEqual([
      'Name',
      'Desired',
      'Available',
      'Age',
    ]);
    expect(r.body.rows[0].cells.slice(0, 3)).toEqual(['get-table', 4, 0]);
  });

  it('refuses the verbs the subresource does not serve with 405, and a CRD without scale with 404', async () => {
    await create('verb-a');
    const del = await call(server, 'DELETE', `${C}/verb-a/scale`);
    expect(del.status).toBe(405);
    expect(del.body.message).toBe(
      'delete is not supported on resources of kind "crews.example.com"',
    );
    await createCrd(server, {
      ...crd,
      metadata: { name: 'plain.example.com' },
      spec: {
        ...crd.spec,
        names: { plural: 'plain', singular: 'plain', kind: 'Plain' },
        versions: [{ ...crd.spec.versions[0], subresources: { status: {} } }],
      },
    });
    const plain = await call(server, 'POST', '/apis/example.com/v1/namespaces/default/plain', {
      body: { apiVersion: 'example.com/v1', kind: 'Plain', metadata: { name: 'p' } },
    });
    expect(plain.status).toBe(201);
    const none = await call(server, 'GET', '/apis/example.com/v1/namespaces/default/plain/p/scale');
    expect(none.status).toBe(404);
    expect(none.body.message).toBe('plain.example.com "p" not found');
  });
});

describe('PUT /scale', () => {
  it('writes only the spec replicas path, bumps generation, and sends MODIFIED on the main resource', async () => {
    const created = await create('put-a', { members: 2, role: 'cook' });
    const w = openWatch(
      server,
      `${C}?watch=true&resourceVersion=${created.metadata.resourceVersion}`,
    );
    const r = await call(server, 'PUT', `${C}/put-a/scale`, {
      body: {
        apiVersion: 'autoscaling/v1',
        kind: 'Scale',
        metadata: { name: 'put-a', namespace: 'default' },
        spec: { replicas: 5 },
        status: { replicas: 9, selector: 'ignored=yes' },
      },
    });
    expect(r.status).toBe(200);
    expect(r.body.spec).toEqual({ replicas: 5 });
    expect(r.body.status).toEqual({ replicas: 0 });
    const live = (await call(server, 'GET', `${C}/put-a`)).body;
    expect(live.spec).toEqual({ members: 5, role: 'cook' });
    expect(live.status).toBeUndefined();
    expect(live.metadata.generation).toBe(2);
    expect(r.body.metadata.resourceVersion).toBe(live.metadata.resourceVersion);
    await w.waitFor(1);
    w.stop();
    expect(w.events[0].type).toBe('MODIFIED');
    expect(w.events[0].object.spec.members).toBe(5);
  });

  it('takes the resourceVersion of the body as a precondition: a stale one is 409', async () => {
    const created = await create('put-rv', { members: 1 });
    const scale = (await call(server, 'GET', `${C}/put-rv/scale`)).body;
    await call(server, 'PATCH', `${C}/put-rv`, {
      contentType: MERGE,
      body: { spec: { role: 'cook' } },
    });
    const stale = await call(server, 'PUT', `${C}/put-rv/scale`, {
      body: { ...scale, spec: { replicas: 3 } },
    });
    expect(stale.status).toBe(409);
    expect(stale.body).toMatchObject({
      reason: 'Conflict',
      message:
        'Operation cannot be fulfilled on crews.example.com "put-rv": the object has been modified; please apply your changes to the latest version and try again',
      details: { name: 'put-rv', group: 'example.com', kind: 'crews' },
    });
    expect(created.metadata.resourceVersion).toBe(scale.metadata.resourceVersion);
    const unconditional = await call(server, 'PUT', `${C}/put-rv/scale`, {
      body: {
        kind: 'Scale',
        apiVersion: 'autoscaling/v1',
        metadata: { name: 'put-rv' },
        spec: { replicas: 3 },
      },
    });
    expect(unconditional.status).toBe(200);
    expect((await call(server, 'GET', `${C}/put-rv`)).body.spec.members).toBe(3);
  });

  it('refuses replicas that are not an int32 with the decoder error, and negative ones with the validator', async () => {
    await create('put-bad', { members: 1 });
    const body = (replicas: unknown) => ({
      apiVersion: 'autoscaling/v1',
      kind: 'Scale',
      metadata: { name: 'put-bad' },
      spec: { replicas },
    });
    const text = await call(server, 'PUT', `${C}/put-bad/scale`, { body: body('five') });
    expect(text.status).toBe(400);
    expect(text.body.message).toBe(
      'Scale in version "v1" cannot be handled as a Scale: json: cannot unmarshal string into Go struct field ScaleSpec.spec.replicas of type int32',
    );
    const fraction = await call(server, 'PUT', `${C}/put-bad/scale`, { body: body(1.5) });
    expect(fraction.body.message).toBe(
      'Scale in version "v1" cannot be handled as a Scale: json: cannot unmarshal number 1.5 into Go struct field ScaleSpec.spec.replicas of type int32',
    );
    const negative = await call(server, 'PUT', `${C}/put-bad/scale`, { body: body(-1) });
    expect(negative.status).toBe(422);
    expect(negative.body).toMatchObject({
      reason: 'Invalid',
      message:
        'Crew.example.com "put-bad" is invalid: .spec.members: Invalid value: -1: should be a non-negative integer',
      details: {
        name: 'put-bad',
        group: 'example.com',
        kind: 'Crew',
        causes: [
          {
            reason: 'FieldValueInvalid',
            message: 'Invalid value: -1: should be a non-negative integer',
            field: '.spec.members',
          },
        ],
      },
    });
    expect((await call(server, 'GET', `${C}/put-bad`)).body.spec.members).toBe(1);
  });

  it('checks the name, the kind and the unknown fields of the body as the update handler does', async () => {
    await create('put-name', { members: 1 });
    const noName = await call(server, 'PUT', `${C}/put-name/scale`, {
      body: { apiVersion: 'autoscaling/v1', kind: 'Scale', spec: { replicas: 2 } },
    });
    expect(noName.status).toBe(400);
    expect(noName.body.message).toBe(
      'the name of the object () does not match the name on the URL (put-name)',
    );
    const wrongKind = await call(server, 'PUT', `${C}/put-name/scale`, {
      body: crew('put-name', { members: 2 }),
    });
    expect(wrongKind.status).toBe(400);
    expect(wrongKind.body.message).toBe(
      'Crew in version "v1" cannot be handled as a Scale: no kind "Crew" is registered for version "example.com/v1" in scheme "k8s.io/client-go/scale/util.go:146"',
    );
    const extra = {
      apiVersion: 'autoscaling/v1',
      kind: 'Scale',
      metadata: { name: 'put-name' },
      spec: { replicas: 2, paused: true },
    };
    const strict = await call(server, 'PUT', `${C}/put-name/scale?fieldValidation=Strict`, {
      body: extra,
    });
    expect(strict.status).toBe(400);
    expect(strict.body.message).toBe(
      'Scale in version "v1" cannot be handled as a Scale: strict decoding error: unknown field "spec.paused"',
    );
    const warn = await call(server, 'PUT', `${C}/put-name/scale`, { body: extra });
    expect(warn.status).toBe(200);
    expect(warn.headers.warning).toBe('299 - "unknown field \\"spec.paused\\""');
  });

  it('answers 404 for a missing object, and stores nothing under dryRun', async () => {
    const missing = await call(server, 'PUT', `${C}/nobody/scale`, {
      body: { apiVersion: 'autoscaling/v1', kind: 'Scale', metadata: { name: 'nobody' } },
    });
    expect(missing.status).toBe(404);
    expect(missing.body.message).toBe('crews.example.com "nobody" not found');
    await create('put-dry', { members: 1 });
    const dry = await call(server, 'PUT', `${C}/put-dry/scale?dryRun=All`, {
      body: { kind: 'Scale', metadata: { name: 'put-dry' }, spec: { replicas: 7 } },
    });
    expect(dry.status).toBe(200);
    expect(dry.body.spec).toEqual({ replicas: 7 });
    expect((await call(server, 'GET', `${C}/put-dry`)).body.spec.members).toBe(1);
  });
});

describe('PATCH /scale', () => {
  it('applies merge and JSON patches to the Scale and writes its replicas', async () => {
    await create('patch-a', { members: 1, role: 'cook' });
    const merge = await call(server, 'PATCH', `${C}/patch-a/scale`, {
      contentType: MERGE,
      body: { spec: { replicas: 4 } },
    });
    expect(merge.status).toBe(200);
    expect(merge.body.spec).toEqual({ replicas: 4 });
    const json = await call(server, 'PATCH', `${C}/patch-a/scale`, {
      contentType: 'application/json-patch+json',
      body: [
        { op: 'test', path: '/spec/replicas', value: 4 },
        { op: 'replace', path: '/spec/replicas', value: 6 },
      ],
    });
    expect(json.status).toBe(200);
    const live = (await call(server, 'GET', `${C}/patch-a`)).body;
    expect(live.spec).toEqual({ members: 6, role: 'cook' });
    expect(live.metadata.generation).toBe(3);
    const failing = await call(server, 'PATCH', `${C}/patch-a/scale`, {
      contentType: 'application/json-patch+json',
      body: [{ op: 'test', path: '/spec/replicas', value: 1 }],
    });
    expect(failing.status).toBe(422);
  });

  it('answers a strategic merge patch with 415, as for every custom resource', async () => {
    await create('patch-smp');
    const r = await call(server, 'PATCH', `${C}/patch-smp/scale`, {
      contentType: 'application/strategic-merge-patch+json',
      body: { spec: { replicas: 2 } },
    });
    expect(r.status).toBe(415);
    expect(r.body.message).toBe(
      'the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml',
    );
  });

  it('refuses a patched Scale that does not decode with 422 quoting it, and a stale resourceVersion with 409', async () => {
    const created = await create('patch-bad', { members: 1 });
    const bad = await call(server, 'PATCH', `${C}/patch-bad/scale`, {
      contentType: MERGE,
      body: { spec: { replicas: 'many' } },
    });
    expect(bad.status).toBe(422);
    const m = created.metadata;
    // The Scale carries the owners of the replicas path as owners of spec.replicas (the create's).
    const owners = `[{"apiVersion":"autoscaling/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:replicas":{}}},"manager":"","operation":"Update","time":"${m.managedFields[0].time}"}]`;
    const patched = `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"creationTimestamp":"${m.creationTimestamp}","managedFields":${owners},"name":"patch-bad","namespace":"default","resourceVersion":"${m.resourceVersion}","uid":"${m.uid}"},"spec":{"replicas":"many"},"status":{"replicas":0}}`;
    const why =
      'json: cannot unmarshal string into Go struct field ScaleSpec.spec.replicas of type int32';
    expect(bad.body).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: ` "" is invalid: patch: Invalid value: ${JSON.stringify(patched)}: ${why}`,
      reason: 'Invalid',
      details: {
        causes: [
          {
            reason: 'FieldValueInvalid',
            message: `Invalid value: ${JSON.stringify(patched)}: ${why}`,
            field: 'patch',
          },
        ],
      },
      code: 422,
    });
    await call(server, 'PATCH', `${C}/patch-bad`, {
      contentType: MERGE,
      body: { spec: { role: 'x' } },
    });
    const stale = await call(server, 'PATCH', `${C}/patch-bad/scale`, {
      contentType: MERGE,
      body: { metadata: { resourceVersion: m.resourceVersion }, spec: { replicas: 2 } },
    });
    expect(stale.status).toBe(409);
    expect(stale.body.message).toBe(
      'Operation cannot be fulfilled on crews.example.com "patch-bad": the object has been modified; please apply your changes to the latest version and try again',
    );
  });

  it('needs spec replicas from somewhere: an unset path stays unset only with a 400', async () => {
    await create('patch-unset', { role: 'cook' });
    const empty = await call(server, 'PATCH', `${C}/patch-unset/scale`, {
      contentType: MERGE,
      body: { metadata: { labels: { a: 'b' } } },
    });
    expect(empty.status).toBe(400);
    expect(empty.body.message).toBe('the spec replicas field ".spec.members" cannot be empty');
    const set = await call(server, 'PATCH', `${C}/patch-unset/scale`, {
      contentType: MERGE,
      body: { spec: { replicas: 2 } },
    });
    expect(set.status).toBe(200);
    expect((await call(server, 'GET', `${C}/patch-unset`)).body.spec).toEqual({
      role: 'cook',
      members: 2,
    });
  });

  it('answers 404 for a missing object before reading the patch', async () => {
    const r = await call(server, 'PATCH', `${C}/nobody/scale`, {
      contentType: MERGE,
      body: 'not json',
    });
    expect(r.status).toBe(404);
    expect(r.body.message).toBe('crews.example.com "nobody" not found');
  });

  it('answers an apply patch as the real 1.32 server: its field manager has no Scale type', async () => {
    await create('apply-a', { members: 1 });
    const noManager = await call(server, 'PATCH', `${C}/apply-a/scale`, {
      contentType: 'application/apply-patch+yaml',
      body: 'apiVersion: autoscaling/v1\nkind: Scale\n',
    });
    expect(noManager.status).toBe(422);
    const wrong = await call(server, 'PATCH', `${C}/apply-a/scale?fieldManager=me`, {
      contentType: 'application/apply-patch+yaml',
      body: 'apiVersion: example.com/v1\nkind: Crew\nmetadata:\n  name: apply-a\n',
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body.message).toBe('invalid object type: example.com/v1, Kind=Crew');
    const r = await call(server, 'PATCH', `${C}/apply-a/scale?fieldManager=me`, {
      contentType: 'application/apply-patch+yaml',
      body: 'apiVersion: autoscaling/v1\nkind: Scale\nmetadata:\n  name: apply-a\n  namespace: default\nspec:\n  replicas: 3\n',
    });
    expect(r.status).toBe(500);
    expect(r.body).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message:
        'failed to create typed patch object (default/apply-a; autoscaling/v1, Kind=Scale): no corresponding type for autoscaling/v1, Kind=Scale',
      code: 500,
    });
    expect((await call(server, 'GET', `${C}/apply-a`)).body.spec.members).toBe(1);
    const missing = await call(server, 'PATCH', `${C}/nobody/scale?fieldManager=me`, {
      contentType: 'application/apply-patch+yaml',
      body: 'apiVersion: autoscaling/v1\nkind: Scale\n',
    });
    expect(missing.status).toBe(404);
  });
});

describe('managedFields of scale writes', () => {
  it('takes the replicas path from its owners and records no owner, so a later apply does not conflict', async () => {
    const applied = (members: number) =>
      `apiVersion: example.com/v1\nkind: Crew\nmetadata:\n  name: owned\nspec:\n  members: ${members}\n  role: cook\n`;
    const first = await call(server, 'PATCH', `${C}/owned?fieldManager=operator`, {
      contentType: 'application/apply-patch+yaml',
      body: applied(2),
    });
    expect(first.status).toBe(201);
    expect(first.body.metadata.managedFields[0].fieldsV1).toEqual({
      'f:spec': { 'f:members': {}, 'f:role': {} },
    });
    const scaled = await call(server, 'PATCH', `${C}/owned/scale?fieldManager=scaler`, {
      contentType: MERGE,
      body: { spec: { replicas: 5 } },
    });
    expect(scaled.status).toBe(200);
    const live = (await call(server, 'GET', `${C}/owned`)).body;
    expect(live.spec.members).toBe(5);
    expect(
      live.metadata.managedFields.map((e: { manager: string; fieldsV1: object }) => [
        e.manager,
        e.fieldsV1,
      ]),
    ).toEqual([['operator', { 'f:spec': { 'f:role': {} } }]]);
    const again = await call(server, 'PATCH', `${C}/owned?fieldManager=other`, {
      contentType: 'application/apply-patch+yaml',
      body: applied(3),
    });
    expect(again.status).toBe(200);
    expect(again.body.spec.members).toBe(3);
  });
});

describe('validation of the replicas paths on the main resource', () => {
  it('refuses negative and non-integer replicas and selectors that are not strings', async () => {
    const negative = await call(server, 'POST', C, { body: crew('v-neg', { members: -2 }) });
    expect(negative.status).toBe(422);
    expect(negative.body.message).toBe(
      'Crew.example.com "v-neg" is invalid: .spec.members: Invalid value: -2: should be a non-negative integer',
    );
    await create('v-status', { members: 1 });
    const status = await call(server, 'PATCH', `${C}/v-status/status`, {
      contentType: MERGE,
      body: { status: { readyMembers: -1 } },
    });
    expect(status.status).toBe(422);
    expect(status.body.message).toBe(
      'Crew.example.com "v-status" is invalid: .status.readyMembers: Invalid value: -1: should be a non-negative integer',
    );
  });
});

describe('RBAC', () => {
  it('authorises the subresource as <plural>/scale', async () => {
    const token = server.serviceAccountToken('default', 'scaler');
    await create('rbac-a', { members: 1 });
    const role = (resources: string[]) => ({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'crew-scaler' },
      rules: [{ apiGroups: ['example.com'], resources, verbs: ['get', 'patch'] }],
    });
    const R = '/apis/rbac.authorization.k8s.io/v1/namespaces/default';
    expect((await call(server, 'POST', `${R}/roles`, { body: role(['crews']) })).status).toBe(201);
    const binding = await call(server, 'POST', `${R}/rolebindings`, {
      body: {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'crew-scaler' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'crew-scaler' },
        subjects: [{ kind: 'ServiceAccount', name: 'scaler', namespace: 'default' }],
      },
    });
    expect(binding.status).toBe(201);
    const patch = () =>
      call(server, 'PATCH', `${C}/rbac-a/scale`, {
        contentType: MERGE,
        body: { spec: { replicas: 2 } },
        token,
      });
    const denied = await patch();
    expect(denied.status).toBe(403);
    expect(denied.body.message).toBe(
      'crews.example.com "rbac-a" is forbidden: User "system:serviceaccount:default:scaler" cannot patch resource "crews/scale" in API group "example.com" in the namespace "default"',
    );
    const granted = await call(server, 'PUT', `${R}/roles/crew-scaler`, {
      body: { ...role(['crews/scale']), metadata: { name: 'crew-scaler' } },
    });
    expect(granted.status).toBe(200);
    expect((await patch()).status).toBe(200);
    const main = await call(server, 'PATCH', `${C}/rbac-a`, {
      contentType: MERGE,
      body: { spec: { members: 3 } },
      token,
    });
    expect(main.status).toBe(403);
  });
});
