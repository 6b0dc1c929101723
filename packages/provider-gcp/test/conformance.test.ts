// Peer: the real @google-cloud/compute client over REST and a real google-auth-library OAuth2
// client, against the Compute API double on 127.0.0.1 (test/support/compute-double.ts).
import { describeProviderConformance } from '@proxy-op/providertest';
import * as vitest from 'vitest';
import { profile } from '../src/index.js';
import { createGcpFixture } from './support/fixture.js';
import { WARM_MS, warmSdk } from './support/sdk.js';

vitest.beforeAll(warmSdk, WARM_MS);

describeProviderConformance({
  vitest,
  // Spot instances, so that the backend can take one back (the preemption checks); every
  // other check holds for them as for Standard ones.
  factory: (deps) =>
    createGcpFixture(deps, { config: { scheduling: { provisioningModel: 'SPOT' } } }),
  profile,
  checker: true,
  timeoutMs: 120_000,
});
