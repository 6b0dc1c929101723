// Peer: none (looks at PATH only).
import { describe, expect, it, vi } from 'vitest';
import { describeWithPeers, missingPeers, which } from '../src/index.js';

describe('which / missingPeers', () => {
  it('finds sh and reports a missing program by name', () => {
    expect(which('sh')).toMatch(/\/sh$/);
    expect(missingPeers(['sh'])).toBeUndefined();
    expect(missingPeers(['sh', 'no-such-program-xyz'])).toBe('not on PATH: no-such-program-xyz');
  });
});

describe('describeWithPeers', () => {
  function fakeApi() {
    const calls: string[] = [];
    const api = {
      describe: Object.assign(
        (name: string, fn: () => void) => {
          calls.push(`describe:${name}`);
          fn();
        },
        { skip: (name: string) => calls.push(`skip:${name}`) },
      ),
      it: (name: string, fn: () => void) => {
        calls.push(`it:${name}`);
        try {
          fn();
        } catch (e) {
          calls.push(`threw:${(e as Error).message}`);
        }
      },
    };
    return { api, calls };
  }

  it('runs the suite when the peers exist', () => {
    const { api, calls } = fakeApi();
    describeWithPeers(api, 's', ['sh'], () => calls.push('body'));
    expect(calls).toEqual(['describe:s', 'body']);
  });

  it('skips with a printed reason outside CI', () => {
    vi.stubEnv('CI', '');
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const { api, calls } = fakeApi();
    describeWithPeers(api, 's', ['no-such-program-xyz'], () => calls.push('body'));
    expect(calls).toEqual(['skip:s']);
    expect(warn).toHaveBeenCalledWith(expect.stringContaining('no-such-program-xyz'));
    vi.unstubAllEnvs();
    warn.mockRestore();
  });

  it('fails instead of skipping under CI=true', () => {
    vi.stubEnv('CI', 'true');
    const { api, calls } = fakeApi();
    describeWithPeers(api, 's', ['no-such-program-xyz'], () => calls.push('body'));
    expect(calls[0]).toBe('describe:s');
    expect(calls.some((c) => c.startsWith('threw:') && c.includes('.ci/run'))).toBe(true);
    expect(calls).not.toContain('body');
    vi.unstubAllEnvs();
  });
});
