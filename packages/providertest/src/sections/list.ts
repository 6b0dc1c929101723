/**
 * The ListByTag section of the conformance suite (§2.4, §13).
 *
 * @module
 */
import { type ConformanceOptions, required, test } from '../support.js';

/** ListByTag (§2.4, §13): what is listed, installations kept apart, unreachable parts. */
export function describeListConformance(opts: ConformanceOptions): void {
  const { expect } = opts.vitest;
  const { profile } = opts;
  opts.vitest.describe('ListByTag', () => {
    test(opts, 'ListByTag returns created instances with ID, UID and CreatedAt', async (t) => {
      const req = t.request();
      const id = await t.provider.create(req);
      const listed = await t.provider.listByTag();
      const found = listed.filter((i) => i.id === id);
      expect(found, `${id} is listed once`).toHaveLength(1);
      expect(found[0]?.uid, 'the listed UID').toBe(req.uid);
      expect(Number.isNaN(found[0]?.createdAt.getTime()), 'the listed CreatedAt is a date').toBe(
        false,
      );
    });

    test(opts, 'ListByTag excludes unmarked instances and includes an empty UID', async (t) => {
      const mine = await t.provider.create(t.request());
      const unmarked = await t.harness.plantUnmarked(t.request().name);
      const empty = await t.harness.plantMarked(t.request().name, {
        uid: '',
        installation: 'default',
      });
      const listed = await t.provider.listByTag();
      const ids = listed.map((i) => i.id);
      expect(ids, 'the listing holds the created instance').toContain(mine);
      expect(ids, 'the listing leaves out the unmarked instance').not.toContain(unmarked);
      expect(ids, 'the listing holds the marked instance with an empty UID').toContain(empty);
      expect(listed.find((i) => i.id === empty)?.uid, 'the empty UID as listed').toBe('');
      expect(new Set(ids).size, 'every instance listed once').toBe(ids.length);
    });

    test(opts, 'the installation mark keeps two installations apart', async (t) => {
      const a = await t.provider.create(t.request({ installation: 'inst-a' }));
      const b = await t.provider.create(t.request({ installation: 'inst-b' }));
      const ids = async (installation?: string) =>
        (await t.provider.listByTag(installation === undefined ? {} : { installation })).map(
          (i) => i.id,
        );
      const listA = await ids('inst-a');
      const listB = await ids('inst-b');
      expect(listA, 'installation a lists its own').toContain(a);
      expect(listA, "installation a leaves out b's").not.toContain(b);
      expect(listB, 'installation b lists its own').toContain(b);
      expect(listB, "installation b leaves out a's").not.toContain(a);
      const listDefault = await ids();
      expect(listDefault, 'the default installation leaves out a and b').not.toContain(a);
      expect(listDefault, 'the default installation leaves out b').not.toContain(b);
      const legacy = await t.harness.plantMarked(t.request().name, { uid: 'legacy-uid' });
      expect(await ids(), 'a mark without installation belongs to the default').toContain(legacy);
      expect(await ids('inst-a'), 'a mark without installation is not inst-a').not.toContain(
        legacy,
      );
    });

    if (profile.listPartial === 'omit-unreachable') {
      test(opts, 'ListByTag omits an unreachable part and lists the rest', async (t) => {
        const isolate = required(
          t.harness.isolatePart,
          'the harness implements isolatePart (profile.listPartial is omit-unreachable)',
        );
        const id = await t.provider.create(t.request());
        const restore = await isolate.call(t.harness, id);
        try {
          const listed = await t.provider.listByTag();
          expect(
            listed.map((i) => i.id),
            'the listing while its part is unreachable',
          ).not.toContain(id);
        } finally {
          await restore();
        }
        expect(
          (await t.provider.listByTag()).map((i) => i.id),
          'the listing once the part is back',
        ).toContain(id);
      });
    }
  });
}
