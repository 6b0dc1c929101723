// What this machine can check of the release workflow (.github/workflows/release.yml, as the
// root package.json's `repository` is on GitHub): it parses, its release job runs the
// changesets action with the root's version and release scripts, may write contents, pull
// requests and an OIDC token (provenance), fetches the tags the changeset-kind check needs and
// runs the release checks first, on the Node major the repo pins.
import { parse } from 'yaml';
import type { Manifest } from './workspace.ts';

/** The workflow's path under the repo root. */
export const WORKFLOW = '.github/workflows/release.yml';

interface Step {
  readonly uses?: string;
  readonly run?: string;
  readonly with?: Readonly<Record<string, unknown>>;
}

interface Job {
  readonly permissions?: Readonly<Record<string, string>>;
  readonly steps?: readonly Step[];
  readonly needs?: string | readonly string[];
}

/** The root manifest's fields the check reads. */
export interface RootManifest extends Manifest {
  readonly scripts?: Readonly<Record<string, string>>;
}

/** Everything wrong with the workflow text for this root manifest; empty when all is well. */
export function workflowProblems(text: string, rootManifest: RootManifest): string[] {
  const out: string[] = [];
  if (!/github\.com[/:]/.test(rootManifest.repository?.url ?? ''))
    out.push('the root package.json has no GitHub repository: this workflow would not run');
  let doc: { on?: unknown; jobs?: Record<string, Job> };
  try {
    doc = parse(text) as typeof doc;
  } catch (err) {
    return [...out, `${WORKFLOW} does not parse: ${(err as Error).message.split('\n')[0]}`];
  }
  const jobs = doc?.jobs ?? {};
  const release = jobs.release;
  if (release === undefined) return [...out, `${WORKFLOW} has no release job`];
  const steps = release.steps ?? [];
  for (const [scope, level] of [
    ['contents', 'write'],
    ['pull-requests', 'write'],
    ['id-token', 'write'],
  ] as const)
    if (release.permissions?.[scope] !== level)
      out.push(`the release job needs permissions ${scope}: ${level}`);
  const checkout = steps.find((s) => s.uses?.startsWith('actions/checkout@'));
  if (checkout?.with?.['fetch-depth'] !== 0)
    out.push('the release job must check out with fetch-depth: 0 (the release tags)');
  const setupNode = steps.find((s) => s.uses?.startsWith('actions/setup-node@'));
  const pinned = rootManifest.devDependencies?.node?.split('.')[0];
  if (String(setupNode?.with?.['node-version']) !== pinned)
    out.push(`the release job must set up Node ${pinned}, the major the repo pins`);
  // changesets/action v2 is the one that reads @changesets/cli 3's report of what was published.
  const changesets = steps.findIndex((s) => s.uses?.startsWith('changesets/action@v2'));
  if (changesets < 0) out.push('the release job has no changesets/action@v2 step');
  else {
    const w = steps[changesets]?.with ?? {};
    if (w['version-script'] !== 'npm run version-packages')
      out.push('the changesets step must version with `npm run version-packages`');
    if (w['publish-script'] !== 'npm run release')
      out.push('the changesets step must publish with `npm run release`');
    const checks = steps.findIndex((s) => s.run?.includes('npm test -w @proxy-op/repo-checks'));
    if (checks < 0 || checks > changesets)
      out.push('the release job must run the release checks before the changesets step');
  }
  const scripts = rootManifest.scripts ?? {};
  if (!/changeset version/.test(scripts['version-packages'] ?? ''))
    out.push('the root script version-packages must run `changeset version`');
  if (
    !/cli\.ts publish(?! --dry-run)/.test(scripts.release ?? '') ||
    !/changeset git-tag/.test(scripts.release ?? '')
  )
    out.push(
      'the root script release must publish with the repo-checks CLI, then `changeset git-tag`',
    );
  return out;
}
