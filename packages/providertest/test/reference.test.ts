// Peer: the reference provider over its in-memory backend, with the real OpenTelemetry SDK.
import * as vitest from 'vitest';
import { describeProviderConformance } from '../src/index.js';
import { createReferenceFixture, profile } from '../src/reference/index.js';

describeProviderConformance({
  vitest,
  factory: (deps) => createReferenceFixture(deps),
  profile,
  checker: true,
});
