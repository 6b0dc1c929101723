// "Acme Cloud": the vendor API the example provider talks to, simulated in memory the way a
// provider author fakes their vendor for tests. Machines carry labels and a boot disk that goes
// away with them; inserts are accepted at once and boot later; deletes are accepted at once and
// finish later; every call presents a bearer token, and a refused token is echoed back.
import { abortable, createGate, type Gate, type HarnessGate } from '@proxy-op/providertest';

/** An error answer of the Acme API: an HTTP status and its body. */
export class AcmeHttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
  ) {
    super(`HTTP ${status}: ${body}`);
  }
  override get name(): string {
    return 'AcmeHttpError';
  }
}

/** A machine as the API answers it. */
export interface Machine {
  readonly name: string;
  /** `REPAIRING` is a state the provider was not written for. */
  readonly state: 'PROVISIONING' | 'RUNNING' | 'STOPPED' | 'DELETING' | 'REPAIRING';
  readonly address?: string | undefined;
  readonly labels: Readonly<Record<string, string>>;
  /** RFC 3339, set by the API. */
  readonly created: string;
}

/** The calls of the Acme client library, each taking a signal. */
export interface AcmeClient {
  getMachine(name: string, signal?: AbortSignal): Promise<Machine>;
  insertMachine(
    m: { name: string; labels: Record<string, string>; userData: string },
    signal?: AbortSignal,
  ): Promise<void>;
  deleteMachine(name: string, signal?: AbortSignal): Promise<void>;
  listMachines(label: string, signal?: AbortSignal): Promise<Machine[]>;
  /** The last insert of `name`: running, done, or done with the error that ended it. */
  getInsert(
    name: string,
    signal?: AbortSignal,
  ): Promise<{ done: boolean; error?: { status: number; body: string } } | undefined>;
  /** Forgets a failed insert of `name`. */
  deleteInsert(name: string, signal?: AbortSignal): Promise<void>;
  ping(signal?: AbortSignal): Promise<{ region: string }>;
}

/** The simulated service, with the controls a test harness needs. */
export class AcmeCloud {
  readonly machines = new Map<string, Machine>();
  readonly disks = new Set<string>();
  /** The last insert of each machine name. */
  readonly inserts = new Map<string, { done: boolean; error?: { status: number; body: string } }>();
  private failLater = false;
  calls = 0;
  private token: string;
  private quota = Number.POSITIVE_INFINITY;
  private malformed = false;
  private down = false;
  private blocker: { skip: number; gate: HarnessGate } | undefined;
  private deleteHolds = new Map<string, HarnessGate>();

  constructor(token: string) {
    this.token = token;
  }

  /** A client that presents whatever `token()` returns on each call. */
  client(token: () => string): AcmeClient {
    return {
      getMachine: (name, signal) =>
        this.call(token, signal, () => {
          const m = this.machines.get(name);
          if (m === undefined) throw new AcmeHttpError(404, `machine ${name} not found`);
          return m;
        }),
      insertMachine: (m, signal) =>
        this.call(token, signal, () => {
          if (this.machines.has(m.name)) {
            throw new AcmeHttpError(409, `machine ${m.name} already exists`);
          }
          if (this.machines.size >= this.quota) {
            throw new AcmeHttpError(403, `quotaExceeded: machines limit ${this.quota} reached`);
          }
          this.machines.set(m.name, {
            name: m.name,
            state: 'PROVISIONING',
            labels: { ...m.labels },
            created: new Date().toISOString(),
          });
          this.disks.add(`${m.name}-boot`);
          this.inserts.set(m.name, { done: !this.failLater });
          this.failLater = false;
        }),
      deleteMachine: (name, signal) =>
        this.call(token, signal, async () => {
          const m = this.machines.get(name);
          if (m === undefined) throw new AcmeHttpError(404, `machine ${name} not found`);
          const hold = this.deleteHolds.get(name);
          if (hold !== undefined) {
            this.deleteHolds.delete(name);
            await hold.hold();
          }
          this.machines.set(name, { ...m, state: 'DELETING', address: undefined });
        }),
      listMachines: (label, signal) =>
        this.call(token, signal, () =>
          [...this.machines.values()].filter((m) => m.labels[label] !== undefined),
        ),
      getInsert: (name, signal) => this.call(token, signal, () => this.inserts.get(name)),
      deleteInsert: (name, signal) =>
        this.call(token, signal, () => {
          this.inserts.delete(name);
        }),
      ping: (signal) =>
        this.call(token, signal, () => {
          if (this.down) throw new AcmeHttpError(503, 'service unavailable');
          return { region: 'acme-west' };
        }),
    };
  }

  private async call<T>(
    token: () => string,
    signal: AbortSignal | undefined,
    fn: () => T | Promise<T>,
  ): Promise<T> {
    this.calls++;
    const presented = token();
    if (presented !== this.token) {
      throw new AcmeHttpError(401, `{"error":"invalid bearer token ${presented}"}`);
    }
    if (this.malformed) {
      this.malformed = false;
      return null as T;
    }
    const b = this.blocker;
    if (b !== undefined) {
      if (b.skip > 0) b.skip--;
      else {
        b.gate.reach();
        return abortable(
          b.gate.released.then(() => fn()),
          signal,
        );
      }
    }
    await new Promise((r) => setImmediate(r));
    if (signal?.aborted) throw signal.reason;
    return fn();
  }

  // ---- controls ----

  /**
   * Finishes what is pending: an insert that is to fail takes its machine
   * and disk away and keeps the error; an accepted delete removes the
   * machine and its boot disk.
   */
  settle(): void {
    for (const [name, insert] of this.inserts) {
      if (insert.done) continue;
      this.inserts.set(name, {
        done: true,
        error: { status: 403, body: 'quotaExceeded: CPUS quota exceeded in region acme-west' },
      });
      this.machines.delete(name);
      this.disks.delete(`${name}-boot`);
    }
    for (const m of [...this.machines.values()]) {
      if (m.state !== 'DELETING') continue;
      this.machines.delete(m.name);
      this.disks.delete(`${m.name}-boot`);
    }
  }

  update(name: string, patch: Partial<Machine>): void {
    const m = this.machines.get(name);
    if (m === undefined) throw new Error(`no machine ${name}`);
    this.machines.set(name, { ...m, ...patch });
  }

  put(m: Machine): void {
    this.machines.set(m.name, m);
  }

  acceptOnly(token: string): void {
    this.token = token;
  }

  failNextInsertLater(): void {
    this.failLater = true;
  }

  limitMachines(n: number): void {
    this.quota = n;
  }

  answerNextWithNull(): void {
    this.malformed = true;
  }

  setDown(): void {
    this.down = true;
  }

  blockCalls(skip: number): Gate {
    const gate = createGate();
    this.blocker = { skip, gate };
    return {
      reached: gate.reached,
      release: () => {
        if (this.blocker?.gate === gate) this.blocker = undefined;
        gate.release();
      },
    };
  }

  holdNextDelete(name: string): Gate {
    const gate = createGate();
    this.deleteHolds.set(name, gate);
    return gate;
  }
}
