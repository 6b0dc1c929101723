// Peer: the built package run from a child Node process as a user would, against the real stack
// (the engine's shared README suite).
import { fileURLToPath } from 'node:url';
import * as vitest from 'vitest';
import { describeReadmeOnStack } from '../../libvirt-provider/test/support/readme-suite.js';

await describeReadmeOnStack(vitest, fileURLToPath(new URL('..', import.meta.url)), 'KVM');
