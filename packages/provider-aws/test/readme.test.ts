// Peer: the built package, run from a child Node process as a user would; the profile table read
// from the README and held to the exported profile.
import { fileURLToPath } from 'node:url';
import { PROFILE_AXES } from '@proxy-op/contract';
import { describeReadme } from '@proxy-op/testkit';
import * as vitest from 'vitest';
import { profile } from '../src/module.js';

describeReadme(vitest, fileURLToPath(new URL('..', import.meta.url)), {
  profile: { choices: profile, axes: PROFILE_AXES },
});
