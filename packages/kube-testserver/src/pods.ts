/**
 * Pods as the real server defaults, validates and prints them; a Pod
 * template (a Deployment's) is defaulted and validated the same way.
 *
 * @module
 */
import { type FieldError, fieldRequired } from './errors.js';
import { isObject, type JsonObject, type JsonValue, meta, str } from './json.js';
import { dns1123Subdomain, validateObjectMeta } from './validation.js';

/** A JSON value as an array (empty when it is none). */
export function arr(v: JsonValue | undefined): JsonValue[] {
  return Array.isArray(v) ? v : [];
}

/** A Pod's defaults, as the real server fills them (also those of a Pod template). */
export function podDefaults(obj: JsonObject) {
  const spec = isObject(obj.spec) ? obj.spec : {};
  obj.spec = spec;
  spec.restartPolicy ??= 'Always';
  spec.dnsPolicy ??= 'ClusterFirst';
  spec.schedulerName ??= 'default-scheduler';
  spec.terminationGracePeriodSeconds ??= 30;
  spec.securityContext ??= {};
  spec.enableServiceLinks ??= true;
  spec.preemptionPolicy ??= 'PreemptLowerPriority';
  spec.priority ??= 0;
  for (const list of ['initContainers', 'containers']) {
    for (const c of arr(spec[list])) {
      if (!isObject(c)) continue;
      const image = str(c, 'image') ?? '';
      const tagged = /:[^/]+$/.test(image) && !image.endsWith(':latest');
      c.imagePullPolicy ??= tagged || image.includes('@') ? 'IfNotPresent' : 'Always';
      c.terminationMessagePath ??= '/dev/termination-log';
      c.terminationMessagePolicy ??= 'File';
      c.resources ??= {};
      // Limits without requests: the requests default to the limits.
      const res = c.resources;
      if (isObject(res) && isObject(res.limits)) {
        const requests = isObject(res.requests) ? res.requests : {};
        for (const [k, v] of Object.entries(res.limits)) requests[k] ??= v;
        res.requests = requests;
      }
      for (const p of arr(c.ports)) if (isObject(p)) p.protocol ??= 'TCP';
    }
  }
}

/** A Pod's checks (also those of a Pod template, under its path). */
export function podValidate(obj: JsonObject): FieldError[] {
  const errs = validateObjectMeta(obj, true, dns1123Subdomain);
  const spec = isObject(obj.spec) ? obj.spec : {};
  const containers = arr(spec.containers);
  if (containers.length === 0) errs.push(fieldRequired('spec.containers'));
  containers.forEach((c, i) => {
    if (!isObject(c)) return;
    if (typeof c.name !== 'string' || c.name === '')
      errs.push(fieldRequired(`spec.containers[${i}].name`));
    if (typeof c.image !== 'string' || c.image === '')
      errs.push(fieldRequired(`spec.containers[${i}].image`));
  });
  return errs;
}

/** The Ready cell of `kubectl get pods`: ready containers of all. */
export function podReady(o: JsonObject): JsonValue {
  const spec = isObject(o.spec) ? o.spec : {};
  const status = isObject(o.status) ? o.status : {};
  const total = arr(spec.containers).length;
  const ready = arr(status.containerStatuses).filter((s) => isObject(s) && s.ready === true).length;
  return `${ready}/${total}`;
}

/** The Status cell of `kubectl get pods`: the phase, or Terminating once deleted. */
export function podStatus(o: JsonObject): JsonValue {
  if (meta(o).deletionTimestamp !== undefined) return 'Terminating';
  return isObject(o.status) ? (o.status.phase ?? '') : '';
}

/** The Restarts cell: restarts of every container. */
export function podRestarts(o: JsonObject): JsonValue {
  const status = isObject(o.status) ? o.status : {};
  let n = 0;
  for (const s of arr(status.containerStatuses))
    if (isObject(s) && typeof s.restartCount === 'number') n += s.restartCount;
  return n;
}
