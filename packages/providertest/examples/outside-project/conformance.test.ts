import { describeProviderConformance } from '@proxy-op/providertest';
import * as vitest from 'vitest';
import { createAcmeFixture, profile } from './provider.js';

describeProviderConformance({
  vitest,
  factory: (deps) => createAcmeFixture(deps),
  profile,
  checker: true,
});
