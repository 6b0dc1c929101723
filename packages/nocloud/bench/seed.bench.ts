// Time to build a typical seed in process, side by side with genisoimage
// and xorriso spawned on the same files, as a user would run them.
// Run with `npm run bench` (after `npm run build`); BENCH_RUNS sets how
// many times each tool is spawned (default 40). BENCH_SMOKE=1 is the smoke
// run CI makes: a few builds and spawns, only to show the benchmark runs and
// measures. A tool that is not installed is left out of the table with the
// reason; under CI=true that fails the run (.ci/apt-packages installs both).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildSeedISO, type SeedOptions, seedFiles } from '@proxy-op/nocloud';

const options: SeedOptions = {
  instanceId: 'proxy-bench-0001',
  userData: [
    '#cloud-config',
    'package_update: true',
    'packages: [squid]',
    'write_files:',
    '  - path: /etc/squid/conf.d/proxy.conf',
    '    content: |',
    '      http_port 3128',
    '      acl clients src 10.0.0.0/8 192.168.0.0/16',
    '      http_access allow clients',
    '      http_access deny all',
    '      cache deny all',
    'runcmd:',
    '  - systemctl enable --now squid',
    '  - systemctl restart squid',
    '',
  ].join('\n'),
  networkConfig: 'version: 2\nethernets:\n  id0:\n    match: {name: "en*"}\n    dhcp4: true\n',
};

const SMOKE = process.env.BENCH_SMOKE === '1';
const runs = Number(process.env.BENCH_RUNS ?? (SMOKE ? 3 : 40));
/** Says on stderr which part starts, so a stall names where it is. */
const part = (name: string) => process.stderr.write(`bench: ${name}…\n`);
const dir = mkdtempSync(join(tmpdir(), 'nocloud-bench-'));

try {
  const files = seedFiles(options);
  for (const f of files) writeFileSync(join(dir, f.name), f.data);
  const names = files.map((f) => f.name);
  const inputBytes = files.reduce((n, f) => n + f.data.byteLength, 0);

  // In process: enough builds for a stable mean, after a warm-up.
  part('buildSeedISO in process');
  for (let i = 0; i < (SMOKE ? 10 : 500); i++) buildSeedISO(options);
  const builds = SMOKE ? 100 : 5000;
  const t0 = process.hrtime.bigint();
  let size = 0;
  for (let i = 0; i < builds; i++) size = buildSeedISO(options).byteLength;
  const oursMs = Number(process.hrtime.bigint() - t0) / 1e6 / builds;

  const rows: { tool: string; ms: number | undefined; size: number | undefined }[] = [
    { tool: '@proxy-op/nocloud buildSeedISO (in process)', ms: oursMs, size },
  ];

  const tools: [string, string, string[]][] = [
    [
      'genisoimage -joliet -rock (spawned)',
      'genisoimage',
      ['-quiet', '-volid', 'cidata', '-joliet', '-rock'],
    ],
    [
      'xorriso -as mkisofs -J -R (spawned)',
      'xorriso',
      ['-as', 'mkisofs', '-quiet', '-V', 'cidata', '-J', '-R'],
    ],
  ];
  for (const [label, cmd, args] of tools) {
    const out = join(dir, `${cmd}.iso`);
    const argv = [...args, '-o', out, ...names];
    const once = () => spawnSync(cmd, argv, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
    part(label);
    const probe = once();
    if (probe.error || probe.status !== 0) {
      const note = probe.error ? 'not installed' : probe.stderr.toString().trim();
      if (process.env.CI === 'true')
        throw new Error(`${cmd}: ${note} (.ci/apt-packages installs it)`);
      console.error(`bench: ${label} left out: ${note}`);
      continue;
    }
    const times: number[] = [];
    for (let i = 0; i < runs; i++) {
      const t = process.hrtime.bigint();
      once();
      times.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
    times.sort((a, b) => a - b);
    rows.push({ tool: label, ms: times[Math.floor(times.length / 2)], size: statSync(out).size });
  }

  console.log(
    `Typical seed: ${files.length} files, ${inputBytes} bytes of content (${names.join(', ')})`,
  );
  console.log(
    `Node ${process.version}; in process: mean of ${builds} builds; spawned: median of ${runs} runs\n`,
  );
  console.log('| builder | time per seed | vs in process | output size | vs in process |');
  console.log('|---|---:|---:|---:|---:|');
  for (const r of rows) {
    if (r.ms === undefined || r.size === undefined) continue;
    console.log(
      `| ${r.tool} | ${formatMs(r.ms)} | ${(r.ms / oursMs).toFixed(0)}x | ${(r.size / 1024).toFixed(0)} KiB (${r.size} B) | ${(r.size / size).toFixed(1)}x |`,
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

function formatMs(ms: number): string {
  return ms < 1 ? `${(ms * 1000).toFixed(1)} µs` : `${ms.toFixed(2)} ms`;
}
