// API reports: api-extractor reads each published package's built declarations (one run per
// `exports` entry, all sharing one TypeScript program) and writes `etc/<unscoped>.api.md`
// beside the package. `checkApiReports` compares what the build gives with the committed
// reports; `npm run api:update` (this file run with `--update`) rewrites every report in one go.
// api-extractor brings its own TypeScript: the repo's TypeScript 7 has no JS compiler API.
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import {
  CompilerState,
  Extractor,
  ExtractorConfig,
  ExtractorLogLevel,
  type ExtractorMessage,
  type IConfigFile,
} from '@microsoft/api-extractor';
import {
  type EntryPoint,
  entryPoints,
  publishedPackages,
  REPO_ROOT,
  type WorkspacePackage,
} from './workspace.ts';

/** The command that rewrites every report; failure messages print it. */
export const UPDATE_COMMAND = 'npm run api:update';

/** What a report run found for one entry point. */
export interface EntryReport {
  readonly pkg: WorkspacePackage;
  readonly entry: EntryPoint;
  /** The committed report, absolute: `<package>/etc/<reportName>`. */
  readonly reportPath: string;
  /** The report the build gives. */
  readonly built: string;
  /** The committed report, or undefined where there is none. */
  readonly committed: string | undefined;
  /** Errors and warnings api-extractor raised (missing TSDoc, TSDoc syntax, bad links). */
  readonly problems: readonly string[];
}

/** Options of a report run. */
export interface ReportOptions {
  /** The repo to read; the real one by default. */
  readonly root?: string;
  /** Only these packages (by name); every published package by default. */
  readonly packages?: readonly WorkspacePackage[];
  /** Also write each entry point's doc model (`<reportName minus .md>.json`) into this folder. */
  readonly modelFolder?: string;
}

/** The compiler settings the declarations are read with: those of a user's project. */
const COMPILER_OPTIONS = {
  target: 'es2023',
  lib: ['es2023', 'esnext.disposable', 'dom'],
  module: 'nodenext',
  moduleResolution: 'nodenext',
  types: ['node'],
  strict: true,
  skipLibCheck: true,
} as const;

/**
 * Messages: every export documented (`ae-undocumented` is an error), untagged exports are
 * `@public` (no `ae-missing-release-tag`), references to unexported types are written into the
 * report where a reviewer sees them; anything else api-extractor or TSDoc warns of fails.
 */
const MESSAGES: NonNullable<IConfigFile['messages']> = {
  compilerMessageReporting: { default: { logLevel: ExtractorLogLevel.Error } },
  extractorMessageReporting: {
    default: { logLevel: ExtractorLogLevel.Warning },
    'ae-undocumented': { logLevel: ExtractorLogLevel.Error, addToApiReportFile: false },
    'ae-missing-release-tag': { logLevel: ExtractorLogLevel.None, addToApiReportFile: false },
    'ae-forgotten-export': { logLevel: ExtractorLogLevel.Warning, addToApiReportFile: true },
  },
  tsdocMessageReporting: { default: { logLevel: ExtractorLogLevel.Warning } },
};

function prepare(
  pkg: WorkspacePackage,
  entry: EntryPoint,
  reportFolder: string,
  modelFolder: string | undefined,
  firstDts: string,
): ExtractorConfig {
  return ExtractorConfig.prepare({
    configObject: {
      projectFolder: pkg.path,
      mainEntryPointFilePath: entry.dts,
      compiler: { overrideTsconfig: { compilerOptions: COMPILER_OPTIONS, files: [firstDts] } },
      apiReport: {
        enabled: true,
        reportFolder,
        reportTempFolder: reportFolder,
        reportFileName: entry.reportName.replace(/\.api\.md$/, ''),
      },
      docModel: {
        enabled: modelFolder !== undefined,
        apiJsonFilePath: join(
          modelFolder ?? reportFolder,
          entry.reportName.replace(/\.md$/, '.json'),
        ),
      },
      newlineKind: 'lf',
      dtsRollup: { enabled: false },
      tsdocMetadata: { enabled: false },
      messages: MESSAGES,
    },
    configObjectFullPath: join(pkg.path, 'api-extractor.json'),
    packageJsonFullPath: join(pkg.path, 'package.json'),
  });
}

function describeMessage(root: string, m: ExtractorMessage): string {
  const where =
    m.sourceFilePath === undefined
      ? ''
      : `${relative(root, m.sourceFilePath)}:${m.sourceFileLine ?? 0}:${m.sourceFileColumn ?? 0} `;
  return `${where}(${m.messageId}) ${m.text}`;
}

/**
 * Builds the report of every entry point of the given packages (all published packages by
 * default) from their `dist` declarations, without touching the repo; run `tsc -b` first.
 */
