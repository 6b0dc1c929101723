/**
 * Loggers for suites against real backends, where a person reads the
 * output: the shape of `@proxy-op/contract`'s `Logger`, declared here so the
 * kit depends on nothing.
 */
export interface LogFn {
  (fields: Record<string, unknown>, msg?: string): void;
  (msg: string): void;
}

/** What a provider writes its lines to. */
export interface TestLogger {
  trace: LogFn;
  debug: LogFn;
  info: LogFn;
  warn: LogFn;
  error: LogFn;
  child(bindings: Record<string, unknown>): TestLogger;
}

const LEVELS = ['trace', 'debug', 'info', 'warn', 'error'] as const;
type Level = (typeof LEVELS)[number];

/** Prints lines at `level` (default `warn`) and above to stderr: level, message, fields as JSON. */
export function consoleLogger(level: string | undefined): TestLogger {
  const min = LEVELS.indexOf((level ?? 'warn') as Level);
  const make = (bindings: Record<string, unknown>): TestLogger => {
    const at =
      (l: Level): LogFn =>
      (a: Record<string, unknown> | string, msg?: string): void => {
        if (LEVELS.indexOf(l) < min) return;
        const [fields, text] = typeof a === 'string' ? [{}, a] : [a, msg ?? ''];
        console.error(l, text, JSON.stringify({ ...bindings, ...fields }));
      };
    return {
      trace: at('trace'),
      debug: at('debug'),
      info: at('info'),
      warn: at('warn'),
      error: at('error'),
      child: (b) => make({ ...bindings, ...b }),
    };
  };
  return make({});
}

/** Writes every line to both loggers. */
export function teeLogger(a: TestLogger, b: TestLogger): TestLogger {
  const both =
    (k: Level): LogFn =>
    (x: Record<string, unknown> | string, m?: string): void => {
      for (const l of [a, b]) {
        if (typeof x === 'string') l[k](x);
        else l[k](x, m);
      }
    };
  return {
    trace: both('trace'),
    debug: both('debug'),
    info: both('info'),
    warn: both('warn'),
    error: both('error'),
    child: (bindings) => teeLogger(a.child(bindings), b.child(bindings)),
  };
}

/** A duration from the environment: `15m`, `90s` or plain seconds; `fallbackMs` when unset or unreadable. */
export function durationFromEnv(text: string | undefined, fallbackMs: number): number {
  const m = /^(\d+)(m|s)?$/.exec(text ?? '');
  if (m === null) return fallbackMs;
  return Number(m[1]) * (m[2] === 'm' ? 60_000 : 1000);
}
