// Peer: the in-memory libvirt model of @proxy-op/libvirt-provider's tests (held to a real libvirtd by its seam contract), under the whole conformance suite with kvm2's profile.
import { describeProviderConformance } from '@proxy-op/providertest';
import * as vitest from 'vitest';
import { createModelFixture } from '../../libvirt-provider/test/support/fixture.js';
import { flavour, profile, providerModule } from '../src/module.js';

describeProviderConformance({
  vitest,
  factory: (deps) => createModelFixture(providerModule, flavour, deps),
  profile,
  checker: true,
});
