/**
 * The Delete section of the conformance suite (§2.3).
 *
 * @module
 */
import { type ConformanceOptions, counts, expectGone, outcome, test, uidOf } from '../support.js';

/** Delete (§2.3): idempotence, nothing left behind, and never someone else's instance. */
export function describeDeleteConformance(opts: ConformanceOptions): void {
  const { expect } = opts.vitest;
  const { profile } = opts;
  opts.vitest.describe('Delete', () => {
    test(opts, 'Delete twice succeeds', async (t) => {
      const id = await t.provider.create(t.request());
      expect(await outcome(t.provider.delete(id)), 'the first Delete').toBe('resolved');
      expect(await outcome(t.provider.delete(id)), 'the second Delete').toBe('resolved');
      await expectGone(t, id);
      expect(await outcome(t.provider.delete(id)), 'a Delete once gone').toBe('resolved');
    });

    test(opts, 'nothing Create made is left once Delete is done', async (t) => {
      const before = await counts(t);
      const id = await t.provider.create(t.request());
      const made = await counts(t);
      expect(made.instances, 'instances after Create').toBe(before.instances + 1);
      if (profile.secondaryResources !== 'none') {
        expect(
          t.harness.secondaryCount,
          'the harness implements secondaryCount (profile.secondaryResources is not none)',
        ).toBeTypeOf('function');
      }
      await t.provider.delete(id);
      if (profile.deleteReturn === 'returns-early') await expectGone(t, id);
      const after = await counts(t);
      expect(after.instances, 'instances once Delete is done').toBe(before.instances);
      expect(after.secondary, 'secondary resources once Delete is done').toBe(before.secondary);
    });

    test(opts, 'Delete leaves alone an instance at the ID that carries no mark', async (t) => {
      const id = await t.provider.create(t.request());
      await t.harness.replaceInstance(id, undefined);
      const before = await t.harness.instanceCount();
      expect(await outcome(t.provider.delete(id)), 'Delete of an unmarked instance').toBe(
        'resolved',
      );
      await t.harness.settle?.();
      expect(await t.harness.instanceCount(), 'instances after deleting an unmarked one').toBe(
        before,
      );
    });

    test(opts, 'Delete leaves alone an instance of another owner', async (t) => {
      const req = t.request();
      const id = await t.provider.create(req);
      await t.provider.delete(id, { uid: 'someone-else' });
      await t.harness.settle?.();
      expect(await uidOf(t, id), 'the instance after a Delete naming another UID').toBe(req.uid);
      await t.provider.delete(id, { uid: req.uid, installation: 'other-installation' });
      await t.harness.settle?.();
      expect(await uidOf(t, id), 'the instance after a Delete naming another installation').toBe(
        req.uid,
      );
      await t.harness.replaceInstance(id, { uid: 'someone-else', installation: 'default' });
      const before = await t.harness.instanceCount();
      await t.provider.delete(id, { uid: req.uid });
      await t.harness.settle?.();
      expect(
        await t.harness.instanceCount(),
        'instances after deleting an ID that another UID took',
      ).toBe(before);
      expect(await uidOf(t, id), 'the instance another UID took').toBe('someone-else');
      await t.provider.delete(id, { uid: 'someone-else', installation: 'default' });
      await expectGone(t, id);
    });
  });
}
