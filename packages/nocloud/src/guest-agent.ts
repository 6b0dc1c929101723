/**
 * A POSIX shell script that installs and starts the QEMU guest agent
 * (`qemu-guest-agent`), through which a hypervisor reads a guest's
 * addresses. cloud-init runs it once per instance when it is the seed's
 * vendor data (see {@link buildVendorData}).
 *
 * - Debian and Ubuntu: `apt-get update` then `apt-get install`, waiting up
 *   to five minutes for the package lock each time.
 * - RHEL family (RHEL, CentOS Stream, Rocky, Alma, Fedora): `dnf install`,
 *   or `yum install` where there is no dnf.
 * - Each install is tried five times, ten seconds apart, since the network
 *   or a mirror may not be ready at first boot.
 * - Idempotent: a package the package database already lists is not
 *   installed again, and a running service is not restarted.
 * - It exits non-zero, with a line naming what failed on standard error,
 *   when no supported package manager exists or the install or start fails,
 *   so the failure shows in `cloud-init status` and its output log.
 *
 * The install needs a package mirror: the guest's network must reach one.
 * An image that already ships the agent needs no mirror and the script is
 * a no-op there.
 */
export const GUEST_AGENT_SCRIPT = `#!/bin/sh
# Installs and starts the QEMU guest agent, through which the hypervisor
# reads this guest's addresses. Written by @proxy-op/nocloud. Safe to run
# again: it installs only what is missing and starts only what is stopped.
set -u
pkg=qemu-guest-agent

log() {
  echo "guest-agent: $*" >&2
}

installed() {
  if command -v dpkg-query >/dev/null 2>&1; then
    case "$(dpkg-query -W -f='\${Status}' "$pkg" 2>/dev/null)" in
      *"install ok installed"*) return 0 ;;
    esac
  fi
  if command -v rpm >/dev/null 2>&1 && rpm -q "$pkg" >/dev/null 2>&1; then
    return 0
  fi
  return 1
}

# Runs a command up to five times, ten seconds apart.
retry() {
  n=1
  until "$@"; do
    if [ "$n" -ge 5 ]; then
      return 1
    fi
    n=$((n + 1))
    sleep 10
  done
}

if installed; then
  log "$pkg is already installed"
elif command -v apt-get >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  retry apt-get -o DPkg::Lock::Timeout=300 -q update ||
    log "apt-get update failed; trying the install with the lists at hand"
  retry apt-get -o DPkg::Lock::Timeout=300 -q -y install --no-install-recommends "$pkg" || {
    log "apt-get could not install $pkg"
    exit 1
  }
elif command -v dnf >/dev/null 2>&1; then
  retry dnf -q -y install "$pkg" || {
    log "dnf could not install $pkg"
    exit 1
  }
elif command -v yum >/dev/null 2>&1; then
  retry yum -q -y install "$pkg" || {
    log "yum could not install $pkg"
    exit 1
  }
else
  log "found no apt-get, dnf or yum; use an image that ships $pkg"
  exit 1
fi

if command -v systemctl >/dev/null 2>&1; then
  # Debian's unit has no [Install] section (udev starts it when the agent's
  # port appears), so enabling it may fail; starting it is what counts.
  systemctl enable "$pkg" >/dev/null 2>&1 || true
  if systemctl is-active --quiet "$pkg"; then
    log "$pkg is already running"
  elif systemctl start "$pkg"; then
    log "$pkg started"
  else
    log "systemctl could not start $pkg; is the guest agent channel attached?"
    exit 1
  fi
elif command -v service >/dev/null 2>&1; then
  service "$pkg" start || {
    log "service could not start $pkg"
    exit 1
  }
else
  log "found no systemctl or service to start $pkg"
  exit 1
fi
`;
