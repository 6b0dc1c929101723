// Peers: the built CLI (`proxy-op gateway --upstreams FILE`) as a user runs it, one real upstream
// (the forward proxy of @proxy-op/forward-proxy) and a real HTTP origin, all on 127.0.0.0/8.
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ForwardProxy, startForwardProxy } from '@proxy-op/forward-proxy';
import { freePort, spawnJsonLines, startHttpEchoOrigin } from '@proxy-op/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upstreamsText } from '../src/store/pools.js';
import { CLI, requestViaGateway, runCli } from './cli-support.js';

let dir = '';
let upstream: ForwardProxy;
let echo: Awaited<ReturnType<typeof startHttpEchoOrigin>>;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'proxy-op-gateway-cli-'));
  echo = await startHttpEchoOrigin();
  upstream = await startForwardProxy({
    name: 'up',
    address: '127.0.74.11',
    port: 0,
    allowedSources: ['127.0.0.0/8'],
    egress: { allow: [`127.0.0.1:${echo.port}`] },
  });
});
afterAll(async () => {
  await upstream?.close(0);
  echo?.server.close();
  await rm(dir, { recursive: true, force: true });
});

const through = (port: number) =>
  requestViaGateway({ address: '127.0.74.1', port }, `http://127.0.0.1:${echo.port}/cli`);

describe('proxy-op gateway --upstreams FILE', () => {
  it('starts before the file exists, and takes the upstreams once it does', async () => {
    const file = join(dir, 'upstreams.json');
    const port = await freePort('127.0.74.1');
    const gw = spawnJsonLines(process.execPath, [
      CLI,
      'gateway',
      '--upstreams',
      file,
      '--listen',
      `127.0.74.1:${port}`,
      '--allowed-sources',
      '127.0.0.1/32',
      // The origin is on loopback, which the gateway (as its upstream) refuses unless allowed.
      '--egress',
      JSON.stringify({ allow: [`127.0.0.1:${echo.port}`] }),
    ]);
    try {
      await gw.waitForLog((l) => (l.msg === 'gateway listening' ? l : undefined), 30_000);
      expect(gw.logs.some((l) => String(l.msg).includes('not there yet'))).toBe(true);
      expect((await through(port)).status, 'no upstream yet').toBe(502);
      const { address, port: upPort } = upstream.address;
      await writeFile(
        `${file}.tmp`,
        upstreamsText([{ name: 'web-abcde', url: `http://${address}:${upPort}` }]),
      );
      await rename(`${file}.tmp`, file);
      await gw.waitForLog((l) => (l.msg === 'gateway upstreams changed' ? l : undefined), 10_000);
      const answer = await through(port);
      expect({ status: answer.status, upstream: answer.upstream }).toEqual({
        status: 200,
        upstream: 'web-abcde',
      });
      expect(JSON.parse(answer.body)).toMatchObject({ path: '/cli' });
    } finally {
      gw.kill('SIGTERM');
      expect((await gw.exit).code).toBe(0);
    }
  });

  it('refuses a file it cannot read as upstreams, and a command line without a list', async () => {
    const bad = join(dir, 'bad.json');
    await writeFile(bad, '{"upstreams": [{"name": "x"}]}');
    const run = await runCli([
      'gateway',
      '--upstreams',
      bad,
      '--listen',
      '127.0.74.1:1',
      '--allowed-sources',
      '127.0.0.1/32',
    ]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`parents.file: upstreams[0] of ${bad} needs a name and a url`);
    const none = await runCli(['gateway', '--listen', '127.0.74.1:1', '--allowed-sources', 'x']);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('name one ProxyPool and --standalone DIR, or give --upstreams');
  });
});
