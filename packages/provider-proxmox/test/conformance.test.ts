// Peer: the HTTPS fake of the PVE API over real TLS, through the undici client.
import { describeProviderConformance } from '@proxy-op/providertest';
import * as vitest from 'vitest';
import { profile } from '../src/module.js';
import { createConformanceFixture } from './support/fixture.js';

describeProviderConformance({
  vitest,
  factory: (deps) => createConformanceFixture(deps, 'https'),
  profile,
  checker: true,
});
