// The release tooling's command line, run by the root package.json's scripts with the pinned
// Node (which runs TypeScript directly):
//   api [--update]      check the API reports against the build, or rewrite them all
//   changesets          check that each API change has a pending changeset of the right bump
//   cycles              list the import cycles inside each package's src/ and their count
//   docs                build the API reference into docs/api
//   publish [--dry-run] pack and publish every unreleased package in dependency order
import { join } from 'node:path';
import { buildApiReports, reportFailures, writeApiReports } from './api-report.ts';
import { checkChangesetKinds } from './changeset-kind.ts';
import { buildApiDocs } from './docs.ts';
import { packageCycles } from './import-cycles.ts';
import { publishAll } from './publish.ts';
import { REPO_ROOT } from './workspace.ts';

const [command, ...args] = process.argv.slice(2);

function fail(lines: readonly string[]): never {
  for (const line of lines) console.error(line);
  process.exit(1);
}

switch (command) {
  case 'api': {
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
    const cycles = packageCycles(join(REPO_ROOT, 'packages'));
    for (const line of cycles) console.log(line);
    console.log(`cycles: ${cycles.length}`);
    break;
  }
  case 'docs': {
    const out = buildApiDocs();
    console.log(`docs: the API reference is in ${out}`);
    break;
  }
  case 'publish': {
    const dryRun = args.includes('--dry-run');
    const results = await publishAll({
      dryRun,
      onPackage: (name, version) =>
        console.log(`publish: ${name}@${version}${dryRun ? ' (dry run)' : ''}`),
    });
    for (const r of results) console.log(`${r.outcome}: ${r.name}@${r.version}`);
    break;
  }
  default:
    fail([`usage: cli.ts api [--update] | changesets | cycles | docs | publish [--dry-run]`]);
}
