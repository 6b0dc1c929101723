// Peer: the real stack in a network namespace: libvirtd (Debian libvirt-daemon, QEMU under TCG) with a libvirt network on a bridge (dnsmasq), reached by the operator through a real sshd (openssh-server); a Debian guest built by debootstrap running real systemd, cloud-init, Squid and qemu-guest-agent; curl as the client; virsh and the guest agent as oracles.
import * as vitest from 'vitest';
import { describeVmEndToEnd } from './support/suite.js';

describeVmEndToEnd(vitest, 'kvm');
