// Summarises reports/mutation/mutation.json: the score over behavioural mutants only. Left out:
// string-literal mutants (messages), mutants on lines that only log, mutants that never ran
// (compile or load errors), and the reviewed
// equivalent mutants of mutation-equivalents.json (each with the reason it cannot change what
// a caller of the provider sees). `--survivors` lists the behavioural mutants that survived.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const here = (p) => fileURLToPath(new URL(p, import.meta.url));
const report = JSON.parse(readFileSync(here('../reports/mutation/mutation.json'), 'utf8'));
const equivalents = JSON.parse(readFileSync(here('./mutation-equivalents.json'), 'utf8'));
const listSurvivors = process.argv.includes('--survivors');

/** Line numbers (1-based) that belong to a statement that only logs. */
function logOnlyLines(source) {
  const lines = source.split('\n');
  const out = new Set();
  for (let i = 0; i < lines.length; i++) {
    if (!/^\s*this\.log\.(trace|debug|info|warn|error)\(/.test(lines[i])) continue;
    let depth = 0;
    for (let j = i; j < lines.length; j++) {
      out.add(j + 1);
      for (const ch of lines[j]) depth += ch === '(' ? 1 : ch === ')' ? -1 : 0;
      if (depth <= 0 && /;\s*$/.test(lines[j])) break;
    }
  }
  return out;
}

/** The source text mutant `m` replaces (its location: 1-based lines and columns, end exclusive). */
function originalText(lines, m) {
  const { start, end } = m.location;
  const picked = lines.slice(start.line - 1, end.line);
  picked[picked.length - 1] = (picked[picked.length - 1] ?? '').slice(0, end.column - 1);
  picked[0] = (picked[0] ?? '').slice(start.column - 1);
  return picked.join('\n');
}

/**
 * The reviewed equivalent that covers mutant `m` of `file`: same file, its line holds `code`,
 * and, where the entry names them, one of its `mutators`, the `original` text it replaces and
 * its `replacement` (a line may hold other mutants of the same kind that do change behaviour).
 */
const equivalent = (file, lines, m) =>
  equivalents.find(
    (e) =>
      file.endsWith(e.file) &&
      (lines[m.location.start.line - 1] ?? '').includes(e.code) &&
      (e.mutators === undefined || e.mutators.includes(m.mutatorName)) &&
      (e.original === undefined || e.original === originalText(lines, m)) &&
      (e.replacement === undefined || e.replacement === m.replacement),
  );

const KILLED = new Set(['Killed', 'Timeout']);
// A mutant that does not compile or crashes the module on load changes no behaviour: it never ran.
const NOT_RUN = new Set(['CompileError', 'RuntimeError']);
const rows = [];
const survivors = [];
const unusedEquivalents = new Set(equivalents);
for (const [file, { source, mutants }] of Object.entries(report.files)) {
  const logOnly = logOnlyLines(source);
  const lines = source.split('\n');
  let total = 0;
  let killed = 0;
  let excluded = 0;
  for (const m of mutants) {
    const eq = equivalent(file, lines, m);
    if (eq !== undefined) unusedEquivalents.delete(eq);
    if (
      m.mutatorName === 'StringLiteral' ||
      logOnly.has(m.location.start.line) ||
      eq ||
      NOT_RUN.has(m.status)
    ) {
      excluded++;
      continue;
    }
    total++;
    if (KILLED.has(m.status)) killed++;
    else survivors.push({ file, m });
  }
  rows.push({ file, total, killed, excluded, all: mutants.length });
}
console.log(
  'behavioural mutation score (string literals, log-only lines and reviewed equivalents left out)',
);
for (const r of rows) {
  const pct = r.total === 0 ? 100 : (100 * r.killed) / r.total;
  console.log(
    `${r.file}: ${pct.toFixed(1)}% (${r.killed} of ${r.total} killed; ${r.excluded} of ${r.all} left out)`,
  );
}
if (listSurvivors) {
  for (const { file, m } of survivors) {
    const at = `${file}:${m.location.start.line}:${m.location.start.column}`;
    console.log(
      `${m.status.padEnd(10)} ${at} ${m.mutatorName} -> ${JSON.stringify(m.replacement)}`,
    );
  }
}
for (const e of unusedEquivalents) {
  console.log(`stale equivalent (no mutant matches it now): ${e.file}: ${e.code}`);
}
