/**
 * The Get section of the conformance suite (§2.2).
 *
 * @module
 */
import { isIPv4 } from 'node:net';
import {
  type ConformanceOptions,
  classOf,
  expectGone,
  outcome,
  rejection,
  required,
  settleWithin,
  test,
  uidOf,
  within,
} from '../support.js';

/** Get (§2.2): read-back, states, IPs, locks, deletes in progress, malformed IDs, lost marks. */
export function describeGetConformance(opts: ConformanceOptions): void {
  const { expect } = opts.vitest;
  const { profile } = opts;
  opts.vitest.describe('Get', () => {
    test(opts, 'Get after Delete is NotFound', async (t) => {
      const id = await t.provider.create(t.request());
      await t.provider.delete(id);
      await expectGone(t, id);
    });

    test(opts, 'malformed IDs are Permanent from Get and Delete', async (t) => {
      const id = await t.provider.create(t.request());
      const malformed = [
        '',
        '/',
        'x',
        '../../etc/passwd',
        `${id}/extra`,
        `extra/${id}`,
        `${id}/`,
        `/${id}`,
        id.replace(/[^/]+$/, ''),
        id.toUpperCase(),
        // The last part is the instance name, a lowercase DNS label: these are not.
        id.replace(/([^/]+)$/, '-$1'),
        id.replace(/([^/]+)$/, '$1-'),
        id.replace(/([^/]+)$/, '$1_x'),
      ];
      for (const bad of malformed) {
        const before = t.harness.backendCalls();
        const what = JSON.stringify(bad);
        expect(classOf(await rejection(t.provider.get(bad))), `get(${what})`).toBe('Permanent');
        expect(classOf(await rejection(t.provider.delete(bad))), `delete(${what})`).toBe(
          'Permanent',
        );
        expect(t.harness.backendCalls(), `backend calls for ${what}`).toBe(before);
      }
      expect((await t.provider.get(id)).id, 'the well-formed ID still works').toBe(id);
    });

    test(opts, 'an unknown backend state maps to Stopped', async (t) => {
      const id = await t.provider.create(t.request());
      await t.harness.setState(id, 'unknown');
      const inst = await t.provider.get(id);
      expect(inst.state, 'the state of an unknown backend state').toBe('Stopped');
      expect(inst.ip, 'the IP of a Stopped instance').toBeUndefined();
      await t.harness.setState(id, 'stopped');
      expect((await t.provider.get(id)).state, 'the state of a stopped instance').toBe('Stopped');
      expect(await outcome(t.provider.delete(id)), 'Delete of a stopped instance').toBe('resolved');
      await expectGone(t, id);
    });

    test(opts, 'Running requires an IP', async (t) => {
      const id = await t.provider.create(t.request());
      await t.harness.setRunning(id, undefined);
      const without = await t.provider.get(id);
      expect(without.state, 'the state of a running instance without an address').not.toBe(
        'Running',
      );
      expect(without.ip, 'the IP of an instance without an address').toBeUndefined();
      await t.harness.setRunning(id, '10.20.30.40');
      const withIp = await t.provider.get(id);
      expect(withIp.state, 'the state once it has an address').toBe('Running');
      expect(withIp.ip, 'the IP once it has an address').toBe('10.20.30.40');
      expect(isIPv4(withIp.ip ?? ''), 'a Running instance has an IPv4 address').toBe(true);
    });

    test(
      opts,
      'a running instance without an address is Provisioning, never Running',
      async (t) => {
        // Whatever the profile: Stopped would have the operator replace an
        // instance that is only late with its address, Running would give out none.
        const id = await t.provider.create(t.request());
        await t.harness.setRunning(id, undefined);
        const before = await t.provider.get(id);
        expect(before.state, 'the state of a running instance without an address yet').toBe(
          'Provisioning',
        );
        expect(before.ip, 'the IP of a running instance without an address yet').toBeUndefined();
        await t.harness.setRunning(id, '10.20.30.40');
        expect((await t.provider.get(id)).state, 'the state once it has an address').toBe(
          'Running',
        );
        await t.harness.setRunning(id, undefined);
        const after = await t.provider.get(id);
        expect(after.state, 'the state of a running instance whose address is gone').toBe(
          'Provisioning',
        );
        expect(after.ip, 'the IP of a running instance whose address is gone').toBeUndefined();
      },
    );

    test(opts, 'Get reads an IP that changed after Running', async (t) => {
      const id = await t.provider.create(t.request());
      await t.harness.setRunning(id, '10.20.30.40');
      expect((await t.provider.get(id)).ip, 'the first IP').toBe('10.20.30.40');
      await t.harness.setRunning(id, '10.20.30.41');
      const inst = await t.provider.get(id);
      expect(inst.ip, 'the IP after it changed').toBe('10.20.30.41');
      expect(inst.state, 'the state after the IP changed').toBe('Running');
    });

    test(opts, 'UID and CreatedAt are read back from the backend', async (t) => {
      const req = t.request();
      const id = await t.provider.create(req);
      const first = await t.provider.get(id);
      expect(first.uid, 'the UID').toBe(req.uid);
      expect(first.createdAt, 'CreatedAt').toBeInstanceOf(Date);
      expect(Number.isNaN(first.createdAt.getTime()), 'CreatedAt is a date').toBe(false);
      const when = new Date('2020-01-02T03:04:05Z');
      await t.harness.rewriteMark(id, {
        uid: 'rewritten-behind-the-providers-back',
        createdAt: when,
      });
      const again = await t.provider.get(id);
      expect(again.uid, 'the UID after the mark was rewritten').toBe(
        'rewritten-behind-the-providers-back',
      );
      if (profile.createdAt === 'written-at-create') {
        expect(again.createdAt.getTime(), 'CreatedAt after the mark was rewritten').toBe(
          when.getTime(),
        );
      }
    });

    test(opts, 'Get of an ID whose instance is no longer ours', async (t) => {
      const req = t.request();
      const id = await t.provider.create(req);
      await t.harness.replaceInstance(id, undefined);
      expect(await outcome(t.provider.get(id)), 'Get of an ID whose instance carries no mark').toBe(
        'NotFound',
      );
      await t.harness.replaceInstance(id, { uid: 'someone-else', installation: 'default' });
      expect(await uidOf(t, id), 'Get of an ID that an instance of another UID took').toBe(
        'someone-else',
      );
    });

    if (profile.asyncOps.length > 0) {
      test(
        opts,
        'Get during a backend lock or async operation is Transient, never NotFound',
        async (t) => {
          const id = await t.provider.create(t.request());
          const hold = required(
            t.harness.holdLock,
            'the harness implements holdLock (profile.asyncOps is not empty)',
          );
          const release = await hold.call(t.harness, id);
          let deleted = '';
          try {
            expect(classOf(await rejection(t.provider.get(id))), 'Get while locked').toBe(
              'Transient',
            );
            deleted = await outcome(t.provider.delete(id));
            expect(['Transient', 'resolved'], 'Delete while locked').toContain(deleted);
          } finally {
            await release();
          }
          if (deleted === 'resolved') {
            // A Delete that succeeded during the lock must really delete, not leave it behind.
            await expectGone(t, id);
            return;
          }
          const after = await settleWithin(t.provider.get(id), 10_000);
          expect(after.state, 'Get once the lock is released (the harness releases it)').toBe(
            'resolved',
          );
        },
      );
    }

    test(opts, 'Get during an in-progress Delete still returns the instance', async (t) => {
      const id = await t.provider.create(t.request());
      const gate = t.harness.holdNextDelete(id);
      const deleting = t.provider.delete(id);
      deleting.catch(() => {});
      try {
        expect(await within(gate.reached, 10_000), 'the delete reached the held step').toBe(true);
        expect(await outcome(t.provider.get(id)), 'Get during the Delete').toBe('resolved');
      } finally {
        gate.release();
      }
      await deleting;
      await expectGone(t, id);
    });
  });
}
