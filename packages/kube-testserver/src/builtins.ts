/**
 * The built-in resources the server serves from its start (namespaces,
 * config maps, secrets, pods, services, leases, events, RBAC, quotas and
 * the rest), each with its columns, defaults and validation as the real
 * server's strategies, and the namespaces every cluster starts with.
 *
 * @module
 */
import { builtin } from './builtin.js';
import {
  badRequest,
  type FieldError,
  fieldForbidden,
  fieldNotSupported,
  fieldRequired,
} from './errors.js';
import { isObject, type JsonObject, type JsonValue, meta } from './json.js';
import { arr, podDefaults, podReady, podRestarts, podStatus, podValidate } from './pods.js';
import { parseQuantity } from './quota.js';
import {
  AGE_COLUMN,
  type Column,
  column,
  NAME_COLUMN,
  type ResourceType,
  type WriteContext,
} from './resource-type.js';
import { dns1123Label, dns1123Subdomain, validateObjectMeta } from './validation.js';

const RFC3339_MICRO = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\.(\d{6})(Z|[+-]\d{2}:\d{2})$/;

/**
 * Rejects a `metav1.MicroTime` field that is not RFC 3339 with exactly six
 * fractional digits, with the decode error the real server answers (400).
 */
function checkMicroTimes(
  obj: JsonObject,
  kind: string,
  paths: readonly (readonly string[])[],
): string[] {
  for (const path of paths) {
    let cur: JsonValue | undefined = obj;
    for (const p of path) cur = isObject(cur) ? cur[p] : undefined;
    if (cur === undefined || cur === null) continue;
    if (typeof cur !== 'string') {
      throw badRequest(
        `${kind} in version "v1" cannot be handled as a ${kind}: json: cannot unmarshal ${typeof cur === 'number' ? 'number' : typeof cur} into Go struct field ${kind}Spec.spec.${path.at(-1)} of type string`,
      );
    }
    if (!RFC3339_MICRO.test(cur)) {
      const at = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}/.exec(cur);
      const rest = at === null ? cur : cur.slice(at[0].length);
      const elem = at === null ? '2006' : '.000000';
      throw badRequest(
        `${kind} in version "v1" cannot be handled as a ${kind}: parsing time "${cur}" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "${rest}" as "${elem}"`,
      );
    }
  }
  return [];
}

function countKeys(v: JsonValue | undefined): number {
  return isObject(v) ? Object.keys(v).length : 0;
}

let nextClusterIp = 1;

function serviceDefaults(obj: JsonObject) {
  const spec = isObject(obj.spec) ? obj.spec : {};
  obj.spec = spec;
  spec.type ??= 'ClusterIP';
  spec.sessionAffinity ??= 'None';
  spec.internalTrafficPolicy ??= 'Cluster';
  for (const p of arr(spec.ports)) {
    if (!isObject(p)) continue;
    p.protocol ??= 'TCP';
    if (p.targetPort === undefined && typeof p.port === 'number') p.targetPort = p.port;
  }
}

function servicePrepareCreate(obj: JsonObject) {
  const spec = isObject(obj.spec) ? obj.spec : {};
  obj.spec = spec;
  if (spec.clusterIP === undefined || spec.clusterIP === '') {
    const n = nextClusterIp++;
    spec.clusterIP = `10.96.${Math.floor(n / 254) % 256}.${(n % 254) + 1}`;
  }
  if (spec.clusterIP !== 'None') {
    spec.clusterIPs ??= [spec.clusterIP];
    spec.ipFamilies ??= ['IPv4'];
    spec.ipFamilyPolicy ??= 'SingleStack';
  }
  obj.status = { loadBalancer: {} };
}

function serviceValidate(obj: JsonObject): FieldError[] {
  const errs = validateObjectMeta(obj, true, dns1123Label);
  const spec = isObject(obj.spec) ? obj.spec : {};
  const type = spec.type;
  const types = ['ClusterIP', 'ExternalName', 'LoadBalancer', 'NodePort'];
  if (typeof type === 'string' && !types.includes(type))
    errs.push(fieldNotSupported('spec.type', type, types));
  arr(spec.ports).forEach((p, i) => {
    if (isObject(p) && typeof p.port !== 'number')
      errs.push(fieldRequired(`spec.ports[${i}].port`));
  });
  if (type !== 'ExternalName' && arr(spec.ports).length === 0 && spec.clusterIP !== 'None')
    errs.push(fieldRequired('spec.ports'));
  return errs;
}

