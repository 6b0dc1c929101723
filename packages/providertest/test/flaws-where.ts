// Test support: broken variants of the reference provider's location, preemption and IPv6
// range answers, each with the checks of the "Location, preemption and IPv6 ranges" section
// it must fail.
import type { Instance, OperationContext } from '@proxy-op/contract';
import { type MemoryId, MemoryImplementation } from '../src/reference/provider.js';
import { type Flaw, label, mapsState, variant } from './flaws.js';

/** Test name → the failing check's message, for the flaws below. */
const T = {
  location: 'Get and ListByTag report the same well-formed location',
  preempted: 'an instance the backend took back reads as Preempted',
  never: 'a stopped instance is never Preempted (the profile says never)',
  range: 'a Running instance reports the IPv6 range it sends from',
} as const;

/** A variant whose Get answers `answer(instance)` in place of the reference's. */
const answersGet = (answer: (inst: Instance) => Instance) =>
  variant(
    class extends MemoryImplementation {
      override async get(id: MemoryId, ctx: OperationContext): Promise<Instance> {
        return answer(await super.get(id, ctx));
      }
    },
  );

/** A variant whose ListByTag answers `answer(instance)` for each instance. */
const answersList = (answer: (inst: Instance) => Instance) =>
  variant(
    class extends MemoryImplementation {
      override async list(installation: string, ctx: OperationContext): Promise<Instance[]> {
        return (await super.list(installation, ctx)).map(answer);
      }
    },
  );

export const WHERE_FLAWS: Record<string, Flaw> = {
  'location-country-lower-case': {
    about: 'reports the country in lower case',
    module: answersGet((inst) => ({ ...inst, location: { ...inst.location, country: 'de' } })),
    fails: { [T.location]: label('the location from Get') },
  },
  'list-location-elsewhere': {
    about: 'lists an instance in another zone than Get reports',
    module: answersList((inst) => ({
      ...inst,
      location: { ...inst.location, zone: 'zone-elsewhere' },
    })),
    fails: { [T.location]: label('the listed location is the one Get reports') },
  },
  'billed-nowhere': {
    about: 'declares billing and reports no location',
    module: variant(
      class extends MemoryImplementation {
        protected override locationOf(): undefined {
          return undefined;
        }
      },
    ),
    profiles: ['reference'],
    fails: { [T.location]: label('the region from Get (the profile declares billing)') },
  },
  'preempted-as-stopped': {
    about: 'reads an instance the backend took back as Stopped',
    module: mapsState((vm) => (vm.reclaimed === true ? 'Stopped' : undefined)),
    profiles: ['reference'],
    fails: { [T.preempted]: label('the state from Get once taken back') },
  },
  'list-hides-preemption': {
    about: 'lists an instance the backend took back without its state',
    module: answersList(({ state: _gone, ...inst }) => inst),
    profiles: ['reference'],
    fails: { [T.preempted]: label('the state from ListByTag once taken back') },
  },
  'stopped-as-preempted': {
    about: 'declares no preemption and reads every stopped instance as Preempted',
    module: mapsState((vm) => (vm.status === 'stopped' ? 'Preempted' : undefined)),
    profiles: ['loose'],
    fails: { [T.never]: label('the state of a stopped instance') },
  },
  'ipv6-address-as-range': {
    about: 'reports an IPv6 address where a range belongs',
    module: answersGet((inst) =>
      inst.ipv6Range === undefined ? inst : { ...inst, ipv6Range: inst.ipv6Range.split('/')[0] },
    ),
    fails: { [T.range]: label('the IPv6 range of a Running instance') },
  },
  'ipv6-range-outlives-running': {
    about: 'keeps reporting the IPv6 range of an instance that stopped',
    module: answersGet((inst) =>
      inst.state === 'Stopped' ? { ...inst, ipv6Range: '2001:db8:ffff::/64' } : inst,
    ),
    fails: { [T.range]: label('the IPv6 range of a Stopped instance') },
  },
};
