// Peer: the provider's production adapter (undici, the token read from a file) against the
// Hetzner Cloud API double on 127.0.0.1 (test/support/double/), the double's timings shortened.
import { describeProviderConformance } from '@proxy-op/providertest';
import * as vitest from 'vitest';
import { profile } from '../src/index.js';
import { createHetznerFixture } from './support/fixture.js';

describeProviderConformance({
  vitest,
  factory: (deps) => createHetznerFixture(deps),
  profile,
  checker: true,
});
