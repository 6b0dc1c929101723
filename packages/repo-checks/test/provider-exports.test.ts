// Peer: the built packages (their dist) and the repo's READMEs. Every provider package has the
// same public face: the shared set of names below, and beyond it only what its README's
// `## API` table names as that provider's own API.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../..', import.meta.url));

/** The provider packages and the name each puts in its `<Name>Reason`, `<Name>Config`, ... */
const PROVIDERS = {
  'provider-proxmox': 'Proxmox',
  'provider-kubernetes': 'Kubernetes',
  'provider-gcp': 'Gcp',
  'provider-hetzner': 'Hetzner',
  'provider-aws': 'Aws',
  'provider-local': 'Local',
  'provider-kvm': 'Kvm',
  'provider-kvm2': 'Kvm2',
} as const;

/** What every provider package exports, as values and as types. */
function sharedSet(name: string): { values: string[]; types: string[] } {
  return {
    values: [
      'default',
      'providerModule',
      'profile',
      'configSchema',
      'classify',
      'CONFIG_DEFAULTS',
      `${name}Reason`,
      'formatId',
      'parseId',
    ],
    types: [`${name}Config`, `${name}Deps`, `${name}Id`],
  };
}

/**
 * Every name `dist/index.d.ts` exports: the lists of `export { ... }` and
 * `export type { ... }` (the name after `as` where there is one) and
 * `export default`. An `export *` hides what it exports, so it is refused.
 */
function declaredExports(dts: string): string[] {
  if (/^export \*/m.test(dts)) throw new Error('index.d.ts uses export *: name every export');
  const names = new Set<string>();
  for (const m of dts.matchAll(/^export (?:type )?\{([^}]*)\}/gm)) {
    for (const item of (m[1] ?? '').split(',')) {
      const parts = item
        .trim()
        .replace(/^type\s+/, '')
        .split(/\s+as\s+/);
      const exported = (parts[1] ?? parts[0] ?? '').trim();
      if (exported !== '') names.add(exported);
    }
  }
  for (const m of dts.matchAll(/^export declare (?:const|function|class|enum) (\w+)/gm)) {
    names.add(m[1] as string);
  }
  for (const m of dts.matchAll(/^export (?:interface|type) (\w+)/gm)) names.add(m[1] as string);
  if (/^export default /m.test(dts)) names.add('default');
  return [...names].sort();
}

/** The names in backticks in the README's `## API` section. */
function apiSection(readme: string): Set<string> {
  const start = readme.search(/^## API$/m);
  if (start < 0) return new Set();
  const rest = readme.slice(start + '## API'.length);
  const end = rest.search(/^## /m);
  const section = end < 0 ? rest : rest.slice(0, end);
  return new Set([...section.matchAll(/`([A-Za-z_$][\w$]*)`/g)].map((m) => m[1] as string));
}

describe('the exports check of every provider package', () => {
  const rows: string[] = [];

  for (const [dir, name] of Object.entries(PROVIDERS)) {
    it(`@proxy-op/${dir} exports the shared set, and only README-documented names beside it`, async () => {
      const pkg = join(root, 'packages', dir);
      const mod = (await import(`@proxy-op/${dir}`)) as Record<string, unknown>;
      const declared = declaredExports(readFileSync(join(pkg, 'dist', 'index.d.ts'), 'utf8'));
      const values = Object.keys(mod).sort();
      const shared = sharedSet(name);

      for (const v of shared.values) expect(values, `${dir} exports the value ${v}`).toContain(v);
      for (const t of shared.types) expect(declared, `${dir} exports the type ${t}`).toContain(t);
      expect(mod.default, `${dir}: the default export is providerModule`).toBe(mod.providerModule);
      for (const frozen of ['providerModule', 'profile', 'CONFIG_DEFAULTS', `${name}Reason`]) {
        expect(Object.isFrozen(mod[frozen]), `${dir}: ${frozen} is frozen`).toBe(true);
      }
      expect((mod.providerModule as { type?: unknown }).type).toBeTypeOf('string');

      const own = declared.filter((n) => !shared.values.includes(n) && !shared.types.includes(n));
      const documented = apiSection(readFileSync(join(pkg, 'README.md'), 'utf8'));
      const undocumented = own.filter((n) => !documented.has(n));
      expect(
        undocumented,
        `${dir}: exports beyond the shared set must be named in its README's "## API" table as its own API`,
      ).toEqual([]);
      rows.push(
        `${dir}: ${shared.values.length + shared.types.length} shared, ${own.length} own (${own.join(', ')})`,
      );
    });
  }

  it('prints the table of every provider package', () => {
    // The other tests of this file fill `rows`; a missing row means one of them failed.
    console.log(['provider exports:', ...rows.map((r) => `  ${r}`)].join('\n'));
    expect(rows).toHaveLength(Object.keys(PROVIDERS).length);
  });
});
