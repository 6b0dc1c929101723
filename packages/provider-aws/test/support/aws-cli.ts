// Test support (not a test file): the real aws CLI v2 as a peer. Debian's `awscli` package puts
// v2 at /usr/bin/aws, and an older v1 may come first on PATH, so the CLI is found by path and
// by its version. Without a v2 the suite is skipped with the reason printed; under CI=true,
// where .ci/run installs `awscli` (.ci/apt-packages), a missing CLI is a failing test instead.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runProcess, which } from '@proxy-op/testkit';
import type { DoubleCredential } from './ec2/sigv4.js';

/** The path of an aws CLI v2, or undefined. */
export function awsCliV2(): string | undefined {
  const candidates = ['/usr/bin/aws', which('aws')].filter((p): p is string => p !== undefined);
  for (const path of new Set(candidates)) {
    try {
      const out = execFileSync(path, ['--version'], {
        encoding: 'utf8',
        timeout: 30_000,
        env: { ...process.env, AWS_PAGER: '' },
      });
      if (/^aws-cli\/2\./.test(out.trim())) return path;
    } catch {
      // not a working CLI
    }
  }
  return undefined;
}

interface SuiteApi {
  describe: ((name: string, fn: () => void) => void) & {
    skip: (name: string, fn: () => void) => void;
  };
  it: (name: string, fn: () => void) => void;
}

/**
 * Registers a suite that needs the aws CLI v2 (its path is handed to `fn`):
 * skipped with the reason printed where there is none, failing under
 * `CI=true`.
 */
export function describeWithAwsCli(t: SuiteApi, name: string, fn: (cli: string) => void): void {
  const cli = awsCliV2();
  if (cli !== undefined) {
    t.describe(name, () => fn(cli));
    return;
  }
  const reason = 'no aws CLI v2 (/usr/bin/aws from Debian’s awscli, or aws on PATH)';
  if (process.env.CI === 'true') {
    t.describe(name, () => {
      t.it('has its peer installed (CI installs it)', () => {
        throw new Error(`${name}: ${reason}; .ci/run should have installed awscli`);
      });
    });
    return;
  }
  console.warn(`skipping "${name}": ${reason}`);
  t.describe.skip(name, () => fn(''));
}

/** An aws CLI bound to an endpoint and a credential, with its own empty HOME and config. */
export interface AwsCli {
  /** Runs `aws --endpoint-url <url> <args> --output json`; rejects with stderr when it fails, unless `allowFailure`. */
  run(
    args: readonly string[],
    o?: { allowFailure?: boolean },
  ): Promise<{ code: number | null; stdout: string; stderr: string; json: unknown }>;
  close(): void;
}

/** The CLI at `path` against `url` in `region`, signing with `credential`. */
export function awsCli(
  path: string,
  url: string,
  region: string,
  credential: DoubleCredential,
): AwsCli {
  const home = mkdtempSync(join(tmpdir(), 'aws-cli-'));
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    AWS_CONFIG_FILE: join(home, 'config'),
    AWS_SHARED_CREDENTIALS_FILE: join(home, 'credentials'),
    AWS_ACCESS_KEY_ID: credential.accessKeyId,
    AWS_SECRET_ACCESS_KEY: credential.secretAccessKey,
    ...(credential.sessionToken === undefined
      ? {}
      : { AWS_SESSION_TOKEN: credential.sessionToken }),
    AWS_DEFAULT_REGION: region,
    AWS_EC2_METADATA_DISABLED: 'true',
    AWS_PAGER: '',
    AWS_CLI_AUTO_PROMPT: 'off',
  };
  return {
    async run(args, o = {}) {
      const r = await runProcess(path, ['--endpoint-url', url, ...args, '--output', 'json'], {
        env,
        timeoutMs: 90_000,
      });
      if (r.code !== 0 && o.allowFailure !== true) {
        throw new Error(`aws ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
      }
      let json: unknown;
      try {
        json = r.stdout.trim() === '' ? undefined : JSON.parse(r.stdout);
      } catch {
        json = undefined;
      }
      return { code: r.code, stdout: r.stdout, stderr: r.stderr, json };
    },
    close() {
      rmSync(home, { recursive: true, force: true });
    },
  };
}
