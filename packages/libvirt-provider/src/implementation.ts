/**
 * The engine's backend logic as the operation shell wants it: the runtime
 * (config, hosts, budgets, logger, tracer) and the operations bound to it. `createProvider` adds the argument
 * and signal checks, the per-name lock, the error funnel, the redaction of
 * the SSH key and the Checker policy.
 *
 * @module
 */
import { trace } from '@opentelemetry/api';
import {
  bindOperations,
  type ProviderImplementation,
  type ShellDeps,
  systemClock,
} from '@proxy-op/contract';
import { KeyedLock } from '@proxy-op/keyedlock';
import { Agent, interceptors } from 'undici';
import { sshTransport } from './adapter.js';
import { updateInstanceAuth } from './auth.js';
import { type Budgets, DEFAULT_BUDGETS } from './budgets.js';
import { checker } from './check.js';
import type { LibvirtConfig, LibvirtDeps } from './config.js';
import { createInstance } from './create.js';
import { deleteInstance } from './delete.js';
import type { LibvirtFlavour } from './flavour.js';
import { getInstance } from './get.js';
import { HostTable } from './hosts.js';
import { type DomainId, domainIds } from './id.js';
import { listInstances } from './list.js';
import type { Runtime } from './runtime.js';

/**
 * A libvirt provider's implementation for `flavour`. Build a provider with
 * `createProvider(module, name, config, deps)`; building it opens no
 * connection.
 */
export function createImplementation(
  flavour: LibvirtFlavour,
  name: string,
  config: LibvirtConfig,
  deps: LibvirtDeps & ShellDeps,
): ProviderImplementation<DomainId> {
  const log = deps.logger.child({ provider: name });
  const tracer = deps.tracer ?? trace.getTracer(flavour.instrumentation);
  const budgets: Budgets = { ...DEFAULT_BUDGETS, ...deps.budgets };
  if (config.insecureIgnoreHostKey) {
    log.warn(
      { sshKeyFile: config.sshKeyFile },
      `${flavour.type} accepts any SSH host key (insecureIgnoreHostKey): use it for tests only`,
    );
  }
  for (const h of config.hosts) {
    if (h.bridge === undefined) {
      log.warn(
        { host: h.name },
        `${flavour.type} host ${h.name} has no bridge: its guests get QEMU user networking, reachable from that host only`,
      );
    }
  }
  const http = new Agent({ connections: 4 });
  const rt: Runtime = {
    flavour,
    config,
    log,
    clock: deps.clock ?? systemClock,
    budgets,
    tracer,
    http: http.compose(interceptors.redirect({ maxRedirections: 5 })),
    imageLocks: new KeyedLock<string>(),
    hosts: new HostTable({
      type: flavour.type,
      prefix: flavour.prefix,
      provider: name,
      config,
      transport: deps.transport ?? sshTransport(),
      secrets: deps.secrets,
      logger: log,
      tracer,
      budgets,
    }),
  };
  return bindOperations(rt, {
    ids: domainIds,
    // Create and Delete of one domain share its name's lock.
    lockKey: (id) => id.name,
    operations: { createInstance, getInstance, deleteInstance, listInstances, updateInstanceAuth },
    checker: checker(rt),
    // The pooled connections and the image downloads' connections.
    close: async () => {
      await rt.hosts.close();
      await http.close();
    },
  });
}
