// Test support (not a test file): the wire format of the EC2 Query API as the double speaks it.
// Requests are form-encoded POST bodies whose keys flatten lists and structures with dots and
// 1-based indices (`TagSpecification.1.Tag.2.Key`); answers are XML in the EC2 namespace, with
// lists as `<name><item>…</item></name>`, and errors are `Response/Errors/Error` (Code, Message)
// with a `RequestID`, as EC2 answers them.
import { randomBytes, randomUUID } from 'node:crypto';

/** A request's parameters, unflattened: lists for numbered keys, objects for dotted ones. */
export type Params = { [key: string]: Param };
export type Param = string | Params | Param[];

/** The XML namespace of every EC2 answer. */
export const EC2_XMLNS = 'http://ec2.amazonaws.com/doc/2016-11-15/';

/** Parses a form body into nested parameters (`Filter.1.Value.2` → `{ Filter: [{ Value: [, x] }] }`). */
export function parseForm(body: string): Params {
  const root: Params = {};
  for (const [key, value] of new URLSearchParams(body)) {
    const path = key.split('.');
    let node: Params | Param[] = root;
    path.forEach((part, i) => {
      const last = i === path.length - 1;
      const next = path[i + 1];
      const index = /^\d+$/.test(part) ? Number(part) - 1 : undefined;
      const make = (): Param => (last ? value : /^\d+$/.test(next ?? '') ? [] : {});
      if (Array.isArray(node)) {
        const at = index ?? 0;
        node[at] ??= make();
        if (last) node[at] = value;
        node = node[at] as Params | Param[];
      } else {
        const record: Params = node;
        if (last) record[part] = value;
        else record[part] ??= make();
        node = record[part] as Params | Param[];
      }
    });
  }
  return root;
}

/** A string parameter, or undefined. */
export function str(p: Params, key: string): string | undefined {
  const v = p[key];
  return typeof v === 'string' ? v : undefined;
}

/** A list parameter's entries (holes dropped), or an empty list. */
export function list(p: Params | undefined, key: string): Param[] {
  const v = p?.[key];
  return Array.isArray(v) ? v.filter((x) => x !== undefined) : [];
}

/** A list parameter of strings. */
export function strings(p: Params | undefined, key: string): string[] {
  return list(p, key).filter((x): x is string => typeof x === 'string');
}

/** A list parameter of structures. */
export function records(p: Params | undefined, key: string): Params[] {
  return list(p, key).filter(
    (x): x is Params => typeof x === 'object' && x !== null && !Array.isArray(x),
  );
}

/** A structure parameter, or undefined. */
export function record(p: Params | undefined, key: string): Params | undefined {
  const v = p?.[key];
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? v : undefined;
}

/** A boolean parameter (`true` / `false`), or undefined. */
export function bool(p: Params | undefined, key: string): boolean | undefined {
  const v = p?.[key];
  return v === 'true' ? true : v === 'false' ? false : undefined;
}

/** What an XML element holds: text, children, a list (of `item`s), or nothing (left out). */
export type Xml =
  | string
  | number
  | boolean
  | undefined
  | readonly Xml[]
  | { readonly [k: string]: Xml };

function escapeXml(s: string): string {
  return s.replace(/[<>&'"]/g, (c) =>
    c === '<' ? '&lt;' : c === '>' ? '&gt;' : c === '&' ? '&amp;' : c === "'" ? '&apos;' : '&quot;',
  );
}

/** One element: `<name>…</name>`, lists as `item`s, an empty list as `<name/>`. */
export function xml(name: string, v: Xml): string {
  if (v === undefined) return '';
  if (Array.isArray(v)) {
    if (v.length === 0) return `<${name}/>`;
    return `<${name}>${v.map((x) => xml('item', x)).join('')}</${name}>`;
  }
  if (typeof v === 'object') {
    const inner = Object.entries(v as Record<string, Xml>)
      .map(([k, x]) => xml(k, x))
      .join('');
    return `<${name}>${inner}</${name}>`;
  }
  return `<${name}>${escapeXml(String(v))}</${name}>`;
}

/** The body of a successful answer to `action`. */
export function answer(action: string, fields: Record<string, Xml>, requestId: string): string {
  const inner = Object.entries(fields)
    .map(([k, v]) => xml(k, v))
    .join('');
  return `<?xml version="1.0" encoding="UTF-8"?>\n<${action}Response xmlns="${EC2_XMLNS}"><requestId>${requestId}</requestId>${inner}</${action}Response>`;
}

/** A failure as EC2 reports it: an HTTP status, a Code and a Message. */
export class Ec2Fault extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }

  /** The XML error document EC2 answers with. */
  body(requestId: string): string {
    return `<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>${escapeXml(this.code)}</Code><Message>${escapeXml(this.message)}</Message></Error></Errors><RequestID>${requestId}</RequestID></Response>`;
  }
}

