/**
 * The contract's lifecycle test (§11), as one function run against the
 * Kubernetes API test server and, when its variables are set, a real
 * cluster: built without I/O, Check ready, Create, repeat Create, Get to
 * Running, ListByTag, Delete, Get NotFound, Delete again, nothing left.
 *
 * @module
 */
import { isIPv4 } from 'node:net';
import { type CreateRequest, isNotFound, type Provider } from '@proxy-op/contract';
import type { LogSink, SpanRecorder } from '@proxy-op/providertest';
import { expect } from 'vitest';

/** What the lifecycle needs besides the provider. */
export interface LifecycleOptions {
  readonly request: CreateRequest;
  /** Waits for Get to answer Running; the test server's kubelet runs the Pod here. */
  readonly untilRunning: (id: string) => Promise<void>;
  /** Waits for Get to answer NotFound after Delete. */
  readonly untilGone: (id: string) => Promise<void>;
  /** How many Pods with the request's name exist now. */
  readonly podsNamed: (name: string) => Promise<number>;
  readonly logs: LogSink;
  readonly spans: SpanRecorder;
  /** A secret that must not show in logs or spans (the token). */
  readonly secret?: string | undefined;
}

/** Polls `get` until `done` says so or `ms` pass. */
export async function poll(what: string, ms: number, done: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await done()) return;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** Runs the lifecycle; the provider is closed at the end. */
export async function lifecycle(provider: Provider, o: LifecycleOptions): Promise<void> {
  const [check] = await provider.check!();
  expect(check?.reason, check?.message).toBe('Reachable');
  const id = await provider.create(o.request);
  try {
    expect(await provider.create(o.request), 'a repeat Create').toBe(id);
    expect(await o.podsNamed(o.request.name)).toBe(1);
    await o.untilRunning(id);
    const running = await provider.get(id);
    expect(running.state).toBe('Running');
    expect(isIPv4(running.ip ?? '')).toBe(true);
    expect(running.uid).toBe(o.request.uid);
    expect(
      (await provider.listByTag({ installation: o.request.installation })).map((i) => i.id),
    ).toContain(id);
  } finally {
    await provider.delete(id, { uid: o.request.uid });
  }
  await o.untilGone(id);
  expect(await provider.get(id).catch(isNotFound)).toBe(true);
  await provider.delete(id);
  expect(await o.podsNamed(o.request.name)).toBe(0);
  const spans = o.spans.spans();
  const create = spans.find((s) => s.name === 'provider.create');
  expect(
    spans.some((s) => s.parentSpanContext?.spanId === create?.spanContext().spanId),
    'a kubernetes.* span under provider.create',
  ).toBe(true);
  if (o.secret !== undefined) {
    expect(o.logs.text()).not.toContain(o.secret);
    expect(o.spans.text()).not.toContain(o.secret);
  }
  await provider.close?.();
}
