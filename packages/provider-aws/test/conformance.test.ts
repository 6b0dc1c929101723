// Peer: the real @aws-sdk/client-ec2, with credentials from a file read on every request, against
// the EC2 double on 127.0.0.1 (test/support/ec2/double.ts), whose eventual consistency stays on
// (short) and whose own Spot interruptions are off: the suite takes instances back itself.
import { describeProviderConformance } from '@proxy-op/providertest';
import * as vitest from 'vitest';
import { profile } from '../src/index.js';
import { createAwsFixture } from './support/fixture.js';

describeProviderConformance({
  vitest,
  // Spot Instances, so that the backend can take one back (the preemption checks); every other
  // check holds for them as for On-Demand ones.
  factory: (deps) =>
    createAwsFixture(deps, {
      config: { market: 'spot' },
      double: { consistencyMs: 150, bootMs: 200, terminateMs: 200, spotInterruption: false },
    }),
  profile,
  checker: true,
  timeoutMs: 60_000,
});
