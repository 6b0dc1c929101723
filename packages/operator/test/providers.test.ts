// Peer: none (providers files in memory and on disk; provider modules from the registry and by import).
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { profile as memoryProfile } from '@proxy-op/providertest/reference';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_PROVIDER } from '../src/providers/default.js';
import {
  fileStamp,
  loadProvidersFile,
  parseProvidersConfig,
  watchProvidersFile,
} from '../src/providers/file.js';
import {
  builtinProviders,
  FIRST_PARTY_PROVIDERS,
  ProviderRegistry,
} from '../src/providers/registry.js';
import { ProviderSet } from '../src/providers/set.js';
import { localStateDir, standaloneProviders } from '../src/standalone/providers.js';
import { ScriptedBackend, testRegistry } from './support.js';

const dir = await mkdtemp(join(tmpdir(), 'proxy-op-providers-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('providers file', () => {
  const { registry } = testRegistry({ scripted: new ScriptedBackend() });

  it('accepts a valid file and fills the installation default', async () => {
    const load = await parseProvidersConfig(
      'providers:\n  - name: mem\n    type: memory\n    memory:\n      zones: [zone-a, zone-b]\n',
      registry,
    );
    expect(load.ok).toBe(true);
    if (!load.ok) return;
    expect(load.config.installation).toBe('default');
    expect(load.config.providers.map((p) => [p.name, p.moduleType])).toEqual([['mem', 'memory']]);
  });

  it('reports every problem at once, each with its path', async () => {
    const load = await parseProvidersConfig(
      [
        'installation: Not_A_Label',
        'extra: 1',
        'providers:',
        '  - name: mem',
        '    type: memory',
        '    memory:',
        '      zones: [zone-a, Zone_B]',
        '      colour: blue',
        '  - name: mem',
        '    type: memory',
        '  - name: Bad',
        '    type: nosuch',
        '  - type: scripted',
        '    scripted: { zone: 5 }',
        '    other: {}',
        '',
      ].join('\n'),
      registry,
    );
    expect(load.ok).toBe(false);
    if (load.ok) return;
    const paths = load.problems.map((p) => p.split(':')[0]);
    expect(paths).toEqual(
      expect.arrayContaining([
        'installation',
        'extra',
        'providers[0].memory.zones[1]',
        'providers[0].memory.colour',
        'providers[1].name',
        'providers[2].name',
        'providers[2].type',
        'providers[3].name',
        'providers[3].scripted.zone',
        'providers[3].other',
      ]),
    );
    expect(load.problems).toHaveLength(10);
  });

  it('reports YAML syntax errors with line and column', async () => {
    const load = await parseProvidersConfig('providers:\n  - name: [unclosed\n', registry);
    expect(load.ok).toBe(false);
    if (!load.ok) expect(load.problems[0]).toMatch(/^line \d+, column \d+: /);
  });

  it('does not know the reference provider unless it is registered', async () => {
    const load = await parseProvidersConfig(
      'providers:\n  - name: m\n    type: memory\n',
      new ProviderRegistry(),
    );
    expect(load.ok).toBe(false);
    if (!load.ok) expect(load.problems[0]).toMatch(/^providers\[0\]\.type: /);
  });

  it('loads a provider module by npm package name or path', async () => {
    const mod = join(dir, 'plugin.mjs');
    await writeFile(
      mod,
      [
        "import { providerModule as memory } from '@proxy-op/providertest/reference';",
        "export const providerModule = { ...memory, type: 'plugin' };",
        '',
      ].join('\n'),
    );
    const byPath = await parseProvidersConfig(
      'providers:\n  - name: p\n    type: ./plugin.mjs\n',
      new ProviderRegistry(),
      {
        baseDir: dir,
      },
    );
    expect(byPath.ok && byPath.config.providers[0]?.moduleType).toBe('plugin');
    // A package installed next to the providers file (not beside the operator) is found too.
    await mkdir(join(dir, 'node_modules', 'acme-proxy-provider'), { recursive: true });
    await writeFile(
      join(dir, 'node_modules', 'acme-proxy-provider', 'package.json'),
      JSON.stringify({
        name: 'acme-proxy-provider',
        type: 'module',
        exports: { '.': './index.js' },
      }),
    );
    await writeFile(
      join(dir, 'node_modules', 'acme-proxy-provider', 'index.js'),
      [
        `const profile = ${JSON.stringify({ ...memoryProfile, credentialRotation: 'replace' })};`,
        "const configSchema = { '~standard': { version: 1, vendor: 'acme', validate: (v) => ({ value: v ?? {} }) } };",
        "export default { type: 'acme', profile, configSchema, classify: () => 'Transient', create: () => ({}) };",
        '',
      ].join('\n'),
    );
    const byPackage = await parseProvidersConfig(
      'providers:\n  - name: p\n    type: acme-proxy-provider\n    acme: { zones: [z1] }\n',
      new ProviderRegistry(),
      { baseDir: dir },
    );
    expect(byPackage.ok && byPackage.config.providers[0]?.moduleType).toBe('acme');
    const byName = await parseProvidersConfig(
      'providers:\n  - name: p\n    type: "@proxy-op/contract"\n',
      new ProviderRegistry(),
    );
    expect(byName.ok).toBe(false);
    if (!byName.ok) expect(byName.problems[0]).toContain('does not export a provider module');
    const missing = await parseProvidersConfig(
      'providers:\n  - name: p\n    type: "@proxy-op/no-such-provider"\n',
      new ProviderRegistry(),
    );
    expect(missing.ok).toBe(false);
    if (!missing.ok) expect(missing.problems[0]).toContain('cannot load provider type');
  });

  it('rebuilds only the providers whose block changed', async () => {
    const set = new ProviderSet();
    const apply = async (text: string) => {
      const load = await parseProvidersConfig(text, registry);
      if (!load.ok) throw new Error(load.problems.join());
      return set.apply(load.config);
    };
    const first = await apply(
      'providers:\n  - name: a\n    type: memory\n  - name: b\n    type: memory\n  - name: c\n    type: scripted\n',
    );
    expect(first.added).toEqual(['a', 'b', 'c']);
    const a = set.get('a')?.provider;
    const second = await apply(
      'providers:\n  - name: a\n    type: memory\n  - name: b\n    type: memory\n    memory: { zones: [zone-x] }\n',
    );
    expect(second).toMatchObject({ kept: ['a'], rebuilt: ['b'], removed: ['c'], added: [] });
    expect(set.get('a')?.provider).toBe(a);
    expect(set.get('c')).toBeUndefined();
  });

  it("takes a billed provider's price from the file, refuses one for a provider that is not billed, and changes it without a rebuild", async () => {
    const set = new ProviderSet();
    const load = async (text: string) => parseProvidersConfig(text, registry);
    const priced = await load(
      [
        'providers:',
        '  - name: a',
        '    type: memory',
        '    price: { currency: EUR, perHour: 0.0119, machineTypes: { large: 0.0476 } }',
        '',
      ].join('\n'),
    );
    if (!priced.ok) throw new Error(priced.problems.join());
    await set.apply(priced.config);
    const built = set.get('a');
    expect(built?.price).toEqual({
      currency: 'EUR',
      perHour: 0.0119,
      machineTypes: { large: 0.0476 },
    });
    const cheaper = await load(
      'providers:\n  - name: a\n    type: memory\n    price: { currency: EUR, perHour: 0.01 }\n',
    );
    if (!cheaper.ok) throw new Error(cheaper.problems.join());
    const change = await set.apply(cheaper.config);
    expect(change).toMatchObject({ kept: ['a'], rebuilt: [], probeChanged: [] });
    expect(set.get('a')?.provider).toBe(built?.provider);
    expect(set.get('a')?.price).toEqual({ currency: 'EUR', perHour: 0.01, machineTypes: {} });

    const bad = await load(
      [
        'providers:',
        '  - name: a',
        '    type: memory',
        '    price: { currency: euro, perHour: -1, machineTypes: { large: x }, tax: 1 }',
        '  - name: b',
        '    type: memory',
        '    price: { currency: USD }',
        '  - name: c',
        '    type: scripted',
        '    price: { currency: USD, perHour: 1 }',
        '',
      ].join('\n'),
    );
    expect(bad.ok).toBe(false);
    if (bad.ok) return;
    expect(bad.problems).toEqual([
      'providers[0].price.tax: unknown field; expected currency, perHour, machineTypes',
      'providers[0].price.currency: must be an ISO 4217 code (EUR, USD)',
      'providers[0].price.perHour: must be a number, 0 or more (the price of one instance-hour)',
      'providers[0].price.machineTypes.large: must be a number, 0 or more',
      'providers[1].price: give perHour, machineTypes, or both',
      'providers[2].price: the provider is not billed per instance (its profile says billing: none); remove price',
    ]);
  });

  it('loads a file from disk and notices when it changes', async () => {
    const file = join(dir, 'providers.yaml');
    await writeFile(file, 'providers:\n  - name: a\n    type: memory\n');
    const load = await loadProvidersFile(file, registry);
    expect(load.ok).toBe(true);
    let changed = 0;
    const stop = watchProvidersFile(file, () => changed++, 20);
    await new Promise((r) => setTimeout(r, 60));
    await writeFile(
      file,
      'providers:\n  - name: a\n    type: memory\n  - name: b\n    type: memory\n',
    );
    const end = Date.now() + 3000;
    while (changed === 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    stop();
    expect(changed).toBeGreaterThan(0);
    const missing = await loadProvidersFile(join(dir, 'nope.yaml'), registry);
    expect(missing.ok).toBe(false);
  });

  it('sees a change made after the version in use was read and before the watch began', async () => {
    const file = join(dir, 'early.yaml');
    await writeFile(file, 'providers:\n  - name: a\n    type: memory\n');
    const since = await fileStamp(file);
    await writeFile(
      file,
      'providers:\n  - name: a\n    type: memory\n  - name: b\n    type: memory\n',
    );
    let changed = 0;
    const stop = watchProvidersFile(file, () => changed++, 20, since);
    const end = Date.now() + 3000;
    while (changed === 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    // And nothing more while the file stays as it is.
    await new Promise((r) => setTimeout(r, 100));
    stop();
    expect(changed).toBe(1);
    // Without the stamp, the first poll is the baseline: the same change goes unseen.
    let unseen = 0;
    const stopBlind = watchProvidersFile(file, () => unseen++, 20);
    await new Promise((r) => setTimeout(r, 100));
    stopBlind();
    expect(unseen).toBe(0);
  });
});

describe('the built-in local provider as the standalone default', () => {
  const { registry } = testRegistry({ scripted: new ScriptedBackend() });
  const stateFile = join(dir, 'proxies.state.json');

  it('is built in under type local', async () => {
    expect([...builtinProviders().keys()]).toEqual(['local']);
    expect(new ProviderRegistry().types()).toEqual(['local']);
    const load = await parseProvidersConfig(
      'providers:\n  - name: here\n    type: local\n    local: { addressRange: 127.0.9.0/24 }\n',
      new ProviderRegistry(),
    );
    expect(load.ok).toBe(true);
  });

  it('applies when there is no providers file or it lists none, keeping its installation', async () => {
    for (const config of [undefined, { installation: 'site-1', providers: [] as const }] as const) {
      const got = await standaloneProviders(config, registry, stateFile);
      expect(got.installation).toBe(config?.installation ?? 'default');
      expect(got.providers.map((p) => [p.name, p.type, p.moduleType, p.block])).toEqual([
        [DEFAULT_PROVIDER, 'local', 'local', { stateDir: join(dir, 'proxies.state.local') }],
      ]);
    }
    expect(localStateDir('/x/y/state', 'p')).toBe('/x/y/state.p');
  });

  it("keeps a file's providers, giving a local one without stateDir the folder beside the state file", async () => {
    const load = await parseProvidersConfig(
      'installation: lab\nproviders:\n  - name: mem\n    type: memory\n  - name: one\n    type: local\n    local: { zone: z }\n  - name: two\n    type: local\n    local: { stateDir: /srv/two }\n',
      registry,
    );
    if (!load.ok) throw new Error(load.problems.join());
    const got = await standaloneProviders(load.config, registry, stateFile);
    expect(got.installation).toBe('lab');
    expect(got.providers.map((p) => [p.name, p.block])).toEqual([
      ['mem', undefined],
      ['one', { zone: 'z', stateDir: join(dir, 'proxies.state.one') }],
      ['two', { stateDir: '/srv/two' }],
    ]);
  });
});

describe('first-party provider types by their short names', () => {
  it('resolve to the installed packages', async () => {
    const registry = new ProviderRegistry();
    for (const [type, pkg] of Object.entries(FIRST_PARTY_PROVIDERS)) {
      const entry = await registry.resolve(type, dir);
      expect(entry.module.type, pkg).toBe(type);
    }
  });

  it('load a package installed beside the providers file', async () => {
    // Every first-party package is installed beside the operator in this checkout (and found
    // there first), so a third-party name shows the lookup beside the file; the image test
    // shows a first-party one missing.
    const base = await mkdtemp(join(dir, 'beside-'));
    const reference = import.meta.resolve('@proxy-op/providertest/reference');
    const pkg = join(base, 'node_modules', '@acme', 'provider-lab');
    await mkdir(pkg, { recursive: true });
    await writeFile(
      join(pkg, 'package.json'),
      JSON.stringify({
        name: '@acme/provider-lab',
        type: 'module',
        exports: { '.': './index.js' },
      }),
    );
    await writeFile(
      join(pkg, 'index.js'),
      `import { providerModule as m } from ${JSON.stringify(reference)};\nexport const providerModule = { ...m, type: 'lab' };\n`,
    );
    await writeFile(
      join(base, 'providers.yaml'),
      'providers:\n  - name: lab\n    type: "@acme/provider-lab"\n    lab: {}\n',
    );
    const load = await loadProvidersFile(join(base, 'providers.yaml'), new ProviderRegistry());
    expect(
      load.ok ? load.config.providers.map((p) => [p.type, p.moduleType]) : load.problems,
    ).toEqual([['@acme/provider-lab', 'lab']]);
  });
});
