import { afterEach, describe, expect, it, vi } from 'vitest';
import { consoleLogger, durationFromEnv, type TestLogger, teeLogger } from '../src/index.js';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('consoleLogger', () => {
  it('prints the lines at its level and above, with the bindings of its children', () => {
    const printed: unknown[][] = [];
    vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => {
      printed.push(args);
    });
    const log = consoleLogger('debug').child({ provider: 'lab' });
    log.trace('hidden');
    log.debug({ id: 'vms/a' }, 'created');
    log.warn('slow');
    expect(printed).toEqual([
      ['debug', 'created', '{"provider":"lab","id":"vms/a"}'],
      ['warn', 'slow', '{"provider":"lab"}'],
    ]);
  });

  it('prints warnings and errors only when no level is set', () => {
    const printed: unknown[][] = [];
    vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => {
      printed.push(args);
    });
    const log = consoleLogger(undefined);
    log.info('quiet');
    log.error('loud');
    expect(printed.map((p) => p[1])).toEqual(['loud']);
  });
});

describe('teeLogger', () => {
  it('writes every line, and every child’s line, to both loggers', () => {
    const lines = (tag: string, out: string[]): TestLogger => {
      const make = (b: string): TestLogger => {
        const at = (l: string) => (a: Record<string, unknown> | string, m?: string) => {
          out.push(`${tag} ${l} ${b}${typeof a === 'string' ? a : `${JSON.stringify(a)} ${m}`}`);
        };
        return {
          trace: at('trace'),
          debug: at('debug'),
          info: at('info'),
          warn: at('warn'),
          error: at('error'),
          child: (bindings) => make(`${b}${JSON.stringify(bindings)} `),
        };
      };
      return make('');
    };
    const out: string[] = [];
    const log = teeLogger(lines('a', out), lines('b', out));
    log.info('one');
    log.child({ op: 'create' }).error({ code: 1 }, 'two');
    expect(out).toEqual([
      'a info one',
      'b info one',
      'a error {"op":"create"} {"code":1} two',
      'b error {"op":"create"} {"code":1} two',
    ]);
  });
});

describe('durationFromEnv', () => {
  it('reads minutes, seconds and plain seconds, and falls back otherwise', () => {
    expect(durationFromEnv('15m', 1)).toBe(900_000);
    expect(durationFromEnv('90s', 1)).toBe(90_000);
    expect(durationFromEnv('45', 1)).toBe(45_000);
    expect(durationFromEnv(undefined, 7)).toBe(7);
    expect(durationFromEnv('soon', 7)).toBe(7);
  });
});