function servicePorts(o: JsonObject): JsonValue {
  const spec = isObject(o.spec) ? o.spec : {};
  const ports = arr(spec.ports)
    .filter(isObject)
    .map((p) =>
      typeof p.nodePort === 'number'
        ? `${p.port}:${p.nodePort}/${p.protocol ?? 'TCP'}`
        : `${p.port}/${p.protocol ?? 'TCP'}`,
    );
  return ports.length === 0 ? '<none>' : ports.join(',');
}

const B64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

function secretDecode(obj: JsonObject): string[] {
  const data = obj.data;
  if (!isObject(data)) return [];
  for (const v of Object.values(data)) {
    if (typeof v === 'string' && !B64.test(v))
      throw badRequest(
        `Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte ${firstBadBase64(v)}`,
      );
  }
  return [];
}

function firstBadBase64(v: string): number {
  for (let i = 0; i < v.length; i++) if (!/[A-Za-z0-9+/=]/.test(v[i] ?? '')) return i;
  return v.length - (v.length % 4);
}

function secretDefaults(obj: JsonObject) {
  obj.type ??= 'Opaque';
  const sd = obj.stringData;
  if (isObject(sd)) {
    const data = isObject(obj.data) ? obj.data : {};
    for (const [k, v] of Object.entries(sd))
      if (typeof v === 'string') data[k] = Buffer.from(v, 'utf8').toString('base64');
    obj.data = data;
  }
  delete obj.stringData;
}

function namespaceDefaults(obj: JsonObject) {
  const m = meta(obj);
  const labels = isObject(m.labels) ? m.labels : {};
  if (typeof m.name === 'string') labels['kubernetes.io/metadata.name'] = m.name;
  m.labels = labels;
}

function namespacePrepareCreate(obj: JsonObject) {
  obj.spec = { finalizers: ['kubernetes'] };
  obj.status = { phase: 'Active' };
}

function createdAt(o: JsonObject): JsonValue {
  const m = isObject(o.metadata) ? o.metadata : {};
  return m.creationTimestamp ?? null;
}

const CREATED_AT: Column = {
  ...column('Created At', createdAt, { type: 'date' }),
  description:
    'CreationTimestamp is a timestamp representing the server time when this object was created.',
};

function roleRef(o: JsonObject): JsonValue {
  const r = isObject(o.roleRef) ? o.roleRef : {};
  return `${r.kind ?? ''}/${r.name ?? ''}`;
}

const QUANTITY_FORMAT =
  "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

function quotaDecode(obj: JsonObject): string[] {
  for (const part of ['spec', 'status']) {
    const holder = obj[part];
    for (const key of ['hard', 'used']) {
      const list = isObject(holder) ? holder[key] : undefined;
      if (!isObject(list)) continue;
      for (const v of Object.values(list))
        if (parseQuantity(v) === undefined)
          throw badRequest(
            `ResourceQuota in version "v1" cannot be handled as a ResourceQuota: ${QUANTITY_FORMAT}`,
          );
    }
  }
  return [];
}

function quotaValidate(obj: JsonObject): FieldError[] {
  const errs = validateObjectMeta(obj, true, dns1123Subdomain);
  const spec = isObject(obj.spec) ? obj.spec : {};
  for (const f of ['scopes', 'scopeSelector'])
    if (spec[f] !== undefined && spec[f] !== null)
      errs.push(fieldForbidden(`spec.${f}`, 'quota scopes are not supported by this test server'));
  return errs;
}

/** `kubectl get quota`'s Request or Limit cell: `name: used/hard` for each resource. */
function quotaCell(o: JsonObject, limits: boolean): JsonValue {
  const status = isObject(o.status) ? o.status : {};
  const hard = isObject(status.hard) ? status.hard : {};
  const used = isObject(status.used) ? status.used : {};
  return Object.keys(hard)
    .sort()
    .filter((k) => k.startsWith('limits.') === limits)
    .map((k) => `${k}: ${String(used[k] ?? '0')}/${String(hard[k])}`)
    .join(', ');
}

