// Peer: the in-memory libvirt model (test/support/model.ts), held to the seam contract that seam.real.test.ts runs against a real libvirtd.
import * as vitest from 'vitest';
import { LibvirtModel } from './support/model.js';
import { ModelConnection } from './support/model-connection.js';
import { qcow2Header } from './support/qcow2.js';
import { describeSeamContract } from './support/seam-contract.js';

const model = new LibvirtModel();
const host = model.addHost({ name: 'contract', acceptedKey: 'k' });
const conn = new ModelConnection(model, host, 1);
host.connections.add(conn);

describeSeamContract(vitest, 'the seam contract on the model', () => ({
  seam: conn,
  pool: 'default',
  image: qcow2Header(),
  domainType: 'qemu',
  setPoolActive: async (active) => {
    (host.pools.get('default') as { running: boolean }).running = active;
  },
}));
