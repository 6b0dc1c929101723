// Test support: a tiny runner that collects the tests a section registers and runs them
// in-process, so the self-test can see which ones fail.
import { expect } from 'vitest';
import type { ConformanceTestApi } from '../src/index.js';

export interface Collected {
  readonly name: string;
  run(): Promise<{ ok: true } | { ok: false; error: unknown }>;
}

export function collect(register: (api: ConformanceTestApi) => void): Collected[] {
  const out: Collected[] = [];
  const path: string[] = [];
  const api: ConformanceTestApi = {
    expect,
    describe(name, fn) {
      path.push(name);
      try {
        fn();
      } finally {
        path.pop();
      }
    },
    it(name, fn, timeout = 30_000) {
      out.push({
        name: [...path, name].join(' > '),
        async run() {
          let timer: NodeJS.Timeout | undefined;
          try {
            await Promise.race([
              fn(),
              new Promise((_, reject) => {
                timer = setTimeout(
                  () => reject(new Error(`timed out after ${timeout} ms`)),
                  timeout,
                );
              }),
            ]);
            return { ok: true };
          } catch (error) {
            return { ok: false, error };
          } finally {
            clearTimeout(timer);
          }
        },
      });
    },
  };
  register(api);
  return out;
}
