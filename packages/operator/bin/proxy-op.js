#!/usr/bin/env node
// The `proxy-op` command. It is a committed file, not the build output itself,
// so that `npm ci` in a fresh clone links the command before anything is
// built; it runs main() of the built CLI in dist/.
let cli;
try {
  cli = await import('../dist/cli/main.js');
} catch (err) {
  if (
    err instanceof Error &&
    /** @type {{ code?: string }} */ (err).code === 'ERR_MODULE_NOT_FOUND' &&
    err.message.includes("dist/cli/main.js' imported from")
  ) {
    process.stderr.write('proxy-op: not built yet; run "npm run build" first\n');
    process.exit(1);
  }
  throw err;
}
const code = await cli.main(process.argv.slice(2));
process.exitCode = code;
if (code !== 0 || process.argv[2] === 'run') {
  // Timers of providers or watchers must not keep a finished command alive.
  setTimeout(() => process.exit(code), 50).unref();
}
