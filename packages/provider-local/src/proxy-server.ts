/**
 * The proxy program a local instance runs:
 * `node dist/proxy-server.js --config <state file>`. It reads the
 * instance's state file (address, port, allowed sources, access log,
 * limits), serves until SIGTERM or SIGINT, then shuts down gracefully and
 * exits 0. Diagnostics go to stderr (the instance's `.log` file).
 *
 * @module
 */
import { readFileSync } from 'node:fs';
import { type ForwardProxyOptions, startForwardProxy } from './proxy.js';

function fail(message: string): never {
  process.stderr.write(`proxy-server: ${message}\n`);
  process.exit(2);
}

function readConfig(argv: readonly string[]): ForwardProxyOptions {
  const at = argv.indexOf('--config');
  const file = at >= 0 ? argv[at + 1] : undefined;
  if (file === undefined) fail('usage: proxy-server --config <file>');
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    fail(`cannot read ${file}: ${(err as Error).message}`);
  }
  const c = raw as Partial<ForwardProxyOptions> & { accessLog?: string };
  if (typeof c.address !== 'string' || typeof c.port !== 'number') {
    fail(`${file} has no address and port`);
  }
  return {
    name: typeof c.name === 'string' ? c.name : '',
    address: c.address,
    port: c.port,
    allowedSources: Array.isArray(c.allowedSources) ? c.allowedSources : [],
    accessLog: typeof c.accessLog === 'string' ? c.accessLog : undefined,
    limits: typeof c.limits === 'object' && c.limits !== null ? c.limits : undefined,
  };
}

const options = readConfig(process.argv.slice(2));
process.on('uncaughtException', (err) => {
  // One broken connection must not take the proxy down; say so and carry on.
  process.stderr.write(`proxy-server: unexpected error: ${err.stack ?? String(err)}\n`);
});
try {
  const proxy = await startForwardProxy(options);
  process.stderr.write(
    `proxy-server: ${options.name} listening on ${proxy.address.address}:${proxy.address.port}\n`,
  );
  let stopping = false;
  const stop = (sig: string) => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(`proxy-server: ${sig}, shutting down\n`);
    void proxy.close().then(() => process.exit(0));
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
} catch (err) {
  fail(`cannot listen on ${options.address}:${options.port}: ${(err as Error).message}`);
}
