#!/usr/bin/env node
// The `proxy-op` command. It is a committed file, not the build output itself,
// so that `npm ci` in a fresh clone links the command before anything is
// built; it runs the built CLI in dist/.
try {
  await import('../dist/cli.js');
} catch (err) {
  if (
    err instanceof Error &&
    /** @type {{ code?: string }} */ (err).code === 'ERR_MODULE_NOT_FOUND' &&
    err.message.includes('cli.js')
  ) {
    process.stderr.write('proxy-op: not built yet; run "npm run build" first\n');
    process.exit(1);
  }
  throw err;
}
