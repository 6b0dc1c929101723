import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/** The absolute path of an executable on PATH (or the sbin dirs), or undefined. */
export function which(bin: string): string | undefined {
  const dirs = [
    ...(process.env.PATH ?? '').split(delimiter),
    '/usr/sbin',
    '/sbin',
    '/usr/local/sbin',
  ];
  for (const dir of dirs) {
    if (!dir) continue;
    const file = join(dir, bin);
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** Why a suite that needs these executables cannot run here, or undefined when it can. */
export function missingPeers(bins: readonly string[]): string | undefined {
  const missing = bins.filter((b) => which(b) === undefined);
  return missing.length === 0 ? undefined : `not on PATH: ${missing.join(', ')}`;
}

interface SuiteApi {
  describe: ((name: string, fn: () => void) => void) & {
    skip: (name: string, fn: () => void) => void;
  };
  it: (name: string, fn: () => void) => void;
}

/**
 * Registers a suite that talks to real programs (daemons, CLI readers).
 * When one is missing the suite is skipped with the reason printed; under
 * `CI=true`, where `.ci/run` installs every peer, a missing peer is a
 * failing test instead, so a skip can never pass for a green run.
 */
export function describeWithPeers(
  t: SuiteApi,
  name: string,
  bins: readonly string[],
  fn: () => void,
): void {
  const reason = missingPeers(bins);
  if (reason === undefined) {
    t.describe(name, fn);
    return;
  }
  if (process.env.CI === 'true') {
    t.describe(name, () => {
      t.it('has its peers installed (CI installs them)', () => {
        throw new Error(`${name}: ${reason}; .ci/run should have installed them`);
      });
    });
    return;
  }
  console.warn(`skipping "${name}": ${reason}`);
  t.describe.skip(name, fn);
}
