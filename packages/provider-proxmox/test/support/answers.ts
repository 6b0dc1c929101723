// The PVE answers kept as fixtures (test/fixtures/pve/*.json): status, reason
// phrase, headers and body, each with where its text comes from. The double
// answers from them (the HTTPS fake sends them as they are, the seam fake reads
// them with the client's own parser), and the classify table is built from
// them, so a wording drift is caught in one place.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const DIR = fileURLToPath(new URL('../fixtures/pve/', import.meta.url));

/** One kept answer. */
export interface CapturedAnswer {
  readonly name: string;
  /** Where the text and the shape come from. */
  readonly source: string;
  /** The request that got it, `METHOD /api2/json/...`. */
  readonly request: string;
  /** The values in it that vary with the request (`node`, `vmid`, `storage`). */
  readonly vars: Readonly<Record<string, string>>;
  readonly status: number;
  readonly reason: string;
  /** Lower-case names; `date`, `expires` and `content-length` are made per answer. */
  readonly headers: Readonly<Record<string, string>>;
  /** As sent; empty when there is none. */
  readonly body: string;
}

const cache = new Map<string, CapturedAnswer>();

/** The kept answer `name` (the file name without `.json`). */
export function captured(name: string): CapturedAnswer {
  let a = cache.get(name);
  if (a === undefined) {
    const raw = JSON.parse(readFileSync(`${DIR}${name}.json`, 'utf8')) as Omit<
      CapturedAnswer,
      'name'
    >;
    a = { name, ...raw };
    cache.set(name, a);
  }
  return a;
}

/** Every kept answer's name. */
export function capturedNames(): string[] {
  return readdirSync(DIR)
    .filter((f) => f.endsWith('.json'))
    .map((f) => f.slice(0, -'.json'.length))
    .sort();
}

/**
 * The kept answer `name` for other values of its variables: every
 * occurrence of a kept value is replaced by the one given.
 */
export function render(
  name: string,
  vars: Readonly<Record<string, string | number>> = {},
): CapturedAnswer {
  const a = captured(name);
  const pairs = Object.entries(vars)
    .filter(([k]) => a.vars[k] !== undefined)
    .map(([k, v]) => [a.vars[k] as string, String(v)] as const);
  const sub = (s: string) => {
    let out = s;
    for (const [from, to] of pairs) out = out.split(from).join(to);
    return out;
  };
  return { ...a, reason: sub(a.reason), body: sub(a.body), request: sub(a.request) };
}

/** The `message` of a kept JSON error answer, without its newline. */
export function messageOf(a: CapturedAnswer): string {
  const body = JSON.parse(a.body) as { message?: string };
  return (body.message ?? '').replace(/\n$/, '');
}
