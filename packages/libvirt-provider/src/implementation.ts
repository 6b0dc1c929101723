/**
 * The engine's backend logic as the operation shell wants it: a small
 * façade over one module per operation. `createProvider` adds the argument
 * and signal checks, the per-name lock, the error funnel, the redaction of
 * the SSH key and the Checker policy.
 *
 * @module
 */
import { trace } from '@opentelemetry/api';
import {
  type CheckedCreateRequest,
  type DeleteContext,
  type IdParser,
  type ImplementationChecker,
  type Instance,
  type OperationContext,
  type ProviderDeps,
  type ProviderImplementation,
  type ShellDeps,
  systemClock,
} from '@proxy-op/contract';
import { KeyedLock } from '@proxy-op/keyedlock';
import { Agent, interceptors } from 'undici';
import { sshTransport } from './adapter.js';
import { type Budgets, DEFAULT_BUDGETS } from './budgets.js';
import { checker } from './check.js';
import type { LibvirtConfig } from './config.js';
import { create } from './create.js';
import { deleteDomain } from './delete.js';
import type { LibvirtFlavour } from './flavour.js';
import { get } from './get.js';
import { HostTable } from './hosts.js';
import { type DomainId, domainIds } from './id.js';
import { list } from './list.js';
import type { Runtime } from './runtime.js';
import type { Transport } from './seam.js';

/** What a libvirt provider module takes besides the contract's dependencies. */
export interface LibvirtDeps extends ProviderDeps {
  /**
   * Opens connections instead of SSH to the hosts (tests, and tools that
   * reach libvirtd their own way). The engine still reads the SSH
   * material, bounds, traces and logs every call.
   */
  readonly transport?: Transport | undefined;
  /** Overrides of the budgets (tests shrink them). */
  readonly budgets?: Partial<Budgets> | undefined;
}

/**
 * A libvirt provider's implementation. Build a provider with
 * `createProvider(module, name, config, deps)`; building it opens no
 * connection.
 */
export class LibvirtImplementation implements ProviderImplementation<DomainId> {
  readonly ids: IdParser<DomainId> = domainIds;
  readonly checker: ImplementationChecker;
  readonly #rt: Runtime;
  readonly #http: Agent;

  constructor(
    flavour: LibvirtFlavour,
    name: string,
    config: LibvirtConfig,
    deps: LibvirtDeps & ShellDeps,
  ) {
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
    this.#http = new Agent({ connections: 4 });
    this.#rt = {
      flavour,
      config,
      log,
      clock: deps.clock ?? systemClock,
      budgets,
      tracer,
      http: this.#http.compose(interceptors.redirect({ maxRedirections: 5 })),
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
    this.checker = checker(this.#rt);
  }

  /** Create and Delete of one domain share its name's lock. */
  lockKey(id: DomainId): string {
    return id.name;
  }

  create(req: CheckedCreateRequest, ctx: OperationContext): Promise<string> {
    return create(this.#rt, req, ctx);
  }

  get(id: DomainId, ctx: OperationContext): Promise<Instance> {
    return get(this.#rt, id, ctx);
  }

  delete(id: DomainId, ctx: DeleteContext): Promise<void> {
    return deleteDomain(this.#rt, id, ctx);
  }

  list(installation: string, ctx: OperationContext): Promise<Instance[]> {
    return list(this.#rt, installation, ctx);
  }

  /** Closes the pooled connections and the image downloads' connections. */
  async close(): Promise<void> {
    await this.#rt.hosts.close();
    await this.#http.close();
  }
}
