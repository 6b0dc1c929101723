// Peer: none for the profile table, checked against the exported profile; the built package run
// from a child Node process as a user would, against the real stack, for the examples (the
// engine's shared README suite).
import { fileURLToPath } from 'node:url';
import * as vitest from 'vitest';
import { describeReadmeOnStack } from '../../libvirt-provider/test/support/readme-suite.js';
import { profile } from '../src/module.js';

await describeReadmeOnStack(vitest, fileURLToPath(new URL('..', import.meta.url)), 'KVM2', profile);
