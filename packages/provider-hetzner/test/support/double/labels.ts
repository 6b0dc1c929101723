// Test support (not a test file): labels as the Hetzner Cloud API double checks them, and its
// label selector language, both as the API documents them ("Labels", "Label Selector"):
// keys with an optional DNS-subdomain prefix, values of at most 63 characters beginning and
// ending alphanumeric, the `hetzner.cloud/` prefix reserved; selectors `k=v`, `k==v`, `k!=v`,
// `k`, `!k`, `k in (v1,v2)`, `k notin (v1,v2)`, joined by commas.

const VALUE = /^(?:[a-zA-Z0-9](?:[-_.a-zA-Z0-9]{0,61}[a-zA-Z0-9])?)?$/;
const NAME = /^[a-zA-Z0-9](?:[-_.a-zA-Z0-9]{0,61}[a-zA-Z0-9])?$/;
const PREFIX =
  /^(?=.{1,253}$)[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?)*$/;

/** Why a label key is refused, or undefined. */
export function labelKeyProblem(key: string): string | undefined {
  const slash = key.lastIndexOf('/');
  const prefix = slash < 0 ? undefined : key.slice(0, slash);
  const name = slash < 0 ? key : key.slice(slash + 1);
  if (prefix !== undefined && (!PREFIX.test(prefix) || prefix === 'hetzner.cloud')) {
    return 'invalid label key';
  }
  return NAME.test(name) ? undefined : 'invalid label key';
}

/** The `invalid_input` messages for a labels object, or an empty list when it is good. */
export function labelsProblems(labels: unknown): string[] {
  if (labels === undefined) return [];
  if (typeof labels !== 'object' || labels === null || Array.isArray(labels)) {
    return ['labels must be an object'];
  }
  const out = new Set<string>();
  for (const [k, v] of Object.entries(labels as Record<string, unknown>)) {
    const keyProblem = labelKeyProblem(k);
    if (keyProblem !== undefined) out.add(keyProblem);
    if (typeof v !== 'string' || !VALUE.test(v)) out.add('invalid label value');
  }
  return [...out];
}

type Requirement =
  | { readonly op: 'eq' | 'ne'; readonly key: string; readonly value: string }
  | { readonly op: 'exists' | 'absent'; readonly key: string }
  | { readonly op: 'in' | 'notin'; readonly key: string; readonly values: readonly string[] };

/** A selector that does not parse: `message` names the position, as the API does. */
export class SelectorError extends Error {}

const WORD = /[-_./a-zA-Z0-9]/;

/** Parses a label selector into its requirements (all must hold). */
export function parseSelector(text: string): Requirement[] {
  const out: Requirement[] = [];
  let pos = 0;
  const fail = (what: string): never => {
    throw new SelectorError(`invalid label_selector: ${what} at pos ${pos}`);
  };
  const space = () => {
    while (text[pos] === ' ') pos++;
  };
  const word = (): string => {
    space();
    const start = pos;
    while (pos < text.length && WORD.test(text[pos] as string)) pos++;
    return text.slice(start, pos);
  };
  while (pos < text.length) {
    space();
    let negated = false;
    if (text[pos] === '!') {
      negated = true;
      pos++;
    }
    const key = word();
    if (key === '' || labelKeyProblem(key) !== undefined) fail('expected label key');
    space();
    if (negated) {
      out.push({ op: 'absent', key });
    } else if (text.startsWith('==', pos) || text.startsWith('!=', pos) || text[pos] === '=') {
      const op = text.startsWith('!=', pos) ? 'ne' : 'eq';
      pos += text.startsWith('==', pos) || op === 'ne' ? 2 : 1;
      const value = word();
      if (!VALUE.test(value)) fail('expected label value');
      out.push({ op, key, value });
    } else if (text.startsWith('in ', pos) || text.startsWith('notin ', pos)) {
      const op = text.startsWith('in ', pos) ? 'in' : 'notin';
      pos += op.length;
      space();
      if (text[pos] !== '(') fail('expected (');
      pos++;
      const values: string[] = [];
      for (;;) {
        const v = word();
        if (!VALUE.test(v)) fail('expected label value');
        values.push(v);
        space();
        if (text[pos] === ',') {
          pos++;
          continue;
        }
        if (text[pos] === ')') {
          pos++;
          break;
        }
        fail('expected , or )');
      }
      out.push({ op, key, values });
    } else {
      out.push({ op: 'exists', key });
    }
    space();
    if (pos < text.length) {
      if (text[pos] !== ',') fail('expected comma');
      pos++;
      if (pos >= text.length) fail('expected label key');
    }
  }
  return out;
}

/** Whether labels satisfy every requirement. */
export function matches(reqs: readonly Requirement[], labels: Readonly<Record<string, string>>) {
  return reqs.every((r) => {
    const v = labels[r.key];
    switch (r.op) {
      case 'eq':
        return v === r.value;
      case 'ne':
        return v !== r.value;
      case 'exists':
        return v !== undefined;
      case 'absent':
        return v === undefined;
      case 'in':
        return v !== undefined && r.values.includes(v);
      default:
        return v === undefined || !r.values.includes(v);
    }
  });
}
