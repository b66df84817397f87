# Installs the Debian packages a script needs, only when dpkg reports one
# missing. Sourced by deploy/setup.sh and deploy/softroce-vm/lib.sh.
#
#   ensure_debian_packages LABEL PACKAGE...
#
# Returns 0 when every package is installed (installing the missing ones
# with apt-get, through `sudo -n` when not root and no terminal can answer a
# password prompt), else prints why on stderr ("LABEL: error: ...") and
# returns 2 when this host cannot install them at all (no dpkg/apt-get, not
# root and no sudo) or 3 when an install step failed. apt-get's output goes
# to stderr, so a caller's stdout stays its own.

# Prints the packages of "$@" that dpkg does not report as installed.
missing_debian_packages() {
  local pkg status
  for pkg in "$@"; do
    status="$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)"
    [[ "$status" == "installed" ]] || echo "$pkg"
  done
}

ensure_debian_packages() {
  local label="$1"
  shift
  if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
    echo "$label: error: dpkg-query/apt-get not found: Debian (bookworm) and derivatives are supported; install these packages by other means: $*" >&2
    return 2
  fi
  local -a missing
  mapfile -t missing < <(missing_debian_packages "$@")
  if [[ ${#missing[@]} -eq 0 ]]; then
    echo "==> packages: all $# required packages are installed" >&2
    return 0
  fi
  local -a sudo=()
  if [[ "$(id -u)" -ne 0 ]]; then
    if ! command -v sudo >/dev/null 2>&1; then
      echo "$label: error: missing packages (${missing[*]}) and not root, and sudo is not available; run as root: apt-get install -y --no-install-recommends $*" >&2
      return 2
    fi
    sudo=(sudo)
    # No password prompt when nobody can answer it (ctest, CI).
    [[ -t 0 ]] || sudo+=(-n)
  fi
  echo "==> installing ${#missing[@]} missing package(s): ${missing[*]}" >&2
  if ! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update >&2; then
    echo "$label: error: apt-get update failed" >&2
    return 3
  fi
  if ! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 \
      install -y --no-install-recommends "$@" >&2; then
    echo "$label: error: apt-get install failed" >&2
    return 3
  fi
  mapfile -t missing < <(missing_debian_packages "$@")
  if [[ ${#missing[@]} -ne 0 ]]; then
    echo "$label: error: still missing after apt-get install: ${missing[*]}" >&2
    return 3
  fi
}
