// The generated API reference: api-extractor's doc model of every published entry point,
// turned into Markdown pages by api-documenter, in docs/api (not committed; the release
// workflow publishes it). Each package's README links its page there.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { buildApiReports, reportFailures } from './api-report.ts';
import {
  type EntryPoint,
  entryPoints,
  REPO_ROOT,
  unscopedName,
  type WorkspacePackage,
} from './workspace.ts';

/** Where the reference is written, under the repo root. */
export const DOCS_FOLDER = 'docs/api';

/** Where the reference is published: each package's page is `<unscoped>.md` below it. */
export const DOCS_URL = 'https://proxy-op.github.io/proxy-op/api/';

/**
 * Builds the reference into `out` (`docs/api` of the repo by default) and returns the folder.
 * Fails, as the report check does, when an export lacks TSDoc.
 */
export function buildApiDocs(
  root: string = REPO_ROOT,
  out: string = join(root, DOCS_FOLDER),
): string {
  const models = mkdtempSync(join(tmpdir(), 'proxy-op-model-'));
  try {
    const reports = buildApiReports({ root, modelFolder: models });
    const problems = reportFailures(reports, root).filter((m) => /\((ae|tsdoc)-/.test(m));
    if (problems.length > 0) throw new Error(problems.join('\n'));
    // A subpath's model is named for its report (`@proxy-op/contract-cidr` for the entry point
    // `@proxy-op/contract/cidr`: a model's name must be a package name), so it has its own page.
    for (const r of reports) {
      if (r.entry.subpath === '.') continue;
      const file = join(models, r.entry.reportName.replace(/\.md$/, '.json'));
      const model = JSON.parse(readFileSync(file, 'utf8')) as { name: string };
      model.name = `${r.pkg.manifest.name}-${r.entry.reportName.replace(/\.api\.md$/, '').slice(unscopedName(r.pkg.manifest.name).length + 1)}`;
      writeFileSync(file, JSON.stringify(model));
    }
    rmSync(out, { recursive: true, force: true });
    mkdirSync(out, { recursive: true });
    const require = createRequire(import.meta.url);
    const bin = join(
      dirname(require.resolve('@microsoft/api-documenter/package.json')),
      'bin',
      'api-documenter',
    );
    execFileSync(
      process.execPath,
      [bin, 'markdown', '--input-folder', models, '--output-folder', out],
      {
        stdio: ['ignore', 'ignore', 'inherit'],
      },
    );
    return out;
  } finally {
    rmSync(models, { recursive: true, force: true });
  }
}

/** The page of an entry point in the published reference. */
export function docsPage(entry: EntryPoint): string {
  return `${DOCS_URL}${entry.reportName.replace(/\.api\.md$/, '')}.html`;
}

/** The heading of the README section that links the reference and the reports. */
export const README_SECTION = '## API reference';

/**
 * What a package README lacks: a `## API reference` section linking each entry point's page
 * of the generated reference and its committed report. Empty when nothing is missing.
 */
export function readmeLinkProblems(pkg: WorkspacePackage, readme: string): string[] {
  const start = readme.indexOf(`\n${README_SECTION}\n`);
  if (start < 0) return [`${pkg.manifest.name}: README.md has no "${README_SECTION}" section`];
  const rest = readme.slice(start + README_SECTION.length + 2);
  const section = rest.slice(0, rest.search(/^## /m) < 0 ? undefined : rest.search(/^## /m));
  const out: string[] = [];
  for (const e of entryPoints(pkg)) {
    if (!section.includes(`(${docsPage(e)})`))
      out.push(`${pkg.manifest.name}: README.md does not link ${docsPage(e)}`);
    if (!section.includes(`(etc/${e.reportName})`))
      out.push(`${pkg.manifest.name}: README.md does not link etc/${e.reportName}`);
  }
  return out;
}

/** The README section for a package, as `readmeLinkProblems` wants it. */
export function readmeSection(pkg: WorkspacePackage): string {
  const entries = entryPoints(pkg);
  const lines = entries.map(
    (e) => `- \`${e.specifier}\`: [reference](${docsPage(e)}), [API report](etc/${e.reportName})`,
  );
  return [
    README_SECTION,
    '',
    'Every export with its TSDoc, generated from the published declarations (`npm run docs`),',
    'and the API report that each change to the public API is reviewed in',
    '(`npm run api:update` rewrites it):',
    '',
    ...lines,
    '',
  ].join('\n');
}
