// Peer: none (the package README read as text, held to src/defaults.ts and the flag table of
// src/cli/flags.ts, which the parser and the help text are made from).
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { formatDuration } from '../src/cli/args.js';
import { RUN_FLAGS, type RunFlag, runHelp } from '../src/cli/flags.js';
import { DEFAULTS } from '../src/defaults.js';

const README = await readFile(new URL('../README.md', import.meta.url), 'utf8');

/** The body rows of the first Markdown table after `heading`, as trimmed cells. */
function tableAfter(heading: string): string[][] {
  const lines = README.split('\n');
  const at = lines.indexOf(heading);
  if (at < 0) throw new Error(`README has no "${heading}"`);
  let i = at + 1;
  while (i < lines.length && !lines[i]?.startsWith('|')) i++;
  const rows: string[][] = [];
  for (; i < lines.length && lines[i]?.startsWith('|'); i++) {
    rows.push(
      (lines[i] as string)
        .slice(1, -1)
        .split(' | ')
        .map((c) => c.trim()),
    );
  }
  // The header and the separator row.
  return rows.slice(2);
}

/** A value of DEFAULTS as a flag shows it: milliseconds as a duration. */
function shown(key: keyof typeof DEFAULTS): string {
  const v = DEFAULTS[key];
  return key.endsWith('Ms') ? formatDuration(v as number) : String(v);
}

const flags = RUN_FLAGS as readonly RunFlag[];

/** A flag as the README's table names it: `` `--name VALUE` ``. */
function flagCell(f: RunFlag): string {
  const value = f.docValue ?? f.value;
  return `\`--${f.name}${value === undefined ? '' : ` ${value}`}\``;
}

describe('the defaults', () => {
  const rows = tableAfter('### `run` flags');

  it('the README lists every flag of run, in order, with its placeholder', () => {
    expect(rows.map((r) => r[0])).toEqual(flags.map(flagCell));
  });

  it('the README shows each flag’s default as the defaults object has it', () => {
    const readme = new Map(rows.map((r) => [r[0], r[1]]));
    for (const f of flags) {
      const expected = f.defaultKey === undefined ? f.doc : `\`${shown(f.defaultKey)}\``;
      expect(readme.get(flagCell(f)), `--${f.name}`).toBe(expected);
    }
  });

  it('the help text shows the same defaults', () => {
    const help = runHelp();
    for (const f of flags) {
      if (f.defaultKey !== undefined) expect(help).toContain(`default ${shown(f.defaultKey)}`);
    }
  });

  it('the README’s check line shows the check timeout’s default', () => {
    expect(README).toContain(
      `proxy-op check [--providers FILE] [--timeout ${formatDuration(DEFAULTS.checkTimeoutMs)}] [--json]`,
    );
  });

  it('durations format as the flags read them', () => {
    expect([0, 500, 1000, 90_000, 300_000, 3_600_000].map(formatDuration)).toEqual([
      '0',
      '500ms',
      '1s',
      '90s',
      '5m',
      '1h',
    ]);
  });
});
