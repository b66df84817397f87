#!/usr/bin/env bash
# Pandora on a CloudLab experiment (deploy/cloudlab/profile.py), driven over
# ssh from your own checkout. README, "CloudLab".
#
#   bash deploy/cloudlab/cluster.sh all --nodes nodes.txt --dir /tmp/cl --crash 10:cn2.EXP...
#   bash deploy/cloudlab/cluster.sh all --nodes nodes.txt --dir /tmp/cl --dry-run   # print only
set -euo pipefail

usage() {
  cat <<USAGE
Usage: bash deploy/cloudlab/cluster.sh install|start|run|stop|all --nodes FILE --dir DIR [options]

  install  ship this checkout's HEAD (git archive) to every node and build it
           there with deploy/setup.sh release (all nodes in parallel)
  start    write the cluster config into DIR (secret: mode 600, never on a
           command line; cluster id; ZooKeeper configs), copy it to every
           node with scp -p, start pandora-memd on the memory nodes, the
           ZooKeeper ensemble on the zk nodes, 'pandora-ctl init', load the
           tables from the first compute node, then one pandora-fd replica on
           each zk node. Every start is a fresh cluster (regions, ZooKeeper data)
  run      start pandora-bench on every compute node (one join at a time),
           kill -9 the --crash nodes at their times, wait for the rest, fetch
           the recovery records, copy logs and reports into DIR/<node>/ and
           plot each crash (deploy/failover/plot_timeline.py -> DIR/crash<k>.png)
  stop     stop benches, pandora-fd, pandora-memd, ZooKeeper; remove regions
  all      install, start, run, stop

Node list (--nodes; see deploy/cloudlab/nodes.example): lines 'ROLE SSH-NAME
LAN-ADDRESS', ROLE zk (exactly 3), memory (1+) or compute (1+), one role per
node; LAN-ADDRESS is numeric IPv4 (Pandora's binaries resolve no host names).
Local names: zk1..3, mem1.., cn1.. in file order.

Options:
  --nodes FILE            node list                                  [required]
  --dir DIR               local state and results                    [required]
  --dry-run               print every ssh/scp/local command instead of running
                          it (the local files - secret, configs - are written)
  --crash SECONDS:NODE    kill -9 compute node NODE (its SSH-NAME) SECONDS
                          after every bench joined (repeatable)
  --seconds N             measured run time of each bench            [30]
  --workload W            micro or smallbank                         [smallbank]
  --protocol P            pandora, ford or log-a-latch               [pandora]
  --threads N / --coordinators N   per bench                         [4 / 8]
  --bench-arg ARG         extra pandora-bench flag, load and run (repeatable)
  --backend B             data plane: tcp, or verbs (RDMA over the ConnectX NICs)   [tcp]
  --rdma-device D / --rdma-port N / --rdma-gid-index N|auto
                          with verbs; unset: the binaries discover them (first
                          device and port that are active, the RoCE v2 GID of
                          the port's IPv4 address)        [discover / 0 / auto]
  --region-size SIZE      region per memory node (in --region-dir)   [4G]
  --memd-threads N        pandora-memd --threads                     [4]
  --fd-timeout-us US      pandora-fd --timeout-us                    [5000]
  --cluster-id ID         cluster id                    [random, kept in DIR]
  --remote-dir DIR        on the nodes: DIR/src, DIR/run (node-local disk,
                          not the NFS-shared home)                   [/var/tmp/pandora]
  --region-dir DIR        on the memory nodes (no PM on these types: RAM,
                          with PMEM_IS_PMEM_FORCE=1, README)         [/dev/shm/pandora]
  -h, --help              this help
USAGE
}

die() { echo "cloudlab/cluster.sh: error: $*" >&2; exit 1; }
warn() { echo "cloudlab/cluster.sh: warning: $*" >&2; }
say() { echo "==> $*"; }

script_dir="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
root="$(cd -- "$script_dir/../.." && pwd -P)"

[[ $# -ge 1 ]] || { usage >&2; exit 2; }
cmd="$1"
shift
case "$cmd" in
  -h|--help) usage; exit 0 ;;
  install|start|run|stop|all) ;;
  *) usage >&2; die "unknown command '$cmd' (expected install, start, run, stop or all)" ;;
esac

nodes_file="" dir="" dry_run=0 seconds=30 workload=smallbank protocol=pandora threads=4 coordinators=8
backend=tcp rdma_device="" rdma_port=0 rdma_gid_index=auto region_size=4G memd_threads=4
fd_timeout_us=5000 cluster_id="" remote_dir=/var/tmp/pandora region_dir=/dev/shm/pandora
bench_args=() crashes=()
need_value() { [[ $# -ge 2 && -n "$2" ]] || die "option $1 needs a value"; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --nodes) need_value "$@"; nodes_file="$2"; shift 2 ;;
    --dir) need_value "$@"; dir="$2"; shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    --crash) need_value "$@"; crashes+=("$2"); shift 2 ;;
    --seconds) need_value "$@"; seconds="$2"; shift 2 ;;
    --workload) need_value "$@"; workload="$2"; shift 2 ;;
    --protocol) need_value "$@"; protocol="$2"; shift 2 ;;
    --threads) need_value "$@"; threads="$2"; shift 2 ;;
    --coordinators) need_value "$@"; coordinators="$2"; shift 2 ;;
    --bench-arg) need_value "$@"; bench_args+=("$2"); shift 2 ;;
    --bench-arg=*) bench_args+=("${1#--bench-arg=}"); shift ;;
    --backend) need_value "$@"; backend="$2"; shift 2 ;;
    --rdma-device) need_value "$@"; rdma_device="$2"; shift 2 ;;
    --rdma-port) need_value "$@"; rdma_port="$2"; shift 2 ;;
    --rdma-gid-index) need_value "$@"; rdma_gid_index="$2"; shift 2 ;;
    --region-size) need_value "$@"; region_size="$2"; shift 2 ;;
    --memd-threads) need_value "$@"; memd_threads="$2"; shift 2 ;;
    --fd-timeout-us) need_value "$@"; fd_timeout_us="$2"; shift 2 ;;
    --cluster-id) need_value "$@"; cluster_id="$2"; shift 2 ;;
    --remote-dir) need_value "$@"; remote_dir="$2"; shift 2 ;;
    --region-dir) need_value "$@"; region_dir="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown option '$1'" ;;
  esac
