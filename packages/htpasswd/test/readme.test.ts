// Peer: the built package, run from a child Node process as a user would.
import { fileURLToPath } from 'node:url';
import { describeReadme } from '@proxy-op/testkit';
import * as vitest from 'vitest';

describeReadme(vitest, fileURLToPath(new URL('..', import.meta.url)));
