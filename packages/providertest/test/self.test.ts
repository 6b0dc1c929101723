// Peer: the reference provider and deliberately broken variants of it (test/flaws.ts,
// test/flaws-credentials.ts and test/flaws-where.ts), under the reference profile and a looser
// one; the suite runs in-process through a collecting runner (test/collect.ts), as Level's self-tests do.
import type { Profile } from '@proxy-op/contract';
import { describe, expect, it } from 'vitest';
import { describeProviderConformance } from '../src/index.js';
import { createReferenceFixture } from '../src/reference/index.js';
import { type Collected, collect } from './collect.js';
import { type Flaw, FLAWS as GENERAL_FLAWS, PROFILES, type ProfileName } from './flaws.js';
import { CREDENTIAL_FLAWS } from './flaws-credentials.js';
import { WHERE_FLAWS } from './flaws-where.js';

const FLAWS: Record<string, Flaw> = { ...GENERAL_FLAWS, ...CREDENTIAL_FLAWS, ...WHERE_FLAWS };

function suite(profile: ProfileName | Profile, flaw?: Flaw): Collected[] {
  return collect((vitest) =>
    describeProviderConformance({
      vitest,
      factory: async (deps) => {
        const fx = await createReferenceFixture(deps, { module: flaw?.module });
        return {
          ...fx,
          provider: flaw?.wrap === undefined ? fx.provider : flaw.wrap(fx.provider, fx.backend),
          harness: flaw?.harness === undefined ? fx.harness : flaw.harness(fx.harness),
        };
      },
      profile: typeof profile === 'string' ? PROFILES[profile] : profile,
      checker: true,
      promptMs: 300,
      timeoutMs: 10_000,
      goneWithinMs: 1_500,
    }),
  );
}

const profiles = Object.keys(PROFILES) as ProfileName[];
const shortName = (full: string) => full.split(' > ').pop() ?? full;
const appliesTo = (flaw: Flaw, profile: ProfileName) => flaw.profiles?.includes(profile) ?? true;

describe('conformance self-test', () => {
  for (const profile of profiles) {
    describe(`under the ${profile} profile`, () => {
      it('the reference provider passes every test', async () => {
        const failed: string[] = [];
        for (const t of suite(profile)) {
          const r = await t.run();
          if (!r.ok) failed.push(`${t.name}: ${String(r.error)}`);
        }
        expect(failed).toEqual([]);
      });

      it('every registered test has a flaw aimed at it, and every aim names a registered test', () => {
        const names = suite(profile).map((t) => shortName(t.name));
        const aimed = new Set(
          Object.values(FLAWS)
            .filter((f) => appliesTo(f, profile))
            .flatMap((f) => Object.keys(f.fails)),
        );
        expect(names.filter((n) => !aimed.has(n))).toEqual([]);
        expect([...aimed].filter((a) => !names.includes(a))).toEqual([]);
        expect(new Set(names).size).toBe(names.length);
      });

      for (const [name, flaw] of Object.entries(FLAWS)) {
        if (!appliesTo(flaw, profile)) continue;
        it(`the flaw "${name}" (${flaw.about}) fails the checks aimed at it`, async () => {
          const tests = suite(profile, flaw).filter((t) => shortName(t.name) in flaw.fails);
          expect(tests.map((t) => shortName(t.name)).sort()).toEqual(
            Object.keys(flaw.fails).sort(),
          );
          for (const t of tests) {
            const r = await t.run();
            expect(r.ok, `${t.name} should fail with the flaw ${name}`).toBe(false);
            if (!r.ok) {
              const message = r.error instanceof Error ? r.error.message : String(r.error);
              expect(message, `${t.name}: the failing check`).toMatch(
                flaw.fails[shortName(t.name)] as RegExp,
              );
            }
          }
        });
      }
    });
  }
});

describe('conformance self-test, by credential rotation', () => {
  const section = (tests: Collected[]) =>
    tests.filter((t) => t.name.includes(' > proxy credentials > ')).map((t) => shortName(t.name));
  it('registers the credentials section for in-place rotation', () => {
    expect(section(suite('reference')).length).toBeGreaterThan(5);
  });
  for (const credentialRotation of ['replace', undefined] as const) {
    it(`registers none of it for ${credentialRotation ?? 'a profile that leaves the axis out'}`, () => {
      const { credentialRotation: _inPlace, ...rest } = PROFILES.reference;
      const profile: Profile =
        credentialRotation === undefined ? rest : { ...rest, credentialRotation };
      expect(section(suite(profile))).toEqual([]);
    });
  }
});
