// Peer: the Kubernetes API test server, through the real @kubernetes/client-node, behind an
// HTTPS front that holds and garbles requests; the harness plays scheduler and kubelet.
import { describeProviderConformance } from '@proxy-op/providertest';
import * as vitest from 'vitest';
import { profile } from '../src/module.js';
import { createKubeFixture } from './support/fixture.js';

describeProviderConformance({
  vitest,
  factory: (deps) => createKubeFixture(deps),
  profile,
  checker: true,
  timeoutMs: 60_000,
});
