import { describeProviderConformance } from '@proxy-op/providertest';
import * as vitest from 'vitest';
import { acmeProfile, createAcmeFixture } from './provider.js';

describeProviderConformance({
  vitest,
  factory: async (deps) => createAcmeFixture(deps),
  profile: acmeProfile,
  checker: false,
});
