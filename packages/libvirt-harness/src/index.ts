/**
 * Test support for the libvirt suites: a private `libvirtd` (and
 * `virtlogd`) and an `sshd` on loopback, each in a temp dir, each stopped
 * by `stop()` so no process outlives the suite; the guest images they
 * boot, the network namespaces they run in, and the stacks the providers'
 * end-to-end suites run on.
 *
 * @module
 */

export {
  buildCloudGuest,
  CLOUD_GUEST_CMDLINE,
  CLOUD_GUEST_MODULES,
  CLOUD_GUEST_PACKAGES,
  CLOUD_GUEST_PEERS,
  type CloudGuest,
  type CloudGuestOptions,
} from './cloud-guest.js';
export {
  CLOUD_NETWORK,
  CLOUD_STACK_PEERS,
  type CloudStack,
  guestAddresses,
  type ProxyAnswer,
  startCloudStack,
} from './cloud-stack.js';
export { DEFAULT_DEBIAN_MIRROR, debianMirror, debianSuite } from './debian.js';
export {
  buildTestGuest,
  findGuestKernel,
  TEST_GUEST_BOOT_BUDGET_MS,
  TEST_GUEST_MARK,
  TEST_GUEST_MODULES,
  TEST_GUEST_PEERS,
  type TestGuest,
  type TestGuestOptions,
} from './guest.js';
export {
  type ImageMode,
  type ImageServer,
  sha256Of,
  startImageServer,
} from './images.js';
export {
  ensureQemuUser,
  LIBVIRTD_PEERS,
  type Libvirtd,
  type LibvirtdOptions,
  startLibvirtd,
} from './libvirtd.js';
export { type NetworkNamespace, startNetworkNamespace } from './netns.js';
export {
  type NamespacedHttpServer,
  type SeenRequest,
  startNamespacedHttpServer,
} from './ns-http.js';
export { BINARIES } from './process.js';
export { freePort, SSHD_PEERS, type Sshd, startSshd } from './sshd.js';
export {
  agentAddresses,
  type DaemonOracles,
  dumpedSeedFile,
  type GuestExecResult,
  guestExec,
  guestFile,
  type LibvirtStack,
  type Relay,
  STACK_PEERS,
  startLibvirtStack,
  startRelay,
} from './stack.js';
