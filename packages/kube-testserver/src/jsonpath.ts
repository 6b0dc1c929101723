/**
 * The JSONPath subset printer columns use (`.spec.port`,
 * `.status.conditions[0].type`): parsing it and evaluating it.
 *
 * @module
 */
import { isObject, type JsonValue } from './json.js';

type Step =
  | { kind: 'field'; name: string }
  | { kind: 'index'; index: number }
  | { kind: 'all' }
  | { kind: 'filter'; path: string[]; value: JsonValue | undefined };

/**
 * Parses the JSONPath subset printer columns use: `.spec.port`,
 * `.metadata.labels['app']`, `.items[0]`, `.items[*].name` and
 * `.status.conditions[?(@.type=="Ready")].status`. Returns undefined for
 * anything else.
 */
export function parseJsonPath(expr: string): Step[] | undefined {
  let s = expr.trim();
  if (s.startsWith('{') && s.endsWith('}')) s = s.slice(1, -1);
  if (s.startsWith('$')) s = s.slice(1);
  const steps: Step[] = [];
  let i = 0;
  while (i < s.length) {
    if (s[i] === '.') {
      const m = /^\.([A-Za-z0-9_\-$]+)/.exec(s.slice(i));
      if (m === null) return undefined;
      steps.push({ kind: 'field', name: m[1]! });
      i += m[0].length;
    } else if (s[i] === '[') {
      const end = s.indexOf(']', i);
      if (end < 0) return undefined;
      const inner = s.slice(i + 1, end).trim();
      i = end + 1;
      if (inner === '*') steps.push({ kind: 'all' });
      else if (/^-?\d+$/.test(inner)) steps.push({ kind: 'index', index: Number(inner) });
      else if (/^'[^']*'$|^"[^"]*"$/.test(inner))
        steps.push({ kind: 'field', name: inner.slice(1, -1) });
      else {
        const f =
          /^\?\(@((?:\.[A-Za-z0-9_-]+)+)\s*(?:==\s*(?:"([^"]*)"|'([^']*)'|(-?[\d.]+|true|false)))?\s*\)$/.exec(
            inner,
          );
        if (f === null) return undefined;
        const raw = f[2] ?? f[3];
        const lit = f[4];
        steps.push({
          kind: 'filter',
          path: f[1]!.slice(1).split('.'),
          value:
            raw !== undefined
              ? raw
              : lit !== undefined
                ? (JSON.parse(lit) as JsonValue)
                : undefined,
        });
      }
    } else return undefined;
  }
  return steps;
}

/** Every value the path selects, in document order. */
export function evalJsonPath(steps: readonly Step[], root: JsonValue): JsonValue[] {
  let cur: JsonValue[] = [root];
  for (const step of steps) {
    const next: JsonValue[] = [];
    for (const v of cur) {
      if (step.kind === 'field') {
        if (isObject(v) && step.name in v) next.push(v[step.name]!);
      } else if (step.kind === 'index') {
        if (Array.isArray(v)) {
          const x = v[step.index < 0 ? v.length + step.index : step.index];
          if (x !== undefined) next.push(x);
        }
      } else if (step.kind === 'all') {
        if (Array.isArray(v)) next.push(...v);
        else if (isObject(v)) next.push(...Object.values(v));
      } else if (Array.isArray(v)) {
        for (const item of v) {
          let x: JsonValue | undefined = item;
          for (const p of step.path) x = isObject(x) ? x[p] : undefined;
          if (step.value === undefined ? x !== undefined : x === step.value) next.push(item);
        }
      }
    }
    cur = next;
  }
  return cur;
}
