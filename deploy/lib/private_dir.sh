# Sourced by the deploy scripts: the directories they keep a cluster's state
# or results in must be this user's alone.
#
# Their defaults are predictable paths under /tmp (/tmp/pandora-...), and a
# directory another local user made there first would hand that user the
# cluster: they could read or plant its secret file, swap pid files or
# configs between the script's steps, or point a symbolic link at a
# directory whose files the script then overwrites and deletes. So a
# directory is used only when it is a real directory (not a symbolic link)
# owned by this user, writable by nobody else, and every directory above it
# is owned by this user or root and writable by nobody else unless sticky
# (/tmp itself is fine: root's, sticky).
#
#   private_dir DIR WHAT   creates DIR (mode 700, parents too) when missing;
#                          returns 1 with a message naming the culprit when
#                          DIR or a directory above it is not safe to use.

private_dir() {
  local dir="$1" what="$2" me mode owner parent
  me="$(id -u)"
  if [[ -L "$dir" ]]; then
    echo "the $what $dir is a symbolic link (to $(readlink -- "$dir")); another user may have planted it: remove it" \
      "or choose another directory" >&2
    return 1
  fi
  # The directories above first (from the deepest one that exists), so
  # nothing is created under one that is not safe.
  parent="$(dirname -- "$dir")"
  while [[ ! -e "$parent" ]]; do parent="$(dirname -- "$parent")"; done
  parent="$(cd -- "$parent" && pwd -P)" || { echo "cannot resolve the directory above $dir" >&2; return 1; }
  while :; do
    owner="$(stat -c %u -- "$parent")"
    mode="$(stat -c %a -- "$parent")"
    if [[ "$owner" != "$me" && "$owner" != 0 ]]; then
      echo "the $what $dir lies under $parent, which belongs to $(stat -c %U -- "$parent") (uid $owner): they" \
        "could replace $dir; choose a directory under one of your own" >&2
      return 1
    fi
    if (( 8#$mode & 8#022 )) && ! (( 8#$mode & 8#1000 )); then
      echo "the $what $dir lies under $parent, writable by others without the sticky bit (mode $mode): they" \
        "could replace $dir; choose a directory under one of your own" >&2
      return 1
    fi
    [[ "$parent" != / ]] || break
    parent="$(dirname -- "$parent")"
  done
  if [[ ! -e "$dir" ]]; then
    (umask 077 && mkdir -p -- "$dir") || { echo "cannot create the $what $dir" >&2; return 1; }
  fi
  [[ -d "$dir" && ! -L "$dir" ]] || { echo "the $what $dir exists and is not a directory" >&2; return 1; }
  owner="$(stat -c %u -- "$dir")"
  mode="$(stat -c %a -- "$dir")"
  if [[ "$owner" != "$me" ]]; then
    echo "the $what $dir belongs to $(stat -c %U -- "$dir") (uid $owner), not to $(id -un) (uid $me): its owner" \
      "could read the cluster's secret and change its files; remove it or choose another directory" >&2
    return 1
  fi
  if (( 8#$mode & 8#022 )); then
    echo "the $what $dir is writable by its group or all users (mode $mode): they could change the cluster's" \
      "files; chmod 700 it or choose another directory" >&2
    return 1
  fi
}
