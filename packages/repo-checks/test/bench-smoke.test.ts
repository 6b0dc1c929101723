// Peer: real processes. The benchmarks' smoke runner over tiny fake packages it writes to a temp
// dir, each with a `bench` script: one that hangs (with a child of its own), one that prints no
// table, one with an empty figure, one with NaN, one that measured nothing, one that throws, one
// that says it cannot run here, and a good one. It must fail each bad one and pass the good one.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkTables, runBenchSmoke } from '../src/bench-smoke.ts';

const TABLE = [
  '| measure | ours | theirs | ours / theirs |',
  '|---|---:|---:|---:|',
  '| small GETs | 1234 req/s (1300) | 1100 req/s | 1.12 |',
  '| latency p50 | 0.41 ms | — | 0.98× |',
];

/** Bench scripts: what each fake package's `bench.mjs` does. */
const BENCHES: Record<string, string> = {
  good: `
    process.stderr.write('bench: small GETs…\\n');
    console.log(${JSON.stringify(TABLE.join('\n'))});
  `,
  hangs: `
    import { spawn } from 'node:child_process';
    import { writeFileSync } from 'node:fs';
    const child = spawn('sleep', ['300'], { stdio: 'ignore' });
    writeFileSync('child.pid', String(child.pid));
    process.stderr.write('bench: waiting for a peer that never answers…\\n');
    setInterval(() => {}, 1000);
  `,
  'no-table': `
    process.stderr.write('bench: small GETs…\\n');
    console.log('small GETs: 1234 req/s');
  `,
  'empty-figure': `
    process.stderr.write('bench: small GETs…\\n');
    console.log('| measure | ours |\\n|---|---:|\\n| small GETs |  |');
  `,
  nan: `
    process.stderr.write('bench: small GETs…\\n');
    console.log('| measure | ours |\\n|---|---:|\\n| small GETs | NaN req/s |');
  `,
  'measured-nothing': `
    process.stderr.write('bench: roll…\\n');
    console.log('| measure | ours |\\n|---|---:|\\n| creates per replaced Proxy | 0.00 |');
  `,
  throws: `
    process.stderr.write('bench: small GETs…\\n');
    console.log(${JSON.stringify(TABLE.join('\n'))});
    throw new Error('the origin went away');
  `,
  skips: `
    process.stderr.write('bench: libvirtd…\\n');
    console.log('skipped: libvirtd is not installed (apt-get install libvirt-daemon)');
  `,
  'no-part-line': `
    console.log(${JSON.stringify(TABLE.join('\n'))});
  `,
};

