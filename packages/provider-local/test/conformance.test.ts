// Peer: real proxy processes and real state files in a temp folder (the production seam), with
// a thin control layer for the suite's blocking, held kills and forced answers.
import { describeProviderConformance } from '@proxy-op/providertest';
import * as vitest from 'vitest';
import { profile } from '../src/index.js';
import { createLocalFixture, killAllSpawned } from './fixture.js';

vitest.afterAll(killAllSpawned);

describeProviderConformance({
  vitest,
  factory: (deps) => createLocalFixture(deps),
  profile,
  checker: true,
});
