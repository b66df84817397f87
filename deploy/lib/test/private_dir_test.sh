#!/usr/bin/env bash
# deploy/lib/private_dir.sh: the directories the deploy scripts keep state
# and results in are used only when they are this user's alone. A pure
# script test (bash and coreutils). The cases with another user's
# directories need root (chown); without it they are skipped, the rest run.
set -euo pipefail
here="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
root="$(cd -- "$here/../../.." && pwd -P)"
# shellcheck source=deploy/lib/private_dir.sh
source "$root/deploy/lib/private_dir.sh"
t="$(mktemp -d)"
trap 'rm -rf -- "$t"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# accepted DIR / refused DIR WORDS: private_dir's verdict, and its message.
accepted() { private_dir "$1" "test directory" 2>"$t/err" || fail "$1 refused: $(cat "$t/err")"; }
refused() {
  if private_dir "$1" "test directory" 2>"$t/err"; then fail "$1 accepted"; fi
  grep -qF -- "$2" "$t/err" || fail "refusing $1, the message does not say '$2': $(cat "$t/err")"
}

accepted "$t/new/deeper"
[[ "$(stat -c %a "$t/new/deeper")" == 700 && "$(stat -c %a "$t/new")" == 700 ]] ||
  fail "created with modes $(stat -c %a "$t/new") / $(stat -c %a "$t/new/deeper"), not 700"
mkdir -m 755 "$t/readable" && accepted "$t/readable"
mkdir -m 777 "$t/open" && refused "$t/open" "writable by its group or all users (mode 777)"
mkdir -m 770 "$t/group" && refused "$t/group" "(mode 770)"
mkdir -m 700 "$t/victim" && : >"$t/victim/precious"
ln -s "$t/victim" "$t/link" && refused "$t/link" "is a symbolic link"
[[ -e "$t/victim/precious" ]] || fail "the link's target was touched"
: >"$t/file" && refused "$t/file" "is not a directory"
mkdir -m 777 "$t/shared" && refused "$t/shared/mine/deeper" "writable by others without the sticky bit (mode 777)"
[[ ! -e "$t/shared/mine" ]] || fail "created a directory under an unsafe one"
mkdir -m 1777 "$t/sticky" && accepted "$t/sticky/mine"

# A launcher refuses such a directory before it starts or writes anything
# (its daemon program a stand-in under the name cluster.sh requires).
chmod 777 "$t/open"
mkdir "$t/bin" && ln -s /bin/true "$t/bin/pandora-memd"
set +e
out="$(bash "$root/deploy/local/cluster.sh" start --dir "$t/open" --memd "$t/bin/pandora-memd" 2>&1)"
rc=$?
set -e
[[ $rc -eq 2 ]] || fail "cluster.sh start in a world-writable directory exited $rc, not 2: $out"
[[ "$out" == *"writable by its group or all users"* ]] || fail "cluster.sh did not say why: $out"
[[ -z "$(ls -A "$t/open")" ]] || fail "cluster.sh wrote into the refused directory: $(ls -A "$t/open")"

if [[ "$(id -u)" -ne 0 ]]; then
  echo "PASS (another user's directories skipped: they need root)"
  exit 0
fi
mkdir -m 700 "$t/planted" && chown 65534:65534 "$t/planted" && refused "$t/planted" "belongs to"
mkdir -m 755 "$t/theirs" && chown 65534:65534 "$t/theirs" && mkdir -m 700 "$t/theirs/mine" &&
  refused "$t/theirs/mine" "which belongs to"
echo "PASS"
