// Peers: the `proxy-op whoami` command as an admin runs it (bin/proxy-op.js in a child process),
// reached through the local forward proxy in this process with @proxy-op/probe, as a provider's
// `probe.url` would be.
import { spawn } from 'node:child_process';
import { startForwardProxy } from '@proxy-op/forward-proxy';
import { probe } from '@proxy-op/probe';
import { describe, expect, it } from 'vitest';
import { CLI } from './cli-support.js';

describe('proxy-op whoami', () => {
  it('serves the probe target over HTTP and HTTPS until SIGTERM, and a probe through a proxy passes against it', async () => {
    const child = spawn(
      process.execPath,
      [CLI, 'whoami', '--listen', '127.0.0.1:0', '--tls-listen', '127.0.0.1:0'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    const line = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => {
        out += d;
        if (out.includes('\n')) resolve(out.split('\n')[0] ?? '');
      });
      child.once('exit', (code) => reject(new Error(`whoami exited ${code} before serving`)));
    });
    const m = /^serving (http:\/\/\S+) and (https:\/\/\S+) \(certificate ([0-9A-F:]+)\)$/.exec(
      line,
    );
    expect(m, line).not.toBeNull();
    const proxy = await startForwardProxy({
      name: 'whoami-test',
      address: '127.0.80.250',
      port: 0,
      allowedSources: ['127.0.0.1/32'],
      outgoingAddress: '127.0.80.250',
      // The target is on loopback, which a proxy refuses unless allowed.
      egress: { allow: [new URL(m?.[1] ?? '').host, new URL(m?.[2] ?? '').host] },
    });
    try {
      const r = await probe(`http://127.0.80.250:${proxy.address.port}`, {
        get: m?.[1],
        connect: m?.[2],
        tls: { fingerprint256: m?.[3] },
      });
      expect(r.failure).toBeUndefined();
      expect(r.egressIP).toBe('127.0.80.250');
    } finally {
      await proxy.close(0);
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  }, 60_000);

  it('refuses --cert without --key (exit 2)', async () => {
    const child = spawn(process.execPath, [CLI, 'whoami', '--cert', '/nonexistent'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      err += d;
    });
    const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
    expect(code).toBe(2);
    expect(err).toContain('--cert and --key go together');
  });
});
