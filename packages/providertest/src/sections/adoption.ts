/**
 * The adoption section of the conformance suite (§2.1): only the caller's
 * own instance is adopted.
 *
 * @module
 */
import {
  type ConformanceOptions,
  counts,
  outcome,
  rejection,
  type TestContext,
  test,
} from '../support.js';

/** Adoption (§2.1): only our own instance is adopted. */
export function describeAdoptionConformance(opts: ConformanceOptions): void {
  const { expect } = opts.vitest;
  opts.vitest.describe('adoption', () => {
    const refuses = (
      what: string,
      plant: (t: TestContext, name: string, uid: string) => Promise<unknown>,
    ) =>
      test(opts, `Create refuses ${what}`, async (t) => {
        const req = t.request();
        await plant(t, req.name, req.uid);
        const before = await counts(t);
        const creating = t.provider.create(req);
        expect(await outcome(creating), `class of the refusal of ${what}`).toBe('Permanent');
        const err = await rejection(creating);
        expect((err as Error).message, 'the refusal names the instance').toContain(req.name);
        const after = await counts(t);
        expect(after.instances, `instances after refusing ${what}`).toBe(before.instances);
        expect(after.secondary, `secondary resources after refusing ${what}`).toBe(
          before.secondary,
        );
      });
    refuses('an instance with another UID', (t, name) =>
      t.harness.plantMarked(name, { uid: 'someone-else', installation: 'default' }),
    );
    refuses('an unmarked instance with the same name', (t, name) => t.harness.plantUnmarked(name));
    refuses("another installation's instance", (t, name, uid) =>
      t.harness.plantMarked(name, { uid, installation: 'other-installation' }),
    );

    test(opts, 'Create adopts our instance with an empty UID', async (t) => {
      const req = t.request();
      const planted = await t.harness.plantMarked(req.name, { uid: '', installation: 'default' });
      const count = await t.harness.instanceCount();
      const adopting = t.provider.create(req);
      expect(await outcome(adopting), 'Create of our instance with an empty UID').toBe('resolved');
      const id = await adopting;
      expect(id, 'the adopted ID').toBe(planted);
      expect(await t.harness.instanceCount(), 'instances after adopting').toBe(count);
      expect((await t.provider.get(id)).id, 'the adopted instance').toBe(id);
    });
  });
}
