/**
 * The Create section of the conformance suite (§2.1).
 *
 * @module
 */
import { isIPv4 } from 'node:net';
import type { Placement, Provider } from '@proxy-op/contract';
import {
  abortWhileBlocked,
  type ConformanceOptions,
  classOf,
  collect,
  counts,
  everythingIn,
  expectGone,
  leakedIn,
  outcome,
  rejection,
  required,
  settleWithin,
  type TestContext,
  test,
  uidOf,
  within,
} from '../support.js';

const CLOUD_INIT_SECRET = 'CLOUDINIT-SENTINEL-5b1e-never-log-me';
const SENTINEL_CLOUD_INIT = `#cloud-config\n# ${CLOUD_INIT_SECRET}\nruncmd: [true]\n`;

/**
 * Create (§2.1): idempotence, placement checked before any backend call
 * (under each zone configuration the harness offers), what Get sees right
 * after Create, deterministic IDs, the creation time,
 * quota, never-started instances, and cloud-init kept out of every log,
 * span and error.
 */
export function describeCreateConformance(opts: ConformanceOptions): void {
  const { expect } = opts.vitest;
  const { profile } = opts;
  opts.vitest.describe('Create', () => {
    test(opts, 'repeat Create returns the same ID and creates nothing', async (t) => {
      const req = t.request();
      const id = await t.provider.create(req);
      const before = await counts(t);
      expect(await t.provider.create(req), 'the repeat returns the same ID').toBe(id);
      const after = await counts(t);
      expect(after.instances, 'instances after the repeat').toBe(before.instances);
      expect(after.secondary, 'secondary resources after the repeat').toBe(before.secondary);
      expect((await t.provider.get(id)).uid, 'the UID of the instance').toBe(req.uid);
    });

    /** Each placement refused as Permanent, naming its field, before any backend call. */
    const expectRefused = async (
      t: TestContext,
      provider: Provider,
      refused: readonly { readonly placement: Placement; readonly field: string }[],
      under = '',
    ) => {
      for (const { placement, field } of refused) {
        const what = `${JSON.stringify(placement)}${under}`;
        const before = t.harness.backendCalls();
        const err = await rejection(provider.create(t.request({ placement })));
        expect(classOf(err), `class of the refusal of ${what}`).toBe('Permanent');
        expect((err as Error).message, `the refusal of ${what} names ${field}`).toContain(field);
        expect(t.harness.backendCalls(), `backend calls for ${what}`).toBe(before);
      }
    };

    test(opts, 'Create checks placement before any backend call', async (t) => {
      expect(
        t.harness.invalidPlacements.length,
        'the harness lists invalid placements',
      ).toBeGreaterThan(0);
      await expectRefused(t, t.provider, t.harness.invalidPlacements);
      const before = t.harness.backendCalls();
      await t.provider.create(t.request());
      expect(
        t.harness.backendCalls(),
        'backend calls of a valid Create (the harness must count them, or the checks above prove nothing)',
      ).toBeGreaterThan(before);
    });

    test(opts, 'placement follows the zones the provider is configured with', async (t) => {
      for (const config of t.harness.zoneConfigurations ?? []) {
        const withZones = required(
          t.harness.withZones,
          'the harness implements withZones (it lists zoneConfigurations)',
        );
        const provider = await withZones.call(t.harness, config.zones);
        const under = ` with the zones ${JSON.stringify(config.zones)}`;
        await expectRefused(t, provider, config.refused, under);
        for (const placement of config.accepted) {
          const what = `${JSON.stringify(placement)}${under}`;
          const req = t.request({ placement });
          const made = await settleWithin(provider.create(req), 10_000);
          expect(
            made.state === 'rejected' ? `rejected: ${classOf(made.error)}` : made.state,
            `Create of ${what}`,
          ).toBe('resolved');
          const id = made.state === 'resolved' ? made.value : '';
          const uid = await provider.get(id).then(
            (inst) => inst.uid,
            (err: unknown) => `rejected: ${classOf(err)}`,
          );
          expect(uid, `the UID of the instance of ${what}`).toBe(req.uid);
          expect(await outcome(provider.delete(id)), `Delete of the instance of ${what}`).toBe(
            'resolved',
          );
        }
      }
    });

    test(opts, 'the shortest and the longest names work end to end', async (t) => {
      const baseline = await counts(t);
      // A letter first and last: some backends (Compute Engine) refuse a digit at either end.
      const long = t.request().name;
      for (const name of [long.slice(0, 1), long.padEnd(63, 'x')]) {
        const req = t.request({ name });
        const id = await t.provider.create(req);
        expect(await uidOf(t, id), `the UID of the instance named ${name}`).toBe(req.uid);
        expect(
          (await t.provider.listByTag()).map((i) => i.id),
          `the listing holds ${name}`,
        ).toContain(id);
        expect(await outcome(t.provider.delete(id)), `Delete of ${name}`).toBe('resolved');
        await expectGone(t, id);
      }
      const after = await counts(t);
      expect(after.instances, 'instances left after the shortest and longest names').toBe(
        baseline.instances,
      );
      expect(after.secondary, 'secondary resources left after them').toBe(baseline.secondary);
    });

    test(
      opts,
      'two Creates of one request make one instance, and a Delete waits for them',
      async (t) => {
        const req = t.request();
        const id = await t.provider.create(req);
        await t.provider.delete(id);
        await expectGone(t, id);
        const before = await counts(t);
        const gate = t.harness.blockCalls(0);
        const first = t.provider.create(req);
        first.catch(() => {});
        let second: Promise<string> = Promise.resolve('');
        let deleting: Promise<void> = Promise.resolve();
        try {
          expect(await within(gate.reached, 10_000), 'the first Create reached the backend').toBe(
            true,
          );
          second = t.provider.create(req);
          second.catch(() => {});
          deleting = t.provider.delete(id);
          deleting.catch(() => {});
          await new Promise((r) => setTimeout(r, 50));
        } finally {
          gate.release();
        }
        expect(await outcome(first), 'the first Create').toBe('resolved');
        expect(await outcome(second), 'the second Create').toBe('resolved');
        expect(await second, 'the ID of the second Create').toBe(id);
        expect(await outcome(deleting), 'the Delete issued while they ran').toBe('resolved');
        await expectGone(t, id);
        const after = await counts(t);
        expect(after.instances, 'instances after two Creates and a Delete').toBe(before.instances);
        expect(after.secondary, 'secondary resources after two Creates and a Delete').toBe(
          before.secondary,
        );
      },
    );

    test(opts, 'Get right after Create answers with the instance', async (t) => {
      const id = await t.provider.create(t.request());
      const got = await settleWithin(t.provider.get(id), 10_000);
      if (got.state === 'rejected') {
        expect(classOf(got.error), 'Get right after Create (never NotFound)').not.toBe('NotFound');
      }
      expect(got.state, 'Get right after Create answers').toBe('resolved');
      const inst = got.state === 'resolved' ? got.value : undefined;
      expect(['Provisioning', 'Running'], 'the state right after Create').toContain(inst?.state);
      if (profile.readiness === 'immediate') {
        expect(inst?.state, 'an immediate-readiness instance right after Create').toBe('Running');
        expect(isIPv4(inst?.ip ?? ''), 'its IPv4 address').toBe(true);
      } else {
        await t.harness.setRunning(id, '10.20.30.40');
        const later = await t.provider.get(id);
        expect(later.state, 'the state once the instance runs with an address').toBe('Running');
      }
    });

    if (profile.createReturn === 'submit') {
      test(
        opts,
        'a Create the backend accepted and then failed is reported by Get, not NotFound',
        async (t) => {
          const fail = required(
            t.harness.failNextCreateLater,
            'the harness implements failNextCreateLater (profile.createReturn is submit)',
          );
          await fail.call(t.harness);
          const id = await t.provider.create(t.request());
          // While the backend works on it, Get may answer Provisioning or Transient; then the
          // failure: its class (Permanent, QuotaExceeded), or the instance Terminated or Stopped.
          const look = async () => {
            try {
              const inst = await t.provider.get(id);
              return inst.state === 'Provisioning' || inst.state === 'Running'
                ? 'in progress'
                : `instance ${inst.state}`;
            } catch (err) {
              return classOf(err) === 'Transient' ? 'in progress' : classOf(err);
            }
          };
          const deadline = Date.now() + t.goneWithinMs;
          let seen = await look();
          while (seen === 'in progress' && Date.now() < deadline) {
            await t.harness.settle?.();
            await new Promise((r) => setTimeout(r, 100));
            seen = await look();
          }
          expect(seen, 'Get of a Create that failed after it was accepted').not.toBe('NotFound');
          expect(
            ['Permanent', 'QuotaExceeded', 'instance Terminated', 'instance Stopped'],
            'what Get reports for it',
          ).toContain(seen);
          expect(await outcome(t.provider.delete(id)), 'Delete of the failed instance').toBe(
            'resolved',
          );
          await expectGone(t, id);
        },
      );
    }

    test(opts, 'the same request gets the same ID after Delete', async (t) => {
      const req = t.request();
      const id = await t.provider.create(req);
      await t.provider.delete(id);
      await expectGone(t, id);
      expect(await t.provider.create(req), 'the ID of the same request after Delete').toBe(id);
      if (profile.primaryKey === 'name-is-key') {
        await t.provider.delete(id);
        await expectGone(t, id);
        const other = await t.provider.create({ ...req, uid: `${req.uid}-2` });
        expect(other, 'a name-is-key ID for the same name and another UID').toBe(id);
      }
    });

    test(opts, 'CreatedAt is when Create ran', async (t) => {
      const slack = profile.createdAt === 'backend-timestamp' ? 600_000 : 1_000;
      const t0 = Math.floor(Date.now() / 1000) * 1000 - slack;
      const id = await t.provider.create(t.request());
      const t1 = Date.now() + slack;
      const at = (await t.provider.get(id)).createdAt.getTime();
      expect(at, `CreatedAt (${profile.createdAt}) is not before Create`).toBeGreaterThanOrEqual(
        t0,
      );
      expect(at, `CreatedAt (${profile.createdAt}) is not after Create`).toBeLessThanOrEqual(t1);
    });

    if (profile.quota === 'detected') {
      test(opts, 'Create without capacity is QuotaExceeded and creates nothing', async (t) => {
        const exhaust = required(
          t.harness.exhaustCapacity,
          'the harness implements exhaustCapacity (profile.quota is detected)',
        );
        await t.provider.create(t.request());
        await exhaust.call(t.harness);
        const before = await counts(t);
        const err = await rejection(t.provider.create(t.request()));
        expect(classOf(err), 'class of a Create without capacity').toBe('QuotaExceeded');
        const after = await counts(t);
        expect(after.instances, 'instances after a Create without capacity').toBe(before.instances);
        expect(after.secondary, 'secondary resources after a Create without capacity').toBe(
          before.secondary,
        );
      });
    }

    test(opts, 'a never-started instance is never Stopped', async (t) => {
      const id = await t.harness.plantNeverStarted(t.request());
      const got = await settleWithin(t.provider.get(id), 10_000);
      expect(
        got.state,
        'Get of a planted never-started instance answers (the harness must plant it readable, not locked)',
      ).toBe('resolved');
      const state = got.state === 'resolved' ? got.value.state : undefined;
      expect(state, 'the state of a never-started instance').not.toBe('Stopped');
      if (profile.provisioningState === 'native') {
        expect(state, 'the state of a never-started instance (native provisioning)').toBe(
          'Provisioning',
        );
      }
      const created = await t.provider.create(t.request());
      expect((await t.provider.get(created)).state, 'the state of a new instance').not.toBe(
        'Stopped',
      );
    });

    test(opts, 'cloud-init never reaches logs, spans or errors', async (t) => {
      const cloudInit = new TextEncoder().encode(SENTINEL_CLOUD_INIT);
      const errors: unknown[] = [];
      const req = t.request({ cloudInit });
      const id = await t.provider.create(req);
      await t.provider.create(req);
      await t.provider.get(id);
      await t.provider.listByTag();
      for (const { placement } of t.harness.invalidPlacements) {
        await collect(errors, t.provider.create(t.request({ cloudInit, placement })));
      }
      const foreign = t.request({ cloudInit });
      await t.harness.plantMarked(foreign.name, { uid: 'someone-else', installation: 'default' });
      await collect(errors, t.provider.create(foreign));
      t.harness.injectMalformed();
      await collect(errors, t.provider.create(t.request({ cloudInit })));
      const cancelled = await abortWhileBlocked(t, 1, 'create', (signal) =>
        t.provider.create(t.request({ cloudInit }), { signal }),
      );
      if (cancelled.state === 'rejected') errors.push(cancelled.error);
      else await collect(errors, cancelled.promise);
      await t.provider.delete(id);
      expect(errors.length, 'failed Creates to look into').toBeGreaterThan(2);
      for (const err of errors) {
        expect(leakedIn(everythingIn(err), CLOUD_INIT_SECRET), 'cloud-init in an error').toBe(
          undefined,
        );
      }
      expect(leakedIn(t.logs.text(), CLOUD_INIT_SECRET), 'cloud-init in the logs').toBe(undefined);
      expect(leakedIn(t.spans.text(), CLOUD_INIT_SECRET), 'cloud-init in the spans').toBe(
        undefined,
      );
    });
  });
}
