#!/usr/bin/env bash
# ctest cloudlab.dry_run: renders deploy/cloudlab/cluster.sh's commands for a
# fake 7-node list (--dry-run) and checks them; checks that bad node lists
# are refused; runs profile.py against the geni-lib stand-in next to this
# file. Nothing here reaches a network: ssh and scp on PATH are fakes that
# record any call, and any call fails the test.
set -euo pipefail

here="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
cl="$here/../cluster.sh"
tmp="$(mktemp -d)"
trap 'rm -rf -- "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }
expect() {  # expect DESCRIPTION COMMAND...: COMMAND must succeed
  local what="$1"; shift
  if "$@"; then ok "$what"; else fail "$what"; fi
}

mkdir "$tmp/bin"
for tool in ssh scp; do
  printf '#!/bin/sh\necho "%s $*" >>"%s/real_calls"\nexit 97\n' "$tool" "$tmp" >"$tmp/bin/$tool"
  chmod +x "$tmp/bin/$tool"
done
export PATH="$tmp/bin:$PATH"
# The geni-lib stand-in lives in the source tree: leave no __pycache__ there.
export PYTHONDONTWRITEBYTECODE=1

nodes="$tmp/nodes"
{
  echo "# a fake experiment"
  for i in 0 1 2; do echo "zk node-$i 10.10.1.$((i + 1))"; done
  for i in 3 4; do echo "memory node-$i 10.10.1.$((i + 1))"; done
  for i in 5 6; do echo "compute node-$i 10.10.1.$((i + 1))"; done
} >"$nodes"

# --- The full sequence, tcp ----------------------------------------------------
d="$tmp/run"
out="$tmp/out"
expect "--help exits 0" bash "$cl" --help >/dev/null
expect "all --dry-run exits 0" bash "$cl" all --dry-run --nodes "$nodes" --dir "$d" --seconds 20 --crash 5:node-6 >"$out" 2>"$tmp/err"

# Hosts (sorted, one line) of the rendered ssh commands whose text matches $1.
hosts_of() { grep -E "^\+ ssh [^ ]+ '.*$1" "$out" | awk '{print $3}' | sort -u | tr '\n' ' ' | sed 's/ $//'; }
same() {  # same DESCRIPTION GOT WANT
  if [[ "$2" == "$3" ]]; then ok "$1"; else fail "$1: got '$2', want '$3'"; fi
}
same "ZooKeeper started on the zk nodes" "$(hosts_of 'QuorumPeerMain /var/tmp/pandora/run/zk.cfg')" "node-0 node-1 node-2"
same "pandora-fd started on the zk nodes" "$(hosts_of 'recovery/pandora-fd --config')" "node-0 node-1 node-2"
same "pandora-memd started on the memory nodes" "$(hosts_of 'memory/pandora-memd --pm-path')" "node-3 node-4"
same "memory daemons heartbeat the three pandora-fd replicas" \
  "$(grep -c -- "memory/pandora-memd .*--fd-replicas 10.10.1.1:7100,10.10.1.2:7100,10.10.1.3:7100" "$out")" "2"
same "tables loaded from the first compute node" "$(hosts_of 'pandora-bench .* --load ')" "node-5"
same "a bench on every compute node" "$(hosts_of 'pandora-bench .* --report ')" "node-5 node-6"
same "pandora-ctl init on the first zk node" "$(hosts_of 'pandora-ctl init ')" "node-0"
same "kill -9 only on the crashed node" "$(hosts_of 'kill -9 ')" "node-6"
for i in 1 2 3; do
  expect "fd replica $i listens on its own LAN address" \
    grep -qE "^\+ ssh node-$((i - 1)) '.*--replica-id $i --replicas 3 --listen 10\.10\.1\.$i:7100 " "$out"
  expect "zk$i.cfg lists the ensemble and binds its own address" \
    grep -qzE "clientPortAddress=10\.10\.1\.$i.*server\.1=10\.10\.1\.1:2888:3888.server\.2=10\.10\.1\.2:2888:3888.server\.3=10\.10\.1\.3:2888:3888" "$d/zk$i.cfg"
done
for i in 1 2; do
  expect "memory node $i: node id $i on 10.10.1.$((i + 3)):7000" \
    grep -qE "^\+ ssh node-$((i + 2)) '.*--node-id $i --listen 10\.10\.1\.$((i + 3)):7000 " "$out"
