// Test support (not a test file): the list `filter` language of the Compute API, as its
// reference describes it: AIP-160 comparisons (`=`, `!=`, `>`, `<`, `>=`, `<=`, `:` with `:*`
// for presence) joined by parentheses, AND and OR, or the older regular-expression form
// (`field eq literal`, `field ne literal`, which must match the whole field). Fields are
// dotted paths (`labels.proxy-operator-managed`, `scheduling.automaticRestart`).

/** A parsed filter: a predicate over a resource's JSON. */
export type Predicate = (resource: unknown) => boolean;

/** A filter the API refuses: `Invalid list filter expression`. */
export class FilterError extends Error {}

type Token = { kind: 'lparen' | 'rparen' | 'word' | 'string' | 'op'; text: string };

function tokenize(src: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const ch = src[i] as string;
    if (/\s/.test(ch)) {
      i++;
    } else if (ch === '(') {
      out.push({ kind: 'lparen', text: ch });
      i++;
    } else if (ch === ')') {
      out.push({ kind: 'rparen', text: ch });
      i++;
    } else if (ch === '"' || ch === "'") {
      let j = i + 1;
      let text = '';
      while (j < src.length && src[j] !== ch) {
        if (src[j] === '\\' && j + 1 < src.length) {
          // An escaped quote is the quote; other escapes stay (they are regular expressions).
          text += src[j + 1] === ch ? ch : `\\${src[j + 1]}`;
          j += 2;
        } else {
          text += src[j];
          j++;
        }
      }
      if (j >= src.length) throw new FilterError('unterminated string');
      out.push({ kind: 'string', text });
      i = j + 1;
    } else if (/[=!<>:]/.test(ch)) {
      const two = src.slice(i, i + 2);
      const op = ['!=', '>=', '<='].includes(two) ? two : ch;
      if (op === '!') throw new FilterError('lone !');
      out.push({ kind: 'op', text: op });
      i += op.length;
    } else {
      let j = i;
      while (j < src.length && !/[\s()=!<>:"']/.test(src[j] as string)) j++;
      out.push({ kind: 'word', text: src.slice(i, j) });
      i = j;
    }
  }
  return out;
}

/** The value at a dotted path of a JSON value; labels keys may hold dashes. */
export function fieldValue(resource: unknown, path: string): unknown {
  let cur: unknown = resource;
  for (const part of path.split('.')) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

function asText(v: unknown): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return undefined;
}

function globToRegExp(glob: string): RegExp {
  const esc = glob.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*');
  return new RegExp(`^${esc}$`);
}

function compare(actual: unknown, op: string, literal: string): boolean {
  if (op === ':' && literal === '*') return actual !== undefined && actual !== null;
  if (Array.isArray(actual)) {
    if (op === ':' || op === '=') return actual.some((a) => compare(a, '=', literal));
    if (op === '!=') return !actual.some((a) => compare(a, '=', literal));
    return false;
  }
  const text = asText(actual);
  switch (op) {
    case '=':
    case ':':
      return text !== undefined && globToRegExp(literal).test(text);
    case '!=':
      return text === undefined || !globToRegExp(literal).test(text);
    case 'eq':
      return text !== undefined && new RegExp(`^(?:${literal})$`).test(text);
    case 'ne':
      return text === undefined || !new RegExp(`^(?:${literal})$`).test(text);
    default: {
      if (text === undefined) return false;
      const a = Number(text);
      const b = Number(literal);
      const [x, y] = Number.isNaN(a) || Number.isNaN(b) ? [text, literal] : [a, b];
      if (op === '>') return x > y;
      if (op === '<') return x < y;
      if (op === '>=') return x >= y;
      return x <= y;
    }
  }
}

/**
 * Parses a filter; throws {@link FilterError} for one the API would refuse.
 * An empty filter matches everything.
 */
export function parseFilter(src: string | undefined): Predicate {
  if (src === undefined || src.trim() === '') return () => true;
  const toks = tokenize(src);
  let pos = 0;
  const peek = () => toks[pos];
  const next = () => {
    const t = toks[pos++];
    if (t === undefined) throw new FilterError('unexpected end');
    return t;
  };

  const comparison = (): Predicate => {
    const field = next();
    if (field.kind !== 'word') throw new FilterError(`expected a field, got ${field.text}`);
    const opTok = next();
    let op: string;
    if (opTok.kind === 'op') op = opTok.text;
    else if (opTok.kind === 'word' && (opTok.text === 'eq' || opTok.text === 'ne')) op = opTok.text;
    else throw new FilterError(`expected an operator after ${field.text}`);
    const valTok = next();
    let literal: string;
    if (op === ':' && valTok.kind === 'word' && valTok.text === '*') literal = '*';
    else if (valTok.kind === 'word' || valTok.kind === 'string') literal = valTok.text;
    else throw new FilterError(`expected a value after ${field.text} ${op}`);
    if (op === 'eq' || op === 'ne') {
      try {
        new RegExp(literal);
      } catch {
        throw new FilterError(`bad regular expression ${literal}`);
      }
    }
    return (r) => compare(fieldValue(r, field.text), op, literal);
  };

  const unary = (): Predicate => {
    const t = peek();
    if (t?.kind === 'word' && (t.text === 'NOT' || t.text === '-')) {
      pos++;
      const inner = unary();
      return (r) => !inner(r);
    }
    if (t?.kind === 'lparen') {
      pos++;
      const inner = disjunction();
      if (next().kind !== 'rparen') throw new FilterError('expected )');
      return inner;
    }
    return comparison();
  };

  // Juxtaposition and AND bind tighter than OR.
  const conjunction = (): Predicate => {
    const parts = [unary()];
    for (;;) {
      const t = peek();
      if (t === undefined || t.kind === 'rparen') break;
      if (t.kind === 'word' && t.text === 'OR') break;
      if (t.kind === 'word' && t.text === 'AND') pos++;
      parts.push(unary());
    }
    return (r) => parts.every((p) => p(r));
  };

  function disjunction(): Predicate {
    const parts = [conjunction()];
    while (peek()?.kind === 'word' && peek()?.text === 'OR') {
      pos++;
      parts.push(conjunction());
    }
    return (r) => parts.some((p) => p(r));
  }

  const pred = disjunction();
  if (pos !== toks.length) throw new FilterError(`unexpected ${toks[pos]?.text}`);
  return pred;
}
