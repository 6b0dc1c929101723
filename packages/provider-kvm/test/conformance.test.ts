// Peer: the in-memory libvirt model of @proxy-op/libvirt-provider's tests (held to a real libvirtd by its seam contract), under the whole conformance suite with kvm's profile; planted marks are the original kvm's element.
import { describeProviderConformance } from '@proxy-op/providertest';
import * as vitest from 'vitest';
import { createModelFixture } from '../../libvirt-provider/test/support/fixture.js';
import { flavour, profile, providerModule } from '../src/module.js';
import { plantOriginal } from './support/original.js';

describeProviderConformance({
  vitest,
  factory: (deps) =>
    createModelFixture(providerModule, flavour, deps, { plantMark: plantOriginal }),
  profile,
  checker: true,
});
