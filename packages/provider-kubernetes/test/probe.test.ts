// Peers: the Kubernetes API test server through the real @kubernetes/client-node (the provider
// creates and reads its Pods), the harness's kubelet running each Pod's rendered Squid
// configuration in the real Squid (Debian `squid`) on a loopback address standing in for the
// Pod's IP, and @proxy-op/probe's probe and whoami target: a client's traffic through what the
// provider rendered.
import { probe, startWhoami, type Whoami } from '@proxy-op/probe';
import { describeWithPeers } from '@proxy-op/testkit';
import * as vitest from 'vitest';
import { createKubeFixture, type KubeFixture, pathOf, proxyRequest } from './support/fixture.js';

const { afterAll, beforeAll, expect, it } = vitest;

describeWithPeers(vitest, 'a probe through the Pod’s real Squid', ['squid'], () => {
  let whoami: Whoami;
  let f: KubeFixture;

  beforeAll(async () => {
    whoami = await startWhoami({ host: '127.0.79.1' });
    // The Pods' "CONNECT only to 443", with the target's HTTPS port standing in for 443.
    f = await createKubeFixture({}, { config: { connectPorts: [Number(whoami.https?.port)] } });
  }, 60_000);

  afterAll(async () => {
    await f?.cleanup?.();
    await whoami?.close();
  }, 60_000);

  // The target is on loopback, which a Pod's Squid refuses as a destination unless allowed.
  const request = (name: string, allowedSources: string[]) =>
    proxyRequest(name, {
      allowedSources,
      egress: { allow: [whoami.http.host, ...(whoami.https ? [whoami.https.host] : [])] },
    });

  it('Running with the Pod’s IP, then the GET and the CONNECT (TLS inside) pass through its Squid', async () => {
    const id = await f.provider.create(request('proxy-probe-ok', ['127.0.0.0/8']));
    const { namespace, name } = pathOf(id);
    const squid = await f.kubelet.runSquid(namespace, name, '127.0.79.10');
    const inst = await f.provider.get(id);
    expect(inst.state).toBe('Running');
    expect(inst.ip).toBe('127.0.79.10');
    const r = await probe(`http://${inst.ip}:3128`, whoami.target());
    expect(r.failure, squid.output()).toBeUndefined();
    expect(r.ok).toBe(true);
    expect(r.steps.find((s) => s.step === 'tunnel')?.message).toMatch(/TLS inside the tunnel/);
    // The egress address the target saw: Squid's, which on loopback the system picks.
    expect(r.egressIP).toBe('127.0.0.1');
  }, 60_000);

  it('allowedSources without the prober: Squid answers 403 and the probe names it', async () => {
    const id = await f.provider.create(request('proxy-probe-403', ['10.0.0.0/8']));
    const { namespace, name } = pathOf(id);
    await f.kubelet.runSquid(namespace, name, '127.0.79.11');
    const r = await probe('http://127.0.79.11:3128', whoami.target());
    expect(r.failure).toMatchObject({ check: 'get', step: 'status' });
    expect(r.failure?.message).toMatch(/^the proxy answered 403/);
  }, 60_000);

  it('a Pod whose Squid stopped: the probe fails at connect', async () => {
    const id = await f.provider.create(request('proxy-probe-gone', ['127.0.0.0/8']));
    const { namespace, name } = pathOf(id);
    await f.kubelet.runSquid(namespace, name, '127.0.79.12');
    await f.kubelet.stopSquid(namespace, name);
    const r = await probe('http://127.0.79.12:3128', whoami.target());
    expect(r.failure).toMatchObject({ check: 'get', step: 'connect' });
  }, 60_000);
});
