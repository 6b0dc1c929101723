// Peer: the Kubernetes API test server, through the real @kubernetes/client-node, behind an
// HTTPS front that holds and garbles requests; the harness plays scheduler and kubelet (and
// mounts the Pods' Secret volumes for the credential checks).
import { describeProviderConformance } from '@proxy-op/providertest';
import * as vitest from 'vitest';
import { profile } from '../src/module.js';
import { createKubeFixture } from './support/fixture.js';

/** The kubelet's sync period here (the real one's is a minute), which bounds the credential checks. */
const SYNC_PERIOD_MS = 500;

describeProviderConformance({
  vitest,
  factory: (deps) => createKubeFixture(deps, { kubelet: { syncPeriodMs: SYNC_PERIOD_MS } }),
  profile,
  checker: true,
  timeoutMs: 60_000,
});