/** A 400 client error. */
export function clientError(code: string, message: string): Ec2Fault {
  return new Ec2Fault(400, code, message);
}

/** A request ID, as EC2 writes them (a UUID). */
export function requestId(): string {
  return randomUUID();
}

/** A resource ID with EC2's long form: `<prefix>-` and 17 hex digits. */
export function resourceId(prefix: string): string {
  return `${prefix}-${randomBytes(9).toString('hex').slice(0, 17)}`;
}

/** EC2's timestamps: ISO 8601 in UTC with milliseconds. */
export function ec2Time(d: Date): string {
  return d.toISOString();
}

/** Whether `value` matches a filter value, with EC2's `*` and `?` wildcards. */
export function globMatch(pattern: string, value: string): boolean {
  const re = pattern
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${re}$`, 's').test(value);
}

/** A request's filters: name → accepted values. */
export function filtersOf(p: Params): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const f of records(p, 'Filter')) {
    const name = str(f, 'Name');
    if (name === undefined)
      throw clientError('InvalidParameterValue', 'The filter name is missing');
    out.set(name, [...(out.get(name) ?? []), ...strings(f, 'Value')]);
  }
  return out;
}

/** Tags as `tagSet` items. */
export function tagSet(tags: ReadonlyMap<string, string>): Xml[] {
  return [...tags].map(([key, value]) => ({ key, value }));
}

/** Whether a resource's tags pass the `tag:<key>` and `tag-key` filters. */
export function tagsMatch(
  tags: ReadonlyMap<string, string>,
  name: string,
  values: string[],
): boolean | undefined {
  if (name.startsWith('tag:')) {
    const v = tags.get(name.slice(4));
    return v !== undefined && values.some((x) => globMatch(x, v));
  }
  if (name === 'tag-key') return [...tags.keys()].some((k) => values.some((x) => globMatch(x, k)));
  if (name === 'tag-value')
    return [...tags.values()].some((v) => values.some((x) => globMatch(x, v)));
  return undefined;
}

/**
 * One page of `all` for `MaxResults` and `NextToken` (an opaque offset); the
 * token of the next page when there is one.
 */
export function page<T>(
  all: readonly T[],
  p: Params,
  limits: { readonly min: number; readonly max: number },
): { items: T[]; next: string | undefined } {
  const max = str(p, 'MaxResults');
  const token = str(p, 'NextToken');
  let offset = 0;
  if (token !== undefined) {
    const m = /^pg1:(\d+)$/.exec(Buffer.from(token, 'base64').toString('utf8'));
    if (m === null)
      throw clientError('InvalidParameterValue', `Invalid value '${token}' for nextToken`);
    offset = Number(m[1]);
  }
  if (max === undefined) return { items: all.slice(offset), next: undefined };
  const n = Number(max);
  if (!Number.isInteger(n) || n < limits.min || n > limits.max) {
    throw clientError(
      'InvalidParameterValue',
      `Value ( ${max} ) for parameter maxResults is invalid. Expecting a value greater than ${limits.min - 1}.`,
    );
  }
  const items = all.slice(offset, offset + n);
  const end = offset + n;
  return {
    items,
    next: end < all.length ? Buffer.from(`pg1:${end}`).toString('base64') : undefined,
  };
}