let dir = '';
const pkg = (name: string) => join(dir, name);

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'bench-smoke-'));
  for (const [name, script] of Object.entries(BENCHES)) {
    mkdirSync(pkg(name));
    writeFileSync(
      join(pkg(name), 'package.json'),
      JSON.stringify({ name: `fake-${name}`, private: true, scripts: { bench: 'node bench.mjs' } }),
    );
    writeFileSync(join(pkg(name), 'bench.mjs'), script);
  }
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('runBenchSmoke', () => {
  it('passes a benchmark that ran, printed its part lines and a table of figures', async () => {
    const r = await runBenchSmoke({ cwd: pkg('good') });
    expect(r.failures).toEqual([]);
    expect(r.ok).toBe(true);
    expect(r.rows).toBe(2);
  });

  it('kills a benchmark that hangs past the bound, its whole process group, and names its part', async () => {
    const r = await runBenchSmoke({ cwd: pkg('hangs'), timeoutMs: 3_000 });
    expect(r.ok).toBe(false);
    expect(r.failures.join('\n')).toMatch(/^hung: .*bench: waiting for a peer that never answers/);
    const child = Number(
      execFileSync('cat', [join(pkg('hangs'), 'child.pid')], { encoding: 'utf8' }),
    );
    await expect.poll(() => alive(child), { timeout: 5_000 }).toBe(false);
  });

  it('fails a benchmark that prints no table', async () => {
    const r = await runBenchSmoke({ cwd: pkg('no-table') });
    expect(r.ok).toBe(false);
    expect(r.failures).toEqual([expect.stringMatching(/^no table/)]);
  });

  it('fails a benchmark with an empty figure', async () => {
    const r = await runBenchSmoke({ cwd: pkg('empty-figure') });
    expect(r.ok).toBe(false);
    expect(r.failures).toEqual([expect.stringMatching(/small GETs.*cannot be/)]);
  });

  it('fails a benchmark with a NaN figure', async () => {
    const r = await runBenchSmoke({ cwd: pkg('nan') });
    expect(r.ok).toBe(false);
    expect(r.failures).toEqual([expect.stringMatching(/small GETs.*cannot be.*NaN/)]);
  });

  it('fails a benchmark whose figures are all zero (it measured nothing)', async () => {
    const r = await runBenchSmoke({ cwd: pkg('measured-nothing') });
    expect(r.ok).toBe(false);
    expect(r.failures).toEqual([expect.stringMatching(/every figure is zero/)]);
  });

  it('fails a benchmark that throws after its table (non-zero exit)', async () => {
    const r = await runBenchSmoke({ cwd: pkg('throws') });
    expect(r.ok).toBe(false);
    expect(r.failures).toEqual([
      expect.stringMatching(/^exited with code 1[\s\S]*the origin went away/),
    ]);
  });

  it('fails a benchmark that prints no part line on stderr', async () => {
    const r = await runBenchSmoke({ cwd: pkg('no-part-line') });
    expect(r.ok).toBe(false);
    expect(r.failures).toEqual([expect.stringMatching(/^no part line/)]);
  });

  it('takes a benchmark that says it cannot run here, but not under CI=true', async () => {
    const here = await runBenchSmoke({ cwd: pkg('skips'), env: { CI: '' } });
    expect(here.failures).toEqual([]);
    expect(here).toMatchObject({ ok: true, skipped: expect.stringMatching(/^libvirtd/) });
    const ci = await runBenchSmoke({ cwd: pkg('skips'), env: { CI: 'true' } });
    expect(ci.ok).toBe(false);
    expect(ci.failures).toEqual([expect.stringMatching(/^skipped under CI=true/)]);
  });

  it('sets BENCH_SMOKE=1 for the benchmark', async () => {
    const r = await runBenchSmoke({
      cwd: pkg('good'),
      command: ['node', '-e', 'console.error("bench: env"); console.log(process.env.BENCH_SMOKE)'],
    });
    expect(r.stdout.trim()).toBe('1');
  });
});

describe('checkTables', () => {
  it('reads every table, and cells that do not apply or are words', () => {
    const out = [
      'header text',
      ...TABLE,
      '',
      '| phase | latency p50 | note |',
      '|---|---|---|',
      '| idle | 1.2 ms | warm |',
      '| roll | 3 | – |',
    ].join('\n');
    expect(checkTables(out)).toEqual({ rows: 4, failures: [] });
  });

  it('fails a row with no figure, and one with Infinity', () => {
    const out = ['| a | b |', '|---|---|', '| x | — |', '| y | Infinity ms |'].join('\n');
    const r = checkTables(out);
    expect(r.failures).toEqual([
      expect.stringMatching(/row "x".*no figure/),
      expect.stringMatching(/row "y".*cannot be/),
    ]);
  });

  it('takes a zero beside another figure (a zero-error count in a measured row)', () => {
    expect(checkTables('| a | ok | errors |\n|---|---|---|\n| run | 12 | 0 |').failures).toEqual(
      [],
    );
  });

  it('takes `none` as a count that was measured and came out zero', () => {
    expect(checkTables('| a | value |\n|---|---|\n| re-reads | none |').failures).toEqual([]);
  });
});
