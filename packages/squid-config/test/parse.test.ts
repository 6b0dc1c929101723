// Peer: the real Squid (Debian `squid`), which must read every configuration without a warning.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describeWithPeers, which } from '@proxy-op/testkit';
import * as vitest from 'vitest';
import {
  CONTAINER_PASSWORD_FILE,
  renderSquidConfig,
  SERVICE_PASSWORD_FILE,
  SERVICE_PATHS,
} from '../src/index.js';

const { afterAll, beforeAll, expect, it } = vitest;
const run = promisify(execFile);

const configurations: Record<string, string> = {
  'a container, one IPv4 source': renderSquidConfig({ port: 3128, allowedSources: ['10.0.0.0/8'] }),
  'a container, IPv4 and IPv6 sources and bare addresses, CONNECT to 443 and 8443':
    renderSquidConfig({
      port: 8080,
      allowedSources: ['10.0.0.0/8', '192.168.1.7', 'fd00::/8', '2001:db8::1'],
      connectPorts: [443, 8443],
    }),
  'every address of both families, overlapping sources': renderSquidConfig({
    port: 3128,
    allowedSources: ['10.1.0.0/16', '0.0.0.0/0', '::/0', 'fd00::/8'],
  }),
  'the Debian and Ubuntu service': renderSquidConfig({
    port: 3128,
    allowedSources: ['10.0.0.0/8', '192.168.0.0/16'],
    paths: SERVICE_PATHS,
  }),
  'a container with Basic authentication': renderSquidConfig({
    port: 3128,
    allowedSources: ['10.0.0.0/8', 'fd00::/8'],
    auth: { realm: 'proxy-op default/web-0a1b', passwordFile: CONTAINER_PASSWORD_FILE },
  }),
  'the service with Basic authentication, its TTL and children, a realm with every allowed sign':
    renderSquidConfig({
      port: 3128,
      allowedSources: ['192.168.0.0/16'],
      paths: SERVICE_PATHS,
      auth: {
        realm: "proxy-op #1 (web): a=b; 100% 'ok' <x> {y} [z] ~!@$^&*_+|?,.`",
        passwordFile: SERVICE_PASSWORD_FILE,
        credentialsTtlSeconds: 5,
        children: 1,
      },
    }),
  'a destination policy with every kind of entry, ports and ranges': renderSquidConfig({
    port: 3128,
    allowedSources: ['10.0.0.0/8'],
    egress: {
      allow: [
        '10.20.0.0/16',
        '10.20.1.0/24',
        '127.0.0.1:8080',
        '[fd00::5]:9000',
        'fd00:1::/32',
        'internal.example:8000-8100',
        'git.example',
        '*.corp.example',
        '0.0.0.0/0:443',
        '[::/0]:443',
      ],
      deny: ['10.20.99.0/24', 'blocked.example', '*.evil.example:443', '192.0.2.1:80'],
      connectPorts: [443, '8443-8450'],
      httpPorts: [80, 443, '1025-65535'],
    },
  }),
  'a destination policy with Basic authentication and no CONNECT port': renderSquidConfig({
    port: 3128,
    allowedSources: ['10.0.0.0/8'],
    auth: { realm: 'proxy-op', passwordFile: CONTAINER_PASSWORD_FILE },
    egress: { allow: ['10.1.2.3:22'], connectPorts: [] },
  }),
  'loopback only': renderSquidConfig({
    port: 3128,
    allowedSources: ['127.0.0.1'],
    listenAddress: '127.0.0.1',
  }),
};

describeWithPeers(vitest, 'the real Squid reads every configuration', ['squid'], () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'squid-config-parse-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** `squid -k parse` of `conf`: what it printed. */
  async function parse(name: string, conf: string): Promise<string> {
    const file = join(dir, `${name.replace(/\W+/g, '-')}.conf`);
    await writeFile(file, conf);
    const { stdout, stderr } = await run(which('squid') as string, ['-k', 'parse', '-f', file]);
    expect(`${stdout}\n${stderr}`).toContain(`Processing Configuration File: ${file}`);
    return `${stdout}\n${stderr}`;
  }

  for (const [what, conf] of Object.entries(configurations)) {
    it(`squid -k parse accepts ${what}, without a warning`, async () => {
      const out = await parse(what, conf);
      expect(out.split('\n').filter((l) => /FATAL|ERROR|WARNING|Bungled/i.test(l))).toEqual([]);
    });
  }

  it('warns about a raw /0 source, which is why it is written as two halves', async () => {
    const raw = configurations['a container, one IPv4 source']?.replace(
      'src 10.0.0.0/8',
      'src 0.0.0.0/0',
    );
    const out = await parse('raw', raw ?? '');
    expect(out).toMatch(/WARNING|ERROR/);
  });

  it('refuses a broken file (the check can fail)', async () => {
    const broken = `${configurations['a container, one IPv4 source']}http_access allow nobody_knows\n`;
    await expect(parse('broken', broken)).rejects.toThrow();
  });
});
