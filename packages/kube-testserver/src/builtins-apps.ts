/**
 * The `apps/v1` resources the server stores: Deployments, validated and
 * defaulted as kube-apiserver does and shown with its printer columns. No
 * controller runs: no ReplicaSet or Pod is made and the status stays what
 * a client writes to `/status`, so a test that needs the Pods runs what
 * they would run itself.
 *
 * @module
 */
import { builtin } from './builtin.js';
import { type FieldError, fieldInvalid, fieldNotSupported, fieldRequired } from './errors.js';
import { isObject, type JsonObject, type JsonValue } from './json.js';
import { podDefaults, podValidate } from './pods.js';
import { AGE_COLUMN, column, NAME_COLUMN, type ResourceType } from './resource-type.js';
import { dns1123Subdomain, validateObjectMeta } from './validation.js';

function obj(v: JsonValue | undefined): JsonObject {
  return isObject(v) ? v : {};
}

function num(v: JsonValue | undefined): number {
  return typeof v === 'number' ? v : 0;
}

/** `metav1.FormatLabelSelector`: `a=b,c in (x,y)`, or `<none>`. */
export function formatLabelSelector(sel: JsonValue | undefined): string {
  if (!isObject(sel)) return '<none>';
  const parts: string[] = [];
  const ml = obj(sel.matchLabels);
  for (const k of Object.keys(ml).sort()) parts.push(`${k}=${String(ml[k])}`);
  for (const e of Array.isArray(sel.matchExpressions) ? sel.matchExpressions : []) {
    if (!isObject(e)) continue;
    const values = Array.isArray(e.values) ? e.values.map(String).sort() : [];
    const op = String(e.operator ?? '');
    if (op === 'In') parts.push(`${String(e.key)} in (${values.join(',')})`);
    else if (op === 'NotIn') parts.push(`${String(e.key)} notin (${values.join(',')})`);
    else if (op === 'Exists') parts.push(String(e.key));
    else if (op === 'DoesNotExist') parts.push(`!${String(e.key)}`);
  }
  return parts.length === 0 ? '<none>' : parts.join(',');
}

/** Whether `labels` satisfy a `metav1.LabelSelector`; undefined for an empty one. */
function selects(sel: JsonObject, labels: JsonObject): boolean | undefined {
  const ml = obj(sel.matchLabels);
  const exprs = Array.isArray(sel.matchExpressions) ? sel.matchExpressions : [];
  if (Object.keys(ml).length === 0 && exprs.length === 0) return undefined;
  for (const [k, v] of Object.entries(ml)) if (labels[k] !== v) return false;
  for (const e of exprs) {
    if (!isObject(e)) return false;
    const key = String(e.key);
    const values = Array.isArray(e.values) ? e.values : [];
    const has = Object.hasOwn(labels, key);
    const ok =
      e.operator === 'In'
        ? has && values.includes(labels[key] as JsonValue)
        : e.operator === 'NotIn'
          ? !has || !values.includes(labels[key] as JsonValue)
          : e.operator === 'Exists'
            ? has
            : e.operator === 'DoesNotExist'
              ? !has
              : false;
    if (!ok) return false;
  }
  return true;
}

function deploymentDefaults(o: JsonObject): void {
  const spec = obj(o.spec);
  o.spec = spec;
  spec.replicas ??= 1;
  const strategy = obj(spec.strategy);
  spec.strategy = strategy;
  strategy.type ??= 'RollingUpdate';
  if (strategy.type === 'RollingUpdate') {
    const ru = obj(strategy.rollingUpdate);
    strategy.rollingUpdate = ru;
    ru.maxUnavailable ??= '25%';
    ru.maxSurge ??= '25%';
  }
  spec.revisionHistoryLimit ??= 10;
  spec.progressDeadlineSeconds ??= 600;
  const template = obj(spec.template);
  spec.template = template;
  template.metadata ??= { creationTimestamp: null };
  const pod: JsonObject = { spec: obj(template.spec) };
  podDefaults(pod);
  template.spec = pod.spec as JsonObject;
}