done
expect "ZooKeeper connect string lists the 3 zk nodes" \
  grep -qx "zookeeper = 10.10.1.1:2181,10.10.1.2:2181,10.10.1.3:2181" "$d/cluster.conf"
# With --zookeeper the compute nodes get the memory nodes from the registry, which init fills.
expect "pandora-ctl init names every memory node" grep -qE "pandora-ctl init .*--memory-nodes 10\.10\.1\.4:7000,10\.10\.1\.5:7000 " "$out"
expect "every bench joins through cluster.conf" \
  test "$(grep -cE "pandora-bench --config /var/tmp/pandora/run/cluster.conf " "$out")" -eq 3
expect "tcp by default, no RDMA flags" bash -c "! grep -q -- '--rdma-' '$out' && grep -q -- '--backend tcp ' '$out'"
expect "the crash waits 5 s, then kills" grep -qx "+ sleep 5" "$out"
expect "the crashed pid's recovery record is fetched" grep -qE "^\+ ssh node-0 'python3 .*zk_dump.py .*--pid PID " "$out"
expect "the plot uses the survivor's report only" \
  grep -qE "^\+ python3 .*plot_timeline.py .*--pid PID .* $d/cn1/bench.json$" "$out"
expect "results copied back from every node" test "$(grep -cE "^\+ scp -p node-[0-6]:/var/tmp/pandora/run/\\\\\*.log " "$out")" -eq 7
same "stop: pandora-fd on the zk nodes" "$(hosts_of 'grep -qa pandora-fd ')" "node-0 node-1 node-2"
same "stop: benches on the compute nodes" "$(hosts_of 'grep -qa pandora-bench ')" "node-5 node-6"
same "stop: pandora-memd on the memory nodes" "$(hosts_of 'grep -qa pandora-memd ')" "node-3 node-4"
same "stop: ZooKeeper on the zk nodes" "$(hosts_of 'grep -qa QuorumPeerMain ')" "node-0 node-1 node-2"
# The detector goes first, so it does not take the daemons' exit for failures.
same "stop order: fd, benches, memd, ZooKeeper" \
  "$(grep -oE "grep -qa (pandora-fd|pandora-bench|pandora-memd|QuorumPeerMain)" "$out" | uniq | awk '{print $3}' | tr '\n' ' ')" \
  "pandora-fd pandora-bench pandora-memd QuorumPeerMain "

# The secret: a 600 file here, copied as a file to every node, never in a command or another file.
secret="$(cat "$d/secret")"
expect "secret is 32 random bytes in hex" grep -qxE "[0-9a-f]{64}" "$d/secret"
same "secret file mode" "$(stat -c %a "$d/secret")" "600"
same "no rendered line holds the secret" "$(grep -cF -- "$secret" "$out" "$tmp/err" | awk -F: '{s += $2} END {print s}')" "0"
same "no other local file holds the secret" "$(grep -rlF -- "$secret" "$d" | tr '\n' ' ')" "$d/secret "
for i in 0 1 2 3 4 5 6; do
  expect "secret copied with scp -p to node-$i" grep -qE "^\+ scp -p $d/secret $d/cluster.conf node-$i:/var/tmp/pandora/run/$" "$out"
done

# --- verbs renders the RDMA flags on the data plane's programs ----------------
expect "start --backend verbs --dry-run exits 0" bash "$cl" start --dry-run --nodes "$nodes" --dir "$tmp/verbs" \
  --backend verbs --rdma-device mlx5_2 --rdma-gid-index 5 >"$tmp/verbs.out" 2>&1
same "RDMA flags on memd and the loader" \
  "$(grep -cE -- "--rdma-device mlx5_2 --rdma-gid-index 5( |$)" "$tmp/verbs.out")" "3"
expect "the loader asks for verbs" grep -qE -- "--backend verbs --rdma-device mlx5_2 .* --load " "$tmp/verbs.out"
same "memd must serve verbs, not fall back to tcp" "$(grep -c -- "pandora-memd .*--verbs on --rdma-device mlx5_2" "$tmp/verbs.out")" "2"
expect "the port the user did not give is discovered" bash -c "! grep -q -- '--rdma-port' '$tmp/verbs.out'"
# Without --rdma-*, every node discovers its own device, port and GID.
expect "start --backend verbs without RDMA flags exits 0" bash "$cl" start --dry-run --nodes "$nodes" \
  --dir "$tmp/verbs2" --backend verbs >"$tmp/verbs2.out" 2>&1