done

[[ -n "$nodes_file" ]] || die "--nodes FILE is required (see deploy/cloudlab/nodes.example)"
[[ -r "$nodes_file" ]] || die "cannot read the node list '$nodes_file'"
[[ -n "$dir" ]] || die "--dir DIR is required"
for v in seconds threads coordinators memd_threads fd_timeout_us rdma_port; do
  [[ "${!v}" =~ ^[0-9]+$ ]] || die "--${v//_/-} must be a number, got '${!v}'"
done
[[ "$rdma_gid_index" =~ ^([0-9]+|auto)$ ]] || die "--rdma-gid-index must be a number or 'auto', got '$rdma_gid_index'"
[[ "$backend" == tcp || "$backend" == verbs ]] || die "--backend must be tcp or verbs, got '$backend'"
# Everything below is pasted into remote shell commands: allow only plain words.
for v in workload protocol rdma_device region_size cluster_id remote_dir region_dir "bench_args[@]"; do
  for w in ${!v+"${!v}"}; do
    [[ "$w" =~ ^[A-Za-z0-9_./:=,+-]*$ ]] || die "'$w' (${v%%[*}) may hold only letters, digits and _ . / : = , + -"
  done
done
[[ "$remote_dir" == /* && "$region_dir" == /* ]] || die "--remote-dir and --region-dir must be absolute paths"

# --- The node list -----------------------------------------------------------
zk=() zk_addr=() mem=() mem_addr=() cn=() cn_addr=()
declare -A line_of=()
n=0
while read -r role host addr extra || [[ -n "${role:-}" ]]; do
  n=$((n + 1))
  [[ -z "${role:-}" || "$role" == \#* ]] && continue
  [[ -n "${addr:-}" && -z "${extra:-}" ]] || die "$nodes_file:$n: expected 'ROLE SSH-NAME LAN-ADDRESS'"
  [[ "$host" =~ ^[A-Za-z0-9@._-]+$ ]] || die "$nodes_file:$n: unusable ssh name '$host'"
  [[ "$addr" =~ ^[0-9]{1,3}(\.[0-9]{1,3}){3}$ ]] || die "$nodes_file:$n: '$addr' is not a numeric IPv4 address (host names are not resolved)"
  [[ -z "${line_of[h:$host]:-}" ]] || die "$nodes_file:$n: duplicate host $host (also line ${line_of[h:$host]}): one role per node"
  [[ -z "${line_of[a:$addr]:-}" ]] || die "$nodes_file:$n: duplicate address $addr (also line ${line_of[a:$addr]})"
  line_of[h:$host]=$n line_of[a:$addr]=$n
  case "$role" in
    zk) zk+=("$host") zk_addr+=("$addr") ;;
    memory) mem+=("$host") mem_addr+=("$addr") ;;
    compute) cn+=("$host") cn_addr+=("$addr") ;;
    *) die "$nodes_file:$n: unknown role '$role' (zk, memory or compute)" ;;
  esac
done <"$nodes_file"
[[ ${#zk[@]} -eq 3 ]] || die "$nodes_file: needs exactly 3 zk nodes (the ZooKeeper ensemble, one pandora-fd replica each), found ${#zk[@]}"
[[ ${#mem[@]} -ge 1 ]] || die "$nodes_file: needs at least 1 memory node, found none"
[[ ${#cn[@]} -ge 1 ]] || die "$nodes_file: needs at least 1 compute node, found none"
all_hosts=("${zk[@]}" "${mem[@]}" "${cn[@]}")

# --crash SECONDS:NODE, checked against the list and sorted by time.
declare -A crashed=()
for c in ${crashes[@]+"${crashes[@]}"}; do
  t="${c%%:*}" h="${c#*:}"
  [[ "$c" == *:* && "$t" =~ ^[0-9]+$ && "$t" -lt "$seconds" ]] || die "--crash '$c': expected SECONDS:NODE with SECONDS below --seconds ($seconds)"
  [[ " ${cn[*]} " == *" $h "* ]] || die "--crash '$c': $h is not a compute node of $nodes_file"
  [[ -z "${crashed[$h]:-}" ]] || die "--crash '$c': $h is crashed twice (a killed node stays down)"
  crashed[$h]=$t
done
[[ ${#crashed[@]} -lt ${#cn[@]} ]] || die "--crash: leave at least one compute node running (the plots measure the survivors)"
mapfile -t crashes < <(for h in "${!crashed[@]}"; do echo "${crashed[$h]} $h"; done | sort -n)

# --- Rendering ---------------------------------------------------------------
# Fixed ports: the experiment LAN is ours alone.
memd_port=7000 fd_port=7100 zk_client=2181 zk_quorum=2888 zk_election=3888
rundir="$remote_dir/run" bin="$remote_dir/src/build/release"
zk_connect="${zk_addr[0]}:$zk_client,${zk_addr[1]}:$zk_client,${zk_addr[2]}:$zk_client"
# The memory daemons heartbeat the detector's replicas, so a dead one is
# failed over (recovery/README.md, "A memory node's failure").
fd_replicas="${zk_addr[0]}:$fd_port,${zk_addr[1]}:$fd_port,${zk_addr[2]}:$fd_port"
endpoints="$(printf "%s:$memd_port," "${mem_addr[@]}")" endpoints="${endpoints%,}"
# One ZooKeeper server per zk node. deploy/local/zookeeper.sh runs a whole
# ensemble on 127.0.0.1 with ports it picks, and has no mode for one server of
# a multi-host ensemble, so the configs are written here (write_config) and the
# server started with the same jars as it uses (Debian's zookeeper package).
zk_classpath=/etc/zookeeper/conf:/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-log4j12.jar:/usr/share/java/log4j-1.2.jar
# BatchMode: fail instead of waiting for a password nobody types; fresh
# CloudLab nodes have host keys we have not seen yet.
ssh_opts=(-o BatchMode=yes -o ConnectTimeout=20 -o StrictHostKeyChecking=accept-new)

dry() { [[ $dry_run -eq 1 ]]; }
# on HOST COMMAND: run COMMAND in a shell on HOST.
on() {
  if dry; then printf "+ ssh %s '%s'\n" "$1" "$2"; return 0; fi
  ssh -n "${ssh_opts[@]}" "$1" "$2"  # -n: never read our stdin
}
# copy SRC... DEST: scp -p keeps the modes (the secret stays 600 on the node).
copy() {
  if dry; then echo "+ scp -p$(printf ' %q' "$@")"; return 0; fi
  scp -p "${ssh_opts[@]}" "$@"
}
local_run() {
  if dry; then echo "+$(printf ' %q' "$@")"; return 0; fi
  "$@"
}
# Remote snippets. daemon NAME CMD: start CMD detached from the ssh session
# (setsid, every stream redirected, so ssh returns), its pid in NAME.pid.
daemon() { echo "setsid nohup $2 </dev/null >$1.log 2>&1 & echo \$! >$1.pid"; }
# wait_until COND PIDFILE LOG SECONDS: until COND holds while the process lives.
wait_until() {
  echo "for t in \$(seq $(($4 * 10))); do $1 && exit 0; kill -0 \$(cat $2) 2>/dev/null || break; sleep 0.1; done; tail -n 20 $3; exit 1"
}
verbs_flags() {
  # Only what the user chose: pandora-memd and pandora-bench discover the
  # rest on each node (device, port, GID, MTU), so nodes whose NICs differ
  # still work.
  [[ "$backend" == verbs ]] || return 0
  local f=""
  [[ -z "$rdma_device" ]] || f+=" --rdma-device $rdma_device"
  [[ "$rdma_port" == 0 ]] || f+=" --rdma-port $rdma_port"
  [[ "$rdma_gid_index" == auto ]] || f+=" --rdma-gid-index $rdma_gid_index"
  echo "$f"
}
# memd serves verbs only where it finds an RDMA device (--verbs auto); asked
# for verbs, it must fail at start rather than leave the benches without it.
memd_verbs_flags() { [[ "$backend" != verbs ]] || echo " --verbs on$(verbs_flags)"; }
bench_flags() {
  echo "--config $rundir/cluster.conf --workload $workload --protocol $protocol --backend $backend$(verbs_flags)${bench_args[*]+ ${bench_args[*]}}"
}

# --- Commands ----------------------------------------------------------------
install_host() {
  local h="$1"
  on "$h" "umask 077 && mkdir -p $remote_dir/src $rundir"
  copy "$dir/pandora-src.tar.gz" "$h:$remote_dir/"
  on "$h" "tar -xzf $remote_dir/pandora-src.tar.gz -C $remote_dir/src && bash $remote_dir/src/deploy/setup.sh release >$rundir/setup.log 2>&1 || { tail -n 30 $rundir/setup.log; exit 1; }"
}

cmd_install() {
  (umask 077 && mkdir -p "$dir")
  [[ -z "$(git -C "$root" status --porcelain)" ]] || warn "uncommitted changes in $root are not shipped (git archive HEAD)"
  say "install: $(git -C "$root" rev-parse --short HEAD) on ${#all_hosts[@]} nodes"
  local_run git -C "$root" archive --format=tar.gz -o "$dir/pandora-src.tar.gz" HEAD
  if dry; then
    for h in "${all_hosts[@]}"; do install_host "$h"; done
    return
  fi
  local -A pid=()
  for h in "${all_hosts[@]}"; do install_host "$h" >"$dir/install-$h.log" 2>&1 & pid[$h]=$!; done
  local failed=()
  for h in "${all_hosts[@]}"; do wait "${pid[$h]}" || failed+=("$h"); done
  [[ ${#failed[@]} -eq 0 ]] || die "install failed on ${failed[*]} (see $dir/install-<node>.log)"
}

# The cluster config, written here and copied to every node.
write_config() {
  (umask 077 && mkdir -p "$dir")
  # Only a file ever holds the secret: od writes into it, scp -p copies it.
  [[ -s "$dir/secret" ]] || (umask 077 && od -An -N32 -tx1 /dev/urandom | tr -d ' \n' >"$dir/secret")
  chmod 600 "$dir/secret"
  [[ -n "$cluster_id" ]] || cluster_id="$(cat "$dir/cluster_id" 2>/dev/null || true)"
  # 0 is not a valid cluster id; a leading 1 rules it out.
  [[ -n "$cluster_id" ]] || cluster_id="0x1$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
  echo "$cluster_id" >"$dir/cluster_id"
  # pandora-bench, pandora-fd and pandora-ctl read it with --config.
  cat >"$dir/cluster.conf" <<CONF
cluster-id = $cluster_id
secret-file = $rundir/secret
zookeeper = $zk_connect
zk-root = /pandora
CONF
  local i
  for i in 1 2 3; do
    cat >"$dir/zk$i.cfg" <<CFG
tickTime=500
initLimit=10
syncLimit=5
dataDir=$rundir/zk/data
dataLogDir=$rundir/zk/txlog
clientPort=$zk_client
clientPortAddress=${zk_addr[$((i - 1))]}
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=srvr,ruok,mntr,stat
server.1=${zk_addr[0]}:$zk_quorum:$zk_election
server.2=${zk_addr[1]}:$zk_quorum:$zk_election
server.3=${zk_addr[2]}:$zk_quorum:$zk_election
CFG
  done
  say "cluster config in $dir (secret mode 600): cluster id $cluster_id, zookeeper $zk_connect, memory nodes $endpoints"
  sed 's/^/#   cluster.conf: /' "$dir/cluster.conf"
}

cmd_start() {
  write_config
  local h i
  for h in "${all_hosts[@]}"; do
    on "$h" "umask 077 && mkdir -p $rundir"
    copy "$dir/secret" "$dir/cluster.conf" "$h:$rundir/"
  done
  say "memory daemons: ${mem[*]}"
  for i in "${!mem[@]}"; do
    # A fresh region each start: the ZooKeeper tree and the tables are new too.
    local region="$region_dir/mem$((i + 1)).pm"
    on "${mem[$i]}" "cd $rundir && umask 077 && mkdir -p $region_dir && rm -f $region memd.port && PMEM_IS_PMEM_FORCE=1 $(
      daemon memd "$bin/memory/pandora-memd --pm-path $region --size $region_size --node-id $((i + 1)) --listen ${mem_addr[$i]}:$memd_port --port-file $rundir/memd.port --cluster-id $cluster_id --secret-file $rundir/secret --threads $memd_threads --fd-replicas $fd_replicas$(memd_verbs_flags)"
    ) && $(wait_until "test -s memd.port" memd.pid memd.log 60)"
  done
  say "ZooKeeper ensemble: ${zk[*]}"
  for i in 0 1 2; do
    copy "$dir/zk$((i + 1)).cfg" "${zk[$i]}:$rundir/zk.cfg"
    on "${zk[$i]}" "cd $rundir && rm -rf zk && mkdir -p zk/data zk/txlog && echo $((i + 1)) >zk/data/myid && $(
      daemon zk "java -Xmx2g -Djava.net.preferIPv4Stack=true -Dzookeeper.root.logger=INFO,CONSOLE -cp $zk_classpath org.apache.zookeeper.server.quorum.QuorumPeerMain $rundir/zk.cfg")"
  done
  # Exit 4: ZooKeeper (still electing a leader) or a memory node unavailable.
  on "${zk[0]}" "cd $rundir && for t in \$(seq 60); do rc=0; $bin/deploy/pandora-ctl init --config cluster.conf --memory-nodes $endpoints --protocol $protocol </dev/null || rc=\$?; [ \$rc -ne 4 ] && exit \$rc; sleep 1; done; exit 4"
  # Loaded before the detector starts, so the CPU-heavy loader is never suspected.
  say "loading $workload from ${cn[0]}"
  on "${cn[0]}" "cd $rundir && $bin/workloads/bench/pandora-bench $(bench_flags) --load --seconds 0 --no-check </dev/null >load.log 2>&1 || { tail -n 20 load.log; exit 1; }"
  say "failure detector: one pandora-fd replica on each of ${zk[*]}"
  for i in 0 1 2; do
    on "${zk[$i]}" "cd $rundir && $(daemon fd "$bin/recovery/pandora-fd --config cluster.conf --replica-id $((i + 1)) --replicas 3 --listen ${zk_addr[$i]}:$fd_port --timeout-us $fd_timeout_us")"
  done
  on "${zk[0]}" "cd $rundir && for t in \$(seq 60); do $bin/deploy/pandora-ctl status --config cluster.conf </dev/null 2>/dev/null | grep -q \"^fd replicas (3):\" && exit 0; sleep 1; done; echo the pandora-fd replicas did not all register within 60 s; exit 1"
}

cmd_run() {
  local i h t k=0 kill_ns vpid survivors=()
  say "benches: ${cn[*]}, $workload, ${seconds} s; crashes: ${crashes[*]:-none}"
  for i in "${!cn[@]}"; do
    # One join at a time, as deploy/failover/timeline.sh does (each updates the same registry node).
    on "${cn[$i]}" "cd $rundir && rm -f bench.json bench.pid && $(
      daemon bench "$bin/workloads/bench/pandora-bench $(bench_flags) --seconds $seconds --warmup-seconds 1 --threads $threads --coordinators $coordinators --timeline-ms 1 --no-check --seed $((i + 1)) --report $rundir/bench.json"
    ) && $(wait_until "grep -q \"^joined the cluster as pid\" bench.log" bench.pid bench.log 60)"
  done
  local t0=$SECONDS
  : >"$dir/crashes.txt"
  for c in ${crashes[@]+"${crashes[@]}"}; do
    read -r t h <<<"$c"
    k=$((k + 1))
    local wait_s=$((t - (SECONDS - t0)))
    [[ $wait_s -le 0 ]] || local_run sleep "$wait_s"
    # The kill instant is CLOCK_REALTIME on the victim, taken just before kill -9.
    local kill_cmd="cd $rundir && vpid=\$(grep -m1 -o \"as pid [0-9]*\" bench.log | cut -d\" \" -f3) && t=\$(date +%s%N) && kill -9 \$(cat bench.pid) && echo \$t \$vpid"
    if dry; then on "$h" "$kill_cmd"; kill_ns=KILL_NS vpid=PID; else read -r kill_ns vpid < <(on "$h" "$kill_cmd") || true; fi
    [[ "$kill_ns $vpid" =~ ^[0-9]+\ [0-9]+$ ]] || dry || die "the kill of $h at +${t} s failed (no kill time and pid came back)"
    echo "$k $h $kill_ns $vpid" >>"$dir/crashes.txt"
    on "${zk[0]}" "python3 $remote_dir/src/deploy/failover/zk_dump.py --zookeeper $zk_connect --root /pandora --pid $vpid --wait-done-s 30 >$rundir/recovery-$vpid.json"
  done
  for i in "${!cn[@]}"; do
    [[ -z "${crashed[${cn[$i]}]:-}" ]] || continue
    survivors+=("$dir/cn$((i + 1))/bench.json")
    on "${cn[$i]}" "cd $rundir && for t in \$(seq $((seconds + 120))); do kill -0 \$(cat bench.pid) 2>/dev/null || { tail -n 3 bench.log; exit 0; }; sleep 1; done; echo bench still running; exit 1"
  done
  collect
  while read -r k h kill_ns vpid; do
    local_run python3 "$root/deploy/failover/plot_timeline.py" --kill-ns "$kill_ns" --recovery "$dir/zk1/recovery-$vpid.json" \
      --pid "$vpid" --png "$dir/crash$k.png" --summary "$dir/crash$k.txt" --title "$workload, $protocol: $h killed" \
      "${survivors[@]}" || warn "no plot for crash $k (python3 needs matplotlib: bash deploy/failover/ensure_matplotlib.sh)"
  done <"$dir/crashes.txt"  # with --dry-run: KILL_NS and PID stand for what the kill prints
}

# Logs and reports into DIR/<local name>/; a node may lack some files (a killed bench has no report).
collect() {
  local i
  for i in 0 1 2; do
    mkdir -p "$dir/zk$((i + 1))"
    copy "${zk[$i]}:$rundir/*.log" "$dir/zk$((i + 1))/" || warn "could not copy the logs of ${zk[$i]}"
  done
  [[ ${#crashed[@]} -eq 0 ]] || copy "${zk[0]}:$rundir/recovery-*.json" "$dir/zk1/" || warn "no recovery records from ${zk[0]}"
  for i in "${!mem[@]}"; do
    mkdir -p "$dir/mem$((i + 1))"
    copy "${mem[$i]}:$rundir/*.log" "$dir/mem$((i + 1))/" || warn "could not copy the logs of ${mem[$i]}"
  done
  for i in "${!cn[@]}"; do
    mkdir -p "$dir/cn$((i + 1))"
    copy "${cn[$i]}:$rundir/*.log" "${cn[$i]}:$rundir/bench.json" "$dir/cn$((i + 1))/" || warn "could not copy everything from ${cn[$i]}"
  done
  say "results in $dir"
}

# stop_pid HOST PIDFILE WORD: SIGTERM the recorded process if its command line
# still names WORD (a recycled pid is left alone), wait up to 10 s.
stop_pid() {
  on "$1" "cd $rundir 2>/dev/null && [ -f $2 ] || exit 0; p=\$(cat $2); grep -qa $3 /proc/\$p/cmdline 2>/dev/null && kill \$p; for t in \$(seq 100); do kill -0 \$p 2>/dev/null || break; sleep 0.1; done; rm -f $2"
}

cmd_stop() {
  local h
  # The detector first, so it does not take the daemons' exit for failures.
  for h in "${zk[@]}"; do stop_pid "$h" fd.pid pandora-fd; done
  for h in "${cn[@]}"; do stop_pid "$h" bench.pid pandora-bench; done
  for h in "${mem[@]}"; do stop_pid "$h" memd.pid pandora-memd && on "$h" "rm -rf $region_dir"; done
  for h in "${zk[@]}"; do stop_pid "$h" zk.pid QuorumPeerMain; done
  say "stopped"
}

case "$cmd" in
  install|start|run|stop) "cmd_$cmd" ;;
  all)
    cmd_install
    trap 'cmd_stop || true' EXIT  # a failed start or run still stops the cluster
    cmd_start
    cmd_run
    ;;
esac
