// Test support (not a test file): the loopback peers the provider's traffic tests share with the
// forward proxy's, from the kit. All traffic stays on 127.0.0.0/8.
export {
  eventually,
  freePort,
  listen,
  openTunnel as tunnel,
  requestThroughProxy as viaProxy,
  selfSignedCert,
  startHttpEchoOrigin as startOrigin,
} from '@proxy-op/testkit';
