// Peer: the seam fake (FakeApi over the in-memory PVE model), no HTTP.
import { describeProviderConformance } from '@proxy-op/providertest';
import * as vitest from 'vitest';
import { profile } from '../src/module.js';
import { createConformanceFixture } from './support/fixture.js';

describeProviderConformance({
  vitest,
  factory: (deps) => createConformanceFixture(deps, 'seam'),
  profile,
  checker: true,
});
