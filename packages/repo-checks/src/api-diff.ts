// What kind of change lies between two API reports, and the version bump it needs. A report
// is read as blocks of declarations (api-extractor separates them with blank lines), keyed by
// kind and name. A block that is gone, or whose lines changed, is breaking; a new block is an
// addition, and so is a class, interface or enum that only gained lines, except an interface
// or object type that gained a required member, which breaks whoever implements or builds it.

/** The kind of an API change, from least to most severe. */
export type ApiChange = 'none' | 'additive' | 'breaking';

/** A version bump as changesets names them; `none` is no bump. */
export type Bump = 'none' | 'patch' | 'minor' | 'major';

/** The bumps in order of size. */
export const BUMPS: readonly Bump[] = ['none', 'patch', 'minor', 'major'];

/** The change between two reports, with the declarations each part names. */
export interface ReportDiff {
  readonly change: ApiChange;
  readonly added: readonly string[];
  readonly removed: readonly string[];
  /** Declarations whose lines changed in a breaking way. */
  readonly changed: readonly string[];
  /** Declarations that only gained members in a compatible way. */
  readonly extended: readonly string[];
}

const DECLARATION =
  /^(?:export\s+)?(?:declare\s+)?(?:abstract\s+)?(class|interface|type|function|const|let|var|enum|namespace)\s+([\w$]+)/;

/** The code of a report: what lies inside its ```ts fence. */
function code(text: string): string {
  const report = text.replaceAll('\r\n', '\n');
  const start = report.indexOf('```ts\n');
  if (start < 0) return '';
  const end = report.indexOf('\n```', start + 6);
  return report.slice(start + 6, end < 0 ? undefined : end);
}

/**
 * The declaration blocks of a report, by `<kind> <name>` (overloads share one key and their
 * lines). Imports, warnings and the package-documentation note are not API and are dropped.
 */
export function reportBlocks(report: string): Map<string, string[]> {
  const blocks = new Map<string, string[]>();
  for (const chunk of code(report).split(/\n\s*\n/)) {
    const lines = chunk.split('\n').filter((l) => l.trim() !== '' && !/^\/\/ Warning:/.test(l));
    const first = lines.find((l) => !l.startsWith('//'));
    if (first === undefined || first.startsWith('import ')) continue;
    const m = DECLARATION.exec(first);
    const key = m === null ? first.trim() : `${m[1]} ${m[2]}`;
    blocks.set(key, [...(blocks.get(key) ?? []), ...lines]);
  }
  return blocks;
}

/** A member line of an interface or object type that a value must have. */
function isRequiredMember(line: string): boolean {
  const m =
    /^ {4}(?:readonly\s+)?(?:get\s+|set\s+)?(\[[^\]]+\]|[\w$]+|"[^"]*"|'[^']*')(\?)?\s*(?:<[^>]*>)?\s*[:(]/.exec(
      line,
    );
  return m !== null && m[2] === undefined;
}

function classifyBlock(
  key: string,
  before: readonly string[],
  after: readonly string[],
): ApiChange {
  if (before.join('\n') === after.join('\n')) return 'none';
  const remaining = [...after];
  for (const line of before) {
    const i = remaining.indexOf(line);
    if (i < 0) return 'breaking';
    remaining.splice(i, 1);
  }
  const kind = key.split(' ')[0];
  if (kind !== 'class' && kind !== 'interface' && kind !== 'enum' && kind !== 'type')
    return 'breaking';
  if ((kind === 'interface' || kind === 'type') && remaining.some(isRequiredMember))
    return 'breaking';
  return 'additive';
}

/** The change from report `before` (undefined: the entry point did not exist) to `after`. */
export function diffReports(before: string | undefined, after: string | undefined): ReportDiff {
  const a = before === undefined ? new Map<string, string[]>() : reportBlocks(before);
  const b = after === undefined ? new Map<string, string[]>() : reportBlocks(after);
  const added = [...b.keys()].filter((k) => !a.has(k));
  const removed = [...a.keys()].filter((k) => !b.has(k));
  const changed: string[] = [];
  const extended: string[] = [];
  for (const [key, lines] of a) {
    const next = b.get(key);
    if (next === undefined) continue;
    const c = classifyBlock(key, lines, next);
    if (c === 'breaking') changed.push(key);
    else if (c === 'additive') extended.push(key);
  }
  const change: ApiChange =
    removed.length > 0 || changed.length > 0
      ? 'breaking'
      : added.length > 0 || extended.length > 0
        ? 'additive'
        : 'none';
  return { change, added, removed, changed, extended };
}

/** The most severe of some changes. */
export function worstChange(changes: Iterable<ApiChange>): ApiChange {
  let worst: ApiChange = 'none';
  for (const c of changes)
    if (c === 'breaking' || (c === 'additive' && worst === 'none')) worst = c;
  return worst;
}

/**
 * The smallest bump an API change needs at `version` (the last released version): breaking is
 * major from 1.0.0 on and minor before it, an addition minor, no API change no bump.
 */
export function requiredBump(change: ApiChange, version: string): Bump {
  if (change === 'none') return 'none';
  if (change === 'additive') return 'minor';
  return majorOf(version) >= 1 ? 'major' : 'minor';
}

/** The larger of two bumps. */
export function maxBump(a: Bump, b: Bump): Bump {
  return BUMPS.indexOf(a) >= BUMPS.indexOf(b) ? a : b;
}

function parts(version: string): [number, number, number] {
  const m = /^(\d+)\.(\d+)\.(\d+)/.exec(version);
  if (m === null) throw new Error(`not a version: ${version}`);
  return [Number(m[1]), Number(m[2]), Number(m[3])];
}

function majorOf(version: string): number {
  return parts(version)[0];
}

/** Compares two `x.y.z` versions (pre-release tags ignored): negative, zero or positive. */
export function compareVersions(a: string, b: string): number {
  const [x, y] = [parts(a), parts(b)];
  return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
}

/** The bump that leads from version `from` to version `to` (`none` if they are equal). */
export function bumpBetween(from: string, to: string): Bump {
  const [a, b] = [parts(from), parts(to)];
  if (b[0] !== a[0]) return 'major';
  if (b[1] !== a[1]) return 'minor';
  if (b[2] !== a[2]) return 'patch';
  return 'none';
}

/** The version a bump gives, as `changeset version` computes it. */
export function bumpVersion(version: string, bump: Bump): string {
  const [x, y, z] = parts(version);
  if (bump === 'major') return `${x + 1}.0.0`;
  if (bump === 'minor') return `${x}.${y + 1}.0`;
  if (bump === 'patch') return `${x}.${y}.${z + 1}`;
  return version;
}