/** The built-in resources, served from the server's start. */
export function builtinTypes(): ResourceType[] {
  return [
    builtin({
      group: '',
      version: 'v1',
      resource: 'namespaces',
      kind: 'Namespace',
      singular: 'namespace',
      namespaced: false,
      shortNames: ['ns'],
      verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
      statusSubresource: true,
      columns: [
        NAME_COLUMN,
        column('Status', (o) => (isObject(o.status) ? (o.status.phase ?? '') : '')),
        AGE_COLUMN,
      ],
      defaults: namespaceDefaults,
      prepareCreate: namespacePrepareCreate,
      validate: (o) => validateObjectMeta(o, false, dns1123Label),
    }),
    builtin({
      group: '',
      version: 'v1',
      resource: 'pods',
      kind: 'Pod',
      singular: 'pod',
      namespaced: true,
      shortNames: ['po'],
      categories: ['all'],
      statusSubresource: true,
      deleteReturnsObject: true,
      columns: [
        NAME_COLUMN,
        column('Ready', podReady),
        column('Status', podStatus),
        column('Restarts', podRestarts, { type: 'string' }),
        AGE_COLUMN,
        column('IP', (o) => (isObject(o.status) ? (o.status.podIP ?? '<none>') : '<none>'), {
          priority: 1,
        }),
        column('Node', (o) => (isObject(o.spec) ? (o.spec.nodeName ?? '<none>') : '<none>'), {
          priority: 1,
        }),
      ],
      listMapKeys: {
        'spec.containers': ['name'],
        'spec.initContainers': ['name'],
        'spec.containers.ports': ['containerPort', 'protocol'],
        'spec.containers.env': ['name'],
        'spec.containers.volumeMounts': ['mountPath'],
        'spec.volumes': ['name'],
        'status.conditions': ['type'],
        'status.containerStatuses': ['name'],
      },
      defaults: podDefaults,
      prepareCreate: (o) => {
        o.status = { phase: 'Pending', qosClass: 'BestEffort' };
      },
      validate: podValidate,
    }),
    builtin({
      group: '',
      version: 'v1',
      resource: 'services',
      kind: 'Service',
      singular: 'service',
      namespaced: true,
      shortNames: ['svc'],
      categories: ['all'],
      statusSubresource: true,
      deleteReturnsObject: true,
      verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
      columns: [
        NAME_COLUMN,
        column('Type', (o) => (isObject(o.spec) ? (o.spec.type ?? '') : '')),
        column('Cluster-IP', (o) => (isObject(o.spec) ? (o.spec.clusterIP ?? '') : '')),
        column('External-IP', () => '<none>'),
        column('Port(s)', servicePorts),
        AGE_COLUMN,
      ],
      listMapKeys: { 'spec.ports': ['port', 'protocol'] },
      defaults: serviceDefaults,
      prepareCreate: servicePrepareCreate,
      validate: serviceValidate,
    }),
    builtin({
      group: '',
      version: 'v1',
      resource: 'secrets',
      kind: 'Secret',
      singular: 'secret',
      namespaced: true,
      columns: [
        NAME_COLUMN,
        column('Type', (o) => o.type ?? ''),
        column('Data', (o) => countKeys(o.data), { type: 'string' }),
        AGE_COLUMN,
      ],
      decode: secretDecode,
      defaults: secretDefaults,
    }),
    builtin({
      group: '',
      version: 'v1',
      resource: 'configmaps',
      kind: 'ConfigMap',
      singular: 'configmap',
      namespaced: true,
      shortNames: ['cm'],
      columns: [
        NAME_COLUMN,
        column('Data', (o) => countKeys(o.data) + countKeys(o.binaryData), { type: 'string' }),
        AGE_COLUMN,
      ],
    }),
    builtin({
      group: '',
      version: 'v1',
      resource: 'resourcequotas',
      kind: 'ResourceQuota',
      singular: 'resourcequota',
      namespaced: true,
      shortNames: ['quota'],
      statusSubresource: true,
      columns: [
        NAME_COLUMN,
        AGE_COLUMN,
        column('Request', (o) => quotaCell(o, false)),
        column('Limit', (o) => quotaCell(o, true)),
      ],
      decode: quotaDecode,
      // The controller fills the status, never the client.
      prepareCreate: (o) => {
        delete o.status;
      },
      validate: quotaValidate,
    }),
    builtin({
      group: '',
      version: 'v1',
      resource: 'serviceaccounts',
      kind: 'ServiceAccount',
      singular: 'serviceaccount',
      namespaced: true,
      shortNames: ['sa'],
      columns: [NAME_COLUMN, column('Secrets', (o) => arr(o.secrets).length), AGE_COLUMN],
    }),
    builtin({
      group: '',
      version: 'v1',
      resource: 'events',
      kind: 'Event',
      singular: 'event',
      namespaced: true,
      shortNames: ['ev'],
      columns: [
        column('Last Seen', (o, now) => {
          const ts =
            o.lastTimestamp ??
            o.eventTime ??
            (isObject(o.metadata) ? o.metadata.creationTimestamp : null);
          return typeof ts === 'string' ? ageOf(ts, now) : '<unknown>';
        }),
        column('Type', (o) => o.type ?? ''),
        column('Reason', (o) => o.reason ?? ''),
        column('Object', (o) => {
          const io = isObject(o.involvedObject) ? o.involvedObject : {};
          return `${String(io.kind ?? '').toLowerCase()}/${io.name ?? ''}`;
        }),
        column('Message', (o) => o.message ?? ''),
      ],
      decode: (o) => checkMicroTimes(o, 'Event', [['eventTime'], ['series', 'lastObservedTime']]),
      validate: (o) => {
        const errs = validateObjectMeta(o, true, dns1123Subdomain);
        if (!isObject(o.involvedObject)) errs.push(fieldRequired('involvedObject'));
        return errs;
      },
    }),
    builtin({
      group: 'coordination.k8s.io',
      version: 'v1',
      resource: 'leases',
      kind: 'Lease',
      singular: 'lease',
      namespaced: true,
      columns: [
        NAME_COLUMN,
        column('Holder', (o) => (isObject(o.spec) ? (o.spec.holderIdentity ?? '') : '')),
        AGE_COLUMN,
      ],
      decode: (o: JsonObject, _ctx: WriteContext) =>
        checkMicroTimes(o, 'Lease', [
          ['spec', 'acquireTime'],
          ['spec', 'renewTime'],
        ]),
    }),
    builtin({
      group: 'rbac.authorization.k8s.io',
      version: 'v1',
      resource: 'roles',
      kind: 'Role',
      singular: 'role',
      namespaced: true,
      columns: [NAME_COLUMN, CREATED_AT],
    }),
    builtin({
      group: 'rbac.authorization.k8s.io',
      version: 'v1',
      resource: 'rolebindings',
      kind: 'RoleBinding',
      singular: 'rolebinding',
      namespaced: true,
      columns: [NAME_COLUMN, column('Role', roleRef), AGE_COLUMN],
      validate: (o) => {
        const errs = validateObjectMeta(o, true, dns1123Subdomain);
        if (!isObject(o.roleRef)) errs.push(fieldRequired('roleRef'));
        return errs;
      },
    }),
    builtin({
      group: 'rbac.authorization.k8s.io',
      version: 'v1',
      resource: 'clusterroles',
      kind: 'ClusterRole',
      singular: 'clusterrole',
      namespaced: false,
      columns: [NAME_COLUMN, CREATED_AT],
    }),
    builtin({
      group: 'rbac.authorization.k8s.io',
      version: 'v1',
      resource: 'clusterrolebindings',
      kind: 'ClusterRoleBinding',
      singular: 'clusterrolebinding',
      namespaced: false,
      columns: [NAME_COLUMN, column('Role', roleRef), AGE_COLUMN],
      validate: (o) => {
        const errs = validateObjectMeta(o, false, dns1123Subdomain);
        if (!isObject(o.roleRef)) errs.push(fieldRequired('roleRef'));
        return errs;
      },
    }),
  ];
}

function ageOf(ts: string, now: number): string {
  return AGE_COLUMN.cell({ metadata: { creationTimestamp: ts } }, now) as string;
}

/** The namespaces every cluster starts with. */
export const INITIAL_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];