expect "the loader asks for verbs, discovering" grep -qE -- "--backend verbs .*--load " "$tmp/verbs2.out"
expect "no RDMA flag is hard-coded" bash -c "! grep -q -- '--rdma-' '$tmp/verbs2.out'"

# --- Refusals: non-zero, a clear message, nothing rendered ---------------------
refused() {  # refused DESCRIPTION MESSAGE NODE-LIST-TEXT [cluster.sh options...]
  local what="$1" msg="$2" list="$tmp/bad" rc=0
  printf '%s\n' "$3" >"$list"
  shift 3
  bash "$cl" all --dry-run --nodes "$list" --dir "$tmp/bad.d" "$@" >"$tmp/bad.out" 2>&1 || rc=$?
  if [[ $rc -ne 0 ]] && grep -qF -- "$msg" "$tmp/bad.out" && ! grep -q "^+ " "$tmp/bad.out"; then
    ok "refused: $what"
  else
    fail "$what: exit $rc, wanted non-zero with '$msg' and nothing rendered; got: $(cat "$tmp/bad.out")"
  fi
}
good="$(cat "$nodes")"
refused "no compute node" "needs at least 1 compute node" "$(grep -v compute "$nodes")"
refused "no memory node" "needs at least 1 memory node" "$(grep -v memory "$nodes")"
refused "two zk nodes" "needs exactly 3 zk nodes" "$(grep -v 'node-2 ' "$nodes")"
refused "a duplicate host" "duplicate host node-1" "$good"$'\n'"compute node-1 10.10.1.9"
refused "a duplicate address" "duplicate address 10.10.1.7" "$good"$'\n'"compute node-7 10.10.1.7"
refused "an unknown role" "unknown role 'storage'" "$good"$'\n'"storage node-7 10.10.1.8"
refused "a host name as address" "not a numeric IPv4 address" "$good"$'\n'"compute node-7 node-7"
refused "a line without address" "expected 'ROLE SSH-NAME LAN-ADDRESS'" "$good"$'\n'"compute node-7"
refused "a crash of a memory node" "node-3 is not a compute node" "$good" --crash 5:node-3
refused "crashing every compute node" "leave at least one compute node" "$good" --crash 5:node-5 --crash 6:node-6
refused "a crash after the run" "SECONDS below --seconds" "$good" --seconds 10 --crash 12:node-5
refused "a shell word in an option" "may hold only" "$good" --workload 'micro;reboot'
refused "a GID index that is neither a number nor auto" "must be a number or 'auto'" "$good" --backend verbs --rdma-gid-index 'x;y'

# --- The profile, against the geni-lib stand-in ---------------------------------
expect "profile.py compiles" python3 -c "import sys, py_compile; py_compile.compile(sys.argv[1], cfile='$tmp/p.pyc', doraise=True)" "$here/../profile.py"
if PYTHONPATH="$here" python3 "$here/../profile.py" >"$tmp/profile.out" 2>&1; then
  # node NAME ... address=A  ->  ROLE A, to compare with nodes.example's roles and addresses.
  got="$(sed -nE 's/^node (zk|mem|cn)[0-9]+ .*address=([0-9.]+)$/\1 \2/p' "$tmp/profile.out" |
         sed -e 's/^mem /memory /' -e 's/^cn /compute /')"
  want="$(awk '!/^#/ && NF {print $1, $3}' "$here/../nodes.example")"
  same "profile's nodes match nodes.example" "$got" "$want"
  expect "one LAN at 100 Gbps (r650) over all 7 nodes" \
    grep -qx "lan lan bandwidth_kbps=100000000 members=zk1 zk2 zk3 mem1 mem2 cn1 cn2" "$tmp/profile.out"
else
  fail "profile.py with default parameters: $(cat "$tmp/profile.out")"
fi
if PYTHONPATH="$here" python3 "$here/../profile.py" --node_count 5 >"$tmp/profile.out" 2>&1; then
  fail "profile.py accepted 5 nodes with 2 memory nodes (no survivor to measure)"
else
  expect "profile.py refuses too few compute nodes" grep -q "at least 2 compute nodes" "$tmp/profile.out"
fi

expect "no real ssh or scp was run" test ! -e "$tmp/real_calls"
[[ $failures -eq 0 ]] || { echo "$failures check(s) failed" >&2; exit 1; }
echo "all checks passed"