export function buildApiReports(opts: ReportOptions = {}): EntryReport[] {
  const root = opts.root ?? REPO_ROOT;
  const packages = opts.packages ?? publishedPackages(root);
  const work = packages.flatMap((pkg) => entryPoints(pkg).map((entry) => ({ pkg, entry })));
  if (work.length === 0) return [];
  for (const { pkg, entry } of work)
    if (!existsSync(entry.dts))
      throw new Error(`${pkg.manifest.name}: ${relative(root, entry.dts)} is missing: run tsc -b`);
  const temp = mkdtempSync(join(tmpdir(), 'proxy-op-api-'));
  try {
    const firstDts = work[0]!.entry.dts;
    let compilerState: CompilerState | undefined;
    return work.map(({ pkg, entry }) => {
      const folder = join(temp, pkg.dir);
      mkdirSync(folder, { recursive: true });
      const config = prepare(pkg, entry, folder, opts.modelFolder, firstDts);
      compilerState ??= CompilerState.create(config, {
        additionalEntryPoints: work.map((w) => w.entry.dts),
      });
      const problems: string[] = [];
      Extractor.invoke(config, {
        localBuild: true,
        compilerState,
        messageCallback: (m: ExtractorMessage) => {
          m.handled = true;
          if (m.logLevel === ExtractorLogLevel.Error || m.logLevel === ExtractorLogLevel.Warning)
            problems.push(describeMessage(root, m));
        },
      });
      const reportPath = join(pkg.path, 'etc', entry.reportName);
      return {
        pkg,
        entry,
        reportPath,
        built: readFileSync(join(folder, entry.reportName), 'utf8'),
        committed: existsSync(reportPath) ? readFileSync(reportPath, 'utf8') : undefined,
        problems,
      };
    });
  } finally {
    rmSync(temp, { recursive: true, force: true });
  }
}

/** The reports under the packages' `etc/` folders that no entry point writes any more. */
export function staleReports(reports: readonly EntryReport[], root: string = REPO_ROOT): string[] {
  const wanted = new Set(reports.map((r) => r.reportPath));
  const dirs = new Set(reports.map((r) => join(r.pkg.path, 'etc')));
  const out: string[] = [];
  for (const dir of dirs) {
    if (!existsSync(dir)) continue;
    for (const f of readdirSync(dir))
      if (f.endsWith('.api.md') && !wanted.has(join(dir, f)))
        out.push(relative(root, join(dir, f)));
  }
  return out.sort();
}

/** The lines only one side has, `-` committed and `+` built, at most `max` of them. */
export function lineDiff(committed: string, built: string, max = 40): string[] {
  const a = committed.split('\n');
  const b = built.split('\n');
  const inA = new Set(a);
  const inB = new Set(b);
  const out = [
    ...a.filter((l) => !inB.has(l)).map((l) => `- ${l}`),
    ...b.filter((l) => !inA.has(l)).map((l) => `+ ${l}`),
  ];
  return out.length > max ? [...out.slice(0, max), `  ... ${out.length - max} more lines`] : out;
}

/**
 * Everything wrong with the reports: a report that differs from the build (with the lines that
 * differ), a missing report, a stale one, and every problem api-extractor raised. Empty when
 * all is well. Each message names the package; the last line says how to update.
 */
export function reportFailures(
  reports: readonly EntryReport[],
  root: string = REPO_ROOT,
): string[] {
  const out: string[] = [];
  for (const r of reports) {
    const where = relative(root, r.reportPath);
    for (const p of r.problems) out.push(`${r.entry.specifier}: ${p}`);
    if (r.committed === undefined) out.push(`${r.entry.specifier}: ${where} is missing`);
    else if (r.committed !== r.built)
      out.push(
        `${r.entry.specifier}: the built API differs from ${where}:\n${lineDiff(r.committed, r.built).join('\n')}`,
      );
  }
  for (const s of staleReports(reports, root))
    out.push(`${s}: no exports entry writes this report`);
  if (out.some((m) => !m.includes('(ae-') && !m.includes('(tsdoc-')))
    out.push(
      `If the change is intended, run \`${UPDATE_COMMAND}\` and commit the reports with a changeset.`,
    );
  return out;
}

/** Writes every built report into its package's `etc/` and removes the stale ones. */
export function writeApiReports(reports: readonly EntryReport[], root: string = REPO_ROOT): void {
  for (const stale of staleReports(reports, root)) rmSync(join(root, stale));
  for (const r of reports) {
    if (r.committed === r.built) continue;
    mkdirSync(join(r.pkg.path, 'etc'), { recursive: true });
    writeFileSync(r.reportPath, r.built);
  }
}
