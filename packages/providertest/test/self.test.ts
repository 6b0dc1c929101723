// Peer: the reference provider built with deliberate flaws; the suite runs in-process
// through a collecting runner (test/collect.ts), as Level's self-tests do.
import { describe, expect, it } from 'vitest';
import { describeProviderConformance } from '../src/index.js';
import { createReferenceFixture, FLAWS, type Flaw, memoryProfile } from '../src/reference/index.js';
import { collect } from './collect.js';

/** The test(s) each flaw must fail. */
const TARGETS: Record<Flaw, readonly string[]> = {
  'repeat-create-duplicates': ['repeat Create returns the same ID and creates nothing'],
  'running-without-ip': ['Running requires an IP'],
  'not-found-while-locked': [
    'Get during a backend lock or async operation is Transient, never NotFound',
  ],
  'ignores-signal': [
    'a cancelled signal returns promptly from create',
    'a cancelled signal returns promptly from get',
    'a cancelled signal returns promptly from delete',
    'a cancelled signal returns promptly from listByTag',
    'a cancelled signal returns promptly from create mid-operation',
    'a cancelled signal returns promptly from delete mid-operation',
  ],
  'logs-cloud-init': ['cloud-init never reaches logs, spans or errors'],
  'adopts-foreign-instances': [
    'Create refuses an instance with another UID',
    'Create refuses an unmarked instance with the same name',
    "Create refuses another installation's instance",
  ],
  'lists-other-installations': ['the installation mark keeps two installations apart'],
  'unknown-state-not-stopped': ['an unknown backend state maps to Stopped'],
  'reads-mark-from-memory': ['UID and CreatedAt are read back from the backend'],
  'delete-not-idempotent': ['Delete twice succeeds'],
  'leaks-credential': ['the credential never reaches logs, spans or errors'],
  'no-child-spans': ['backend calls make child spans under the operation span'],
  'lax-id-parsing': ['malformed IDs are Permanent from Get and Delete'],
  'placement-checked-late': ['Create checks placement before any backend call'],
  'list-drops-empty-uid': ['ListByTag excludes unmarked instances and includes an empty UID'],
  'not-found-during-delete': ['Get during an in-progress Delete still returns the instance'],
  'never-started-is-stopped': ['a never-started instance is never Stopped'],
  'check-unordered': ['the Checker answers once per target, in config order'],
  'check-ignores-signal': ['the Checker answers Timeout promptly when its signal fires'],
  'wrong-provider-name': ['errors carry the configured provider name and the operation'],
};

function suite(flaw?: Flaw) {
  return collect((vitest) =>
    describeProviderConformance({
      vitest,
      factory: (deps) => createReferenceFixture(deps, { flaw }),
      profile: memoryProfile,
      checker: true,
      promptMs: 300,
      timeoutMs: 10_000,
    }),
  );
}

describe('conformance self-test', () => {
  it('every flaw has a target, and every target names a registered test', () => {
    const names = suite().map((t) => t.name);
    expect(Object.keys(TARGETS).sort()).toEqual(Object.keys(FLAWS).sort());
    for (const targets of Object.values(TARGETS)) {
      for (const target of targets) {
        expect(
          names.filter((n) => n.endsWith(` > ${target}`)),
          target,
        ).toHaveLength(1);
      }
    }
  });

  it('the reference provider passes every test through the collecting runner', async () => {
    const failed: string[] = [];
    for (const t of suite()) {
      const r = await t.run();
      if (!r.ok) failed.push(`${t.name}: ${String(r.error)}`);
    }
    expect(failed).toEqual([]);
  });

  for (const flaw of Object.keys(FLAWS) as Flaw[]) {
    it(`the flaw "${flaw}" (${FLAWS[flaw]}) fails the test aimed at it`, async () => {
      const tests = suite(flaw).filter((t) =>
        TARGETS[flaw].some((target) => t.name.endsWith(` > ${target}`)),
      );
      expect(tests).toHaveLength(TARGETS[flaw].length);
      for (const t of tests) {
        const r = await t.run();
        expect(r.ok, `${t.name} should fail with the flaw ${flaw}`).toBe(false);
        if (!r.ok)
          expect(String(r.error), 'it fails on a check, not by hanging').not.toMatch(
            /timed out after/,
          );
      }
    });
  }
});
