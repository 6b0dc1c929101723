#!/usr/bin/env node
// The proxy program, `proxy-op-forward-proxy --config <file>`. It is a committed file, not the
// build output itself, so that `npm ci` in a fresh clone links the command before anything is
// built; it runs the built program in dist/.
let program;
try {
  program = await import('../dist/proxy-server.js');
} catch (err) {
  if (
    err instanceof Error &&
    /** @type {{ code?: string }} */ (err).code === 'ERR_MODULE_NOT_FOUND' &&
    err.message.includes('proxy-server.js')
  ) {
    process.stderr.write('proxy-server: not built yet; run "npm run build" first\n');
    process.exit(1);
  }
  throw err;
}
await program.runProxyServer(process.argv.slice(2));
