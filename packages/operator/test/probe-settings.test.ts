// Peer: none (providers files in memory; the probe block's validation and meaning).
import { describe, expect, it } from 'vitest';
import {
  allowedUnhealthy,
  parseMaxUnhealthy,
  parseProbeSettings,
  settingsTarget,
} from '../src/probe/settings.js';
import { parseProvidersConfig } from '../src/providers/file.js';
import { ProviderSet } from '../src/providers/set.js';
import { ScriptedBackend, testRegistry } from './support.js';

describe('a provider’s probe block', () => {
  const { registry } = testRegistry({ scripted: new ScriptedBackend() });

  it('is optional: probing on, against the operator’s own target, maxUnhealthy 40%', async () => {
    const load = await parseProvidersConfig(
      'providers:\n  - name: a\n    type: memory\n',
      registry,
    );
    if (!load.ok) throw new Error(load.problems.join());
    expect(load.config.providers[0]?.probe).toEqual({
      enabled: true,
      maxUnhealthy: { percent: 40 },
    });
  });

  it('takes url, getUrl, enabled and maxUnhealthy', async () => {
    const load = await parseProvidersConfig(
      [
        'providers:',
        '  - name: a',
        '    type: memory',
        '    probe: { url: "https://probe.example.com/whoami", getUrl: "http://probe.example.com:8080/", maxUnhealthy: 3 }',
        '  - name: b',
        '    type: memory',
        '    probe: { enabled: false }',
        '',
      ].join('\n'),
      registry,
    );
    if (!load.ok) throw new Error(load.problems.join());
    expect(load.config.providers.map((p) => p.probe)).toEqual([
      {
        enabled: true,
        url: 'https://probe.example.com/whoami',
        getUrl: 'http://probe.example.com:8080/',
        maxUnhealthy: { count: 3 },
      },
      { enabled: false, maxUnhealthy: { percent: 40 } },
    ]);
  });

  it('names the field of every problem', async () => {
    const load = await parseProvidersConfig(
      [
        'providers:',
        '  - name: a',
        '    type: memory',
        '    probe: { url: "ftp://x/", maxUnhealthy: 140%, colour: blue }',
        '  - name: b',
        '    type: memory',
        '    probe: { enabled: "no", getUrl: "https://x/", socks5: "yes" }',
        '  - name: c',
        '    type: memory',
        '    probe: { enabled: false, url: "http://x/" }',
        '  - name: d',
        '    type: memory',
        '    probe: [1]',
        '',
      ].join('\n'),
      registry,
    );
    expect(load.ok).toBe(false);
    if (load.ok) return;
    expect(load.problems).toEqual([
      'providers[0].probe.colour: unknown field (url, getUrl, enabled, socks5, maxUnhealthy)',
      'providers[0].probe.url: must be an http: or https: URL',
      'providers[0].probe.maxUnhealthy: must be a count (3) or a percentage (40%) from 0% to 100%',
      'providers[1].probe.socks5: must be true or false',
      'providers[1].probe.enabled: must be true or false',
      'providers[1].probe.getUrl: must be an http: URL',
      'providers[1].probe.getUrl: needs url (the target the tunnel reaches)',
      'providers[2].probe.enabled: false probes nothing; leave url and getUrl out',
      'providers[3].probe: must be a mapping (url, getUrl, enabled, socks5, maxUnhealthy)',
    ]);
  });

  it('a reload that changes only the probe block keeps the provider, and says so', async () => {
    const set = new ProviderSet();
    const apply = async (text: string) => {
      const load = await parseProvidersConfig(text, registry);
      if (!load.ok) throw new Error(load.problems.join());
      return set.apply(load.config);
    };
    await apply('providers:\n  - name: a\n    type: memory\n');
    const built = set.get('a')?.provider;
    const change = await apply(
      'providers:\n  - name: a\n    type: memory\n    probe: { maxUnhealthy: 1 }\n',
    );
    expect(change).toMatchObject({ kept: ['a'], rebuilt: [], probeChanged: ['a'] });
    expect(set.get('a')?.provider).toBe(built);
    expect(set.get('a')?.probe.maxUnhealthy).toEqual({ count: 1 });
    const same = await apply(
      'providers:\n  - name: a\n    type: memory\n    probe: { maxUnhealthy: 1 }\n',
    );
    expect(same.probeChanged).toEqual([]);
  });
});

describe('what the block means', () => {
  it('url is the tunnel’s target; the GET asks for getUrl, else url when http:, else url over http:', () => {
    const t = (v: Record<string, unknown>) => {
      const s = parseProbeSettings(v, 'probe').settings;
      const target = settingsTarget(s);
      return [String(target?.get), String(target?.connect)];
    };
    expect(t({ url: 'http://probe.example.com:8080/' })).toEqual([
      'http://probe.example.com:8080/',
      'http://probe.example.com:8080/',
    ]);
    expect(t({ url: 'https://probe.example.com:8443/w' })).toEqual([
      'http://probe.example.com/w',
      'https://probe.example.com:8443/w',
    ]);
    expect(t({ url: 'https://probe.example.com/', getUrl: 'http://other.example.com/' })).toEqual([
      'http://other.example.com/',
      'https://probe.example.com/',
    ]);
    expect(settingsTarget(parseProbeSettings(undefined, 'probe').settings)).toBeUndefined();
  });

  it('maxUnhealthy: a count, or a percentage rounded down as MachineHealthCheck does, but at least one', () => {
    const m40 = parseMaxUnhealthy('40%');
    if (m40 === undefined) throw new Error('40% did not parse');
    // MachineHealthCheck's documented examples: 40% of 25 is 10; 40% of 6 is 2.
    expect(allowedUnhealthy(m40, 25)).toBe(10);
    expect(allowedUnhealthy(m40, 6)).toBe(2);
    // Where MachineHealthCheck would allow none (40% of 1 or 2), one may still be replaced.
    expect(allowedUnhealthy(m40, 1)).toBe(1);
    expect(allowedUnhealthy(m40, 2)).toBe(1);
    expect(allowedUnhealthy({ percent: 0 }, 10)).toBe(0);
    expect(allowedUnhealthy({ count: 2 }, 100)).toBe(2);
    expect(['3', 3, '100%', '0%'].map(parseMaxUnhealthy)).toEqual([
      { count: 3 },
      { count: 3 },
      { percent: 100 },
      { percent: 0 },
    ]);
    expect(['101%', -1, 1.5, 'x', '4 %'].map(parseMaxUnhealthy)).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });
});
