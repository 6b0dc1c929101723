/**
 * The section on where an instance runs and what the backend may do to it
 * (§2, §4.21 to §4.23): its location, reported the same by Get and
 * ListByTag, and at least the region where the backend bills; an instance
 * the backend took back, read as Preempted through both and deletable;
 * the IPv6 range of a Running instance where the profile promises one.
 *
 * @module
 */
import { isIPv6 } from 'node:net';
import {
  billingOf,
  type Instance,
  ipv6EgressOf,
  locationProblems,
  preemptionOf,
} from '@proxy-op/contract';
import { type ConformanceOptions, expectGone, outcome, required, test } from '../support.js';

/** The listed entry of `id`, failing when the listing does not hold it once. */
async function listed(
  opts: ConformanceOptions,
  list: Promise<Instance[]>,
  id: string,
): Promise<Instance> {
  const found = (await list).filter((i) => i.id === id);
  opts.vitest.expect(found, `${id} is listed once`).toHaveLength(1);
  return found[0] as Instance;
}

/** What is wrong with an IPv6 range: a CIDR with an IPv6 address and a prefix length of 0 to 128. */
export function ipv6RangeProblem(range: unknown): string | undefined {
  if (typeof range !== 'string') return `${JSON.stringify(range)} is not a string`;
  const slash = range.indexOf('/');
  const addr = slash < 0 ? '' : range.slice(0, slash);
  const bits = slash < 0 ? '' : range.slice(slash + 1);
  if (!isIPv6(addr) || !/^(0|[1-9][0-9]{0,2})$/.test(bits) || Number(bits) > 128) {
    return `"${range}" is not an IPv6 CIDR (2001:db8:1::/64)`;
  }
  return undefined;
}

/** Location, preemption and IPv6 ranges (§2, §4.21 to §4.23). */
export function describeWhereConformance(opts: ConformanceOptions): void {
  const { expect } = opts.vitest;
  const billed = billingOf(opts.profile) !== 'none';
  opts.vitest.describe('Location, preemption and IPv6 ranges', () => {
    test(opts, 'Get and ListByTag report the same well-formed location', async (t) => {
      const id = await t.provider.create(t.request());
      await t.harness.setRunning(id, '10.20.30.40');
      const got = await t.provider.get(id);
      expect(locationProblems(got.location, 'get().location'), 'the location from Get').toEqual([]);
      const entry = await listed(opts, t.provider.listByTag(), id);
      expect(
        locationProblems(entry.location, 'listByTag().location'),
        'the location from ListByTag',
      ).toEqual([]);
      if (entry.location !== undefined) {
        expect(entry.location, 'the listed location is the one Get reports').toEqual(got.location);
      }
      if (billed) {
        // A backend that bills is somewhere: cost and coverage are read by region.
        expect(got.location?.region, 'the region from Get (the profile declares billing)').toEqual(
          expect.any(String),
        );
        expect(
          entry.location?.region,
          'the region from ListByTag (the profile declares billing)',
        ).toEqual(got.location?.region);
      }
    });

    if (preemptionOf(opts.profile) === 'possible') {
      test(opts, 'an instance the backend took back reads as Preempted', async (t) => {
        const preempt = required(
          t.harness.preempt,
          'the harness implements preempt (profile.preemption is possible)',
        );
        const id = await t.provider.create(t.request());
        await t.harness.setRunning(id, '10.20.30.40');
        expect((await t.provider.get(id)).state, 'the state before').toBe('Running');
        await preempt.call(t.harness, id);
        const got = await t.provider.get(id);
        expect(got.state, 'the state from Get once taken back').toBe('Preempted');
        expect(got.ip, 'the IP of a Preempted instance').toBeUndefined();
        const entry = await listed(opts, t.provider.listByTag(), id);
        expect(entry.state, 'the state from ListByTag once taken back').toBe('Preempted');
        expect(await outcome(t.provider.delete(id)), 'Delete of a Preempted instance').toBe(
          'resolved',
        );
        await expectGone(t, id);
      });
    } else {
      test(opts, 'a stopped instance is never Preempted (the profile says never)', async (t) => {
        const id = await t.provider.create(t.request());
        await t.harness.setState(id, 'stopped');
        expect((await t.provider.get(id)).state, 'the state of a stopped instance').toBe('Stopped');
        const entry = await listed(opts, t.provider.listByTag(), id);
        expect(entry.state, 'the listed state of a stopped instance').not.toBe('Preempted');
      });
    }

    if (ipv6EgressOf(opts.profile) === 'range') {
      test(opts, 'a Running instance reports the IPv6 range it sends from', async (t) => {
        const id = await t.provider.create(t.request());
        await t.harness.setRunning(id, '10.20.30.40');
        const got = await t.provider.get(id);
        expect(got.state, 'the state').toBe('Running');
        expect(ipv6RangeProblem(got.ipv6Range), 'the IPv6 range of a Running instance').toBe(
          undefined,
        );
        await t.harness.setState(id, 'stopped');
        expect(
          (await t.provider.get(id)).ipv6Range,
          'the IPv6 range of a Stopped instance',
        ).toBeUndefined();
      });
    } else {
      test(opts, 'no instance reports an IPv6 range (the profile says none)', async (t) => {
        const id = await t.provider.create(t.request());
        await t.harness.setRunning(id, '10.20.30.40');
        expect((await t.provider.get(id)).ipv6Range, 'the IPv6 range').toBeUndefined();
      });
    }
  });
}