/** `ValidateDeployment` (and, on update, the immutable selector), in the real server's words. */
function deploymentValidate(o: JsonObject, old: JsonObject | undefined): FieldError[] {
  const errs = validateObjectMeta(o, true, dns1123Subdomain);
  const spec = obj(o.spec);
  const replicas = spec.replicas;
  if (typeof replicas === 'number' && replicas < 0) {
    errs.push(fieldInvalid('spec.replicas', replicas, 'must be greater than or equal to 0'));
  }
  const template = obj(spec.template);
  const labels = obj(obj(template.metadata).labels);
  if (!isObject(spec.selector)) {
    errs.push(fieldRequired('spec.selector'));
  } else {
    const match = selects(spec.selector, labels);
    if (match === undefined) {
      errs.push(
        fieldInvalid('spec.selector', spec.selector, 'empty selector is invalid for deployment'),
      );
    } else if (!match) {
      // The real server renders the labels as JSON here.
      errs.push({
        field: 'spec.template.metadata.labels',
        reason: 'FieldValueInvalid',
        body: `Invalid value: ${JSON.stringify(labels)}: \`selector\` does not match template \`labels\``,
      });
    }
  }
  const pod: JsonObject = {
    metadata: { name: 'template', namespace: 'default' },
    spec: obj(template.spec),
  };
  for (const e of podValidate(pod)) {
    if (!e.field.startsWith('spec.')) continue;
    errs.push({ ...e, field: `spec.template.${e.field}` });
  }
  const restart = obj(template.spec).restartPolicy;
  if (restart !== undefined && restart !== 'Always') {
    errs.push(fieldNotSupported('spec.template.spec.restartPolicy', restart, ['Always']));
  }
  const type = obj(spec.strategy).type;
  if (type !== undefined && type !== 'RollingUpdate' && type !== 'Recreate') {
    errs.push(fieldNotSupported('spec.strategy.type', type, ['Recreate', 'RollingUpdate']));
  }
  if (old !== undefined) {
    const before = obj(old.spec).selector;
    if (JSON.stringify(before) !== JSON.stringify(spec.selector)) {
      errs.push(fieldInvalid('spec.selector', spec.selector, 'field is immutable'));
    }
  }
  return errs;
}

/** The containers' names or images, comma-joined, for the wide columns. */
function containerCell(o: JsonObject, field: 'name' | 'image'): JsonValue {
  const cs = obj(obj(obj(o.spec).template).spec).containers;
  return (Array.isArray(cs) ? cs : []).map((c) => String(obj(c)[field] ?? '')).join(',');
}

/** The `apps/v1` types. */
export function appsTypes(): ResourceType[] {
  return [
    builtin({
      group: 'apps',
      version: 'v1',
      resource: 'deployments',
      kind: 'Deployment',
      singular: 'deployment',
      namespaced: true,
      shortNames: ['deploy'],
      categories: ['all'],
      statusSubresource: true,
      generation: true,
      verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
      columns: [
        NAME_COLUMN,
        column('Ready', (o) => `${num(obj(o.status).readyReplicas)}/${num(obj(o.spec).replicas)}`),
        column('Up-to-date', (o) => num(obj(o.status).updatedReplicas), { type: 'integer' }),
        column('Available', (o) => num(obj(o.status).availableReplicas), { type: 'integer' }),
        AGE_COLUMN,
        column('Containers', (o) => containerCell(o, 'name'), { priority: 1 }),
        column('Images', (o) => containerCell(o, 'image'), { priority: 1 }),
        column('Selector', (o) => formatLabelSelector(obj(o.spec).selector), { priority: 1 }),
      ],
      listMapKeys: {
        'spec.template.spec.containers': ['name'],
        'spec.template.spec.containers.ports': ['containerPort', 'protocol'],
        'spec.template.spec.containers.env': ['name'],
        'spec.template.spec.containers.volumeMounts': ['mountPath'],
        'spec.template.spec.volumes': ['name'],
        'status.conditions': ['type'],
      },
      defaults: deploymentDefaults,
      prepareCreate: (o) => {
        o.status = {};
      },
      validate: deploymentValidate,
    }),
  ];
}
