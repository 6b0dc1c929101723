// The Checker situations of the libvirt providers over the model, each with
// the reason every target (or one) must give.
import { rmSync } from 'node:fs';
import type { CheckScenario } from '@proxy-op/providertest';
import type { LibvirtModel, ModelHost } from './model.js';

export function checkScenarios(
  model: LibvirtModel,
  names: readonly string[],
  files: { readonly keyFile: string; readonly knownHostsFile: string },
): CheckScenario[] {
  const { keyFile, knownHostsFile } = files;
  const host = (name: string): ModelHost => model.host(name);
  const first = names[0] as string;
  return [
    { name: 'every host answers', arrange: () => {}, want: 'Reachable' },
    {
      name: 'the host keys changed',
      arrange: () => {
        for (const h of model.hosts.values()) h.hostKey = Buffer.from(h.hostKey).fill(7, 19);
      },
      want: 'Unauthorized',
    },
    {
      name: 'the key is no longer authorized',
      arrange: () => {
        for (const h of model.hosts.values()) h.acceptedKeys = new Set(['another key']);
      },
      want: 'Unauthorized',
    },
    {
      name: 'the key file is missing',
      arrange: () => rmSync(keyFile),
      want: 'CredentialsUnavailable',
    },
    {
      name: 'the known_hosts file is missing',
      arrange: () => rmSync(knownHostsFile),
      want: 'CredentialsUnavailable',
    },
    {
      name: 'the last host does not answer',
      arrange: () => {
        host(names[names.length - 1] as string).reachable = false;
      },
      want: 'Unreachable',
      target: names[names.length - 1] as string,
    },
    {
      name: 'libvirtd is down on the first host',
      arrange: () => {
        host(first).socketUp = false;
      },
      want: 'Unreachable',
      target: first,
    },
    {
      name: 'libvirt refuses the user',
      arrange: () => {
        host(first).accessDenied = true;
      },
      want: 'Forbidden',
      target: first,
    },
    {
      name: 'the pool is missing on the last host',
      arrange: () => {
        host(names[names.length - 1] as string).pools.clear();
      },
      want: 'PoolNotFound',
      target: names[names.length - 1] as string,
    },
    {
      name: 'the pool is stopped on the first host',
      arrange: () => {
        for (const p of host(first).pools.values()) p.running = false;
      },
      want: 'PoolNotActive',
      target: first,
    },
  ];
}
