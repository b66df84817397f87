#!/usr/bin/env bash
# Installs python3-matplotlib (Debian package) when python3 cannot import
# matplotlib; uses sudo when not root. Used by the fail-over plots and the
# demo (deploy/setup.sh installs only what the build needs). Callers run the
# plots with /usr/bin/python3 when it exists (that is what this checks).
set -euo pipefail
die() { echo "ensure_matplotlib.sh: error: $*" >&2; exit 1; }
case "${1:-}" in
  -h|--help) echo "Usage: bash deploy/failover/ensure_matplotlib.sh   (installs python3-matplotlib if missing)"; exit 0 ;;
  "") ;;
  *) die "unknown argument '$1'" ;;
esac
# Debian's interpreter (the one python3-matplotlib installs for), not one
# that a version manager put first on PATH.
py=/usr/bin/python3
[[ -x "$py" ]] || py="$(command -v python3 || true)"
[[ -n "$py" ]] || die "python3 not found (apt-get install python3)"
"$py" -c 'import matplotlib' 2>/dev/null && exit 0
command -v apt-get >/dev/null 2>&1 ||
  die "python3 cannot import matplotlib and apt-get is not available: install matplotlib for python3"
sudo=()
if [[ "$(id -u)" -ne 0 ]]; then
  command -v sudo >/dev/null 2>&1 || die "python3-matplotlib is missing and sudo is not available; as root: apt-get install -y python3-matplotlib"
  sudo=(sudo)
fi
echo "==> installing python3-matplotlib (for the fail-over timeline plot)"
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update || die "apt-get update failed"
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-matplotlib ||
  die "apt-get install python3-matplotlib failed"
"$py" -c 'import matplotlib' || die "$py still cannot import matplotlib"
