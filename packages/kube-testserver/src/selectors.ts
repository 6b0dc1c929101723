/**
 * Label and field selectors: parsing them into predicates over objects,
 * with the fields each built-in supports.
 *
 * @module
 */
import { badRequest } from './errors.js';
import { getPath, type JsonObject, stringMap } from './json.js';

/** Whether an object's labels (or fields) satisfy a selector. */
export type Predicate = (obj: JsonObject) => boolean;

interface Requirement {
  key: string;
  op: '=' | '!=' | 'in' | 'notin' | 'exists' | '!';
  values: string[];
}

function splitTopLevel(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of s) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      out.push(cur);
      cur = '';
    } else cur += ch;
  }
  if (cur.trim() !== '') out.push(cur);
  return out.map((x) => x.trim()).filter((x) => x !== '');
}

function parseRequirement(part: string): Requirement {
  const not = /^!\s*([\w./-]+)$/.exec(part);
  if (not !== null) return { key: not[1]!, op: '!', values: [] };
  const set = /^([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(part);
  if (set !== null)
    return {
      key: set[1]!,
      op: set[2] as 'in' | 'notin',
      values: set[3]!
        .split(',')
        .map((v) => v.trim())
        .filter((v) => v !== ''),
    };
  const eq = /^([\w./-]+)\s*(==|=|!=)\s*([\w.-]*)$/.exec(part);
  if (eq !== null) return { key: eq[1]!, op: eq[2] === '!=' ? '!=' : '=', values: [eq[3]!] };
  const exists = /^([\w./-]+)$/.exec(part);
  if (exists !== null) return { key: exists[1]!, op: 'exists', values: [] };
  throw badRequest(
    `unable to parse requirement: found '${part}', expected: in, notin, =, ==, !=, gt, lt`,
  );
}

/** Parses a label selector: `a=b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`. */
export function parseLabelSelector(s: string): Predicate {
  const reqs: Requirement[] = [];
  for (const part of splitTopLevel(s)) reqs.push(parseRequirement(part));
  return (obj) => {
    const labels = stringMap(
      typeof obj.metadata === 'object' && obj.metadata !== null && !Array.isArray(obj.metadata)
        ? obj.metadata
        : undefined,
      'labels',
    );
    return reqs.every((r) => {
      const v = labels[r.key];
      switch (r.op) {
        case '=':
          return v === r.values[0];
        case '!=':
          return v !== r.values[0];
        case 'in':
          return v !== undefined && r.values.includes(v);
        case 'notin':
          return v === undefined || !r.values.includes(v);
        case 'exists':
          return v !== undefined;
        case '!':
          return v === undefined;
      }
      return false;
    });
  };
}

/** Field selectors each built-in supports besides `metadata.name` and `metadata.namespace`. */
const FIELDS: Record<string, readonly string[]> = {
  '/pods': [
    'spec.nodeName',
    'spec.restartPolicy',
    'spec.schedulerName',
    'spec.serviceAccountName',
    'status.phase',
    'status.podIP',
    'status.nominatedNodeName',
  ],
  '/secrets': ['type'],
  '/events': [
    'involvedObject.kind',
    'involvedObject.namespace',
    'involvedObject.name',
    'involvedObject.uid',
    'involvedObject.apiVersion',
    'involvedObject.resourceVersion',
    'involvedObject.fieldPath',
    'reason',
    'reportingComponent',
    'source',
    'type',
  ],
  '/namespaces': ['status.phase'],
};

/**
 * Parses a field selector (`metadata.name=x,status.phase!=Running`) for one
 * resource; fields it does not support are the real server's 400.
 */
export function parseFieldSelector(s: string, resource: string, custom: boolean): Predicate {
  const reqs: { path: string[]; neg: boolean; value: string }[] = [];
  const allowed = ['metadata.name', 'metadata.namespace', ...(FIELDS[resource] ?? [])];
  for (const part of splitTopLevel(s)) {
    const m = /^([\w.]+)\s*(==|=|!=)\s*(.*)$/.exec(part);
    if (m === null) throw badRequest(`invalid selector: '${s}'; can't understand '${part}'`);
    const field = m[1]!;
    if (!allowed.includes(field)) {
      throw badRequest(
        custom
          ? `"${field}" is not a known field selector: only "metadata.name", "metadata.namespace"`
          : `field label not supported: ${field}`,
      );
    }
    reqs.push({ path: field.split('.'), neg: m[2] === '!=', value: m[3]!.trim() });
  }
  return (obj) =>
    reqs.every((r) => {
      const v = getPath(obj, r.path);
      const sv = v === undefined || v === null ? '' : String(v);
      return r.neg ? sv !== r.value : sv === r.value;
    });
}
