#!/bin/sh
# Runs a command, shows its output, and passes iff it exits with the
# expected code: expect_exit.sh CODE COMMAND [ARG...]
# (pandora-litmus: 0 = no violation, 1 = violation found, 2 = error,
# 3 = crash-point coverage not reached).
expected="$1"
shift
"$@"
rc=$?
if [ "$rc" -ne "$expected" ]; then
  echo "expect_exit: '$1' exited with $rc, expected $expected" >&2
  exit 1
fi
exit 0
