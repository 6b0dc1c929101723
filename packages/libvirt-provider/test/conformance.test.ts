// Peer: the in-memory libvirt model (seam fake held to a real libvirtd by the seam contract), under the whole conformance suite, with both sides of every profile axis the engine reads.
import { describeProviderConformance } from '@proxy-op/providertest';
import * as vitest from 'vitest';
import { libvirtProviderModule } from '../src/module.js';
import { createModelFixture } from './support/fixture.js';
import { otherFlavour, testFlavour } from './support/flavours.js';

for (const flavour of [testFlavour, otherFlavour]) {
  const module = libvirtProviderModule(flavour);
  const p = flavour.profile;
  vitest.describe(`${flavour.type} (${p.createReturn}, ${p.listPartial}, quota ${p.quota})`, () => {
    describeProviderConformance({
      vitest,
      factory: (deps) => createModelFixture(module, flavour, deps),
      profile: p,
      checker: true,
    });
  });
}
