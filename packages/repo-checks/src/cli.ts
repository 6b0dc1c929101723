// The release tooling's command line, run by the root package.json's scripts with the pinned
// Node (which runs TypeScript directly):
//   api [--update]      check the API reports against the build, or rewrite them all
//   changesets          check that each API change has a pending changeset of the right bump
//   cycles              list the import cycles inside each package's src/ and their count
//   docs                build the API reference into docs/api
//   publish [--dry-run] pack and publish every unreleased package in dependency order
//   bench-smoke [--timeout S] [dir]
//                       run a package's benchmark in smoke mode (the current folder's unless
//                       named) and fail unless it ran and measured (see bench-smoke.ts)
// Each command loads its own modules, so a quick one does not wait for the release tooling.
import { join } from 'node:path';

const [command, ...args] = process.argv.slice(2);
/** How long a package's benchmark smoke may run before it counts as hung. */
const DEFAULT_SMOKE_TIMEOUT_S = 180;

function fail(lines: readonly string[]): never {
  for (const line of lines) console.error(line);
  process.exit(1);
}

switch (command) {
  case 'api': {
    const { buildApiReports, reportFailures, writeApiReports } = await import('./api-report.ts');
    const reports = buildApiReports();
    if (args.includes('--update')) {
      writeApiReports(reports);
      const problems = reportFailures(reports).filter((m) => /\((ae|tsdoc)-/.test(m));
      console.log(`api: wrote ${reports.length} reports`);
      if (problems.length > 0) fail(problems);
    } else {
      const failures = reportFailures(reports);
      if (failures.length > 0) fail(failures);
      console.log(`api: ${reports.length} reports match the build`);
    }
    break;
  }
  case 'changesets': {
    const { checkChangesetKinds } = await import('./changeset-kind.ts');
    const results = checkChangesetKinds();
    for (const r of results)
      console.log(
        `${r.name.padEnd(30)} ${r.version.padEnd(8)} API ${r.change.padEnd(9)} needs ${r.required.padEnd(6)} has ${r.declared.padEnd(6)} since ${r.baseline}`,
      );
    const failures = results.flatMap((r) => (r.failure === undefined ? [] : [r.failure]));
    if (failures.length > 0) fail(failures);
    break;
  }
  case 'cycles': {
    const { packageCycles } = await import('./import-cycles.ts');
    const { REPO_ROOT } = await import('./workspace.ts');
    const cycles = packageCycles(join(REPO_ROOT, 'packages'));
    for (const line of cycles) console.log(line);
    console.log(`cycles: ${cycles.length}`);
    break;
  }
  case 'docs': {
    const { buildApiDocs } = await import('./docs.ts');
    const out = buildApiDocs();
    console.log(`docs: the API reference is in ${out}`);
    break;
  }
  case 'publish': {
    const { publishAll } = await import('./publish.ts');
    const dryRun = args.includes('--dry-run');
    const results = await publishAll({
      dryRun,
      onPackage: (name, version) =>
        console.log(`publish: ${name}@${version}${dryRun ? ' (dry run)' : ''}`),
    });
    for (const r of results) console.log(`${r.outcome}: ${r.name}@${r.version}`);
    break;
  }
  case 'bench-smoke': {
    const { runBenchSmoke } = await import('./bench-smoke.ts');
    // The bound is generous: the smoke runs beside the test suites on a loaded machine.
    const at = args.indexOf('--timeout');
    const timeoutS = Number(
      at >= 0 ? args[at + 1] : (process.env.BENCH_SMOKE_TIMEOUT ?? DEFAULT_SMOKE_TIMEOUT_S),
    );
    const dir = (at >= 0 ? args.toSpliced(at, 2) : args)[0] ?? process.cwd();
    const result = await runBenchSmoke({
      cwd: dir,
      timeoutMs: timeoutS * 1000,
      onStderr: (chunk) => process.stderr.write(chunk),
    });
    process.stdout.write(result.stdout);
    const what = `${result.rows} rows in ${result.seconds.toFixed(1)} s`;
    if (!result.ok) fail([`bench-smoke: FAILED (${what})`, ...result.failures]);
    if (result.skipped !== undefined) console.log(`bench-smoke: skipped (${result.skipped})`);
    else console.log(`bench-smoke: ran and measured, ${what}`);
    break;
  }
  default:
    fail([
      'usage: cli.ts api [--update] | changesets | cycles | docs | publish [--dry-run] | bench-smoke [--timeout S] [dir]',
    ]);
}
