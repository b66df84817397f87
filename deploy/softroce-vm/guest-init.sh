#!/bin/busybox sh
# PID 1 of the Soft-RoCE VM (deploy/softroce-vm/run.sh copies it into the
# initramfs as /init). Runs under busybox, before any host file is visible:
#
#   1. loads the kernel modules listed in /modules.load, in that order
#      (run.sh resolved them with modprobe --show-depends for this kernel);
#   2. mounts the 9p shares: "ctl" (read-write, run.sh's private directory:
#      cmd.sh in, stage/out/rc back), "hostroot" (the host's / read-only),
#      "share" and "exchange" (optional, read-write, each mounted at the host
#      path it came from; two_vm.sh gives both VMs the same exchange);
#   3. prepares the chroot: proc, sys, devtmpfs, devpts, tmpfs on /tmp, /run
#      and /dev/shm, the control directory at /run/pandora-vm;
#   4. sets eth0 up by hand (QEMU user-mode network, MTU 9000) and creates
#      rxe0 over it with the host's own `rdma` tool, waits for PORT_ACTIVE;
#      with NET1_MAC in the config (two_vm.sh), also sets up the second NIC
#      (the one with that MAC: a private network to the other VM) with
#      NET1_ADDR and NET1_MTU, and rxe0 goes on that NIC instead;
#   5. runs cmd.sh in the chroot as root, output appended to ctl/out and its
#      exit code written to ctl/rc; then powers off (QEMU runs -no-reboot).
#      With STOPPABLE=1 in the config, a file ctl/stop makes init send the
#      command SIGTERM (SIGKILL after STOP_GRACE_S seconds) - two_vm.sh stops
#      one VM's command when the other's has finished.
#
# Progress goes to ctl/stage one word per line (init, net, rxe, run, done);
# a failure writes "fail CODE reason" there (codes as documented in run.sh)
# and on the console (ttyS0, kept in run.sh's console.log).

PATH=/bin
export PATH

/bin/busybox mkdir -p /bin /proc /sys /dev /ctl /host
/bin/busybox --install -s /bin

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
# The initramfs has no /dev/console node (run.sh builds it without root):
# the kernel could not give init a console, so take it now.
exec </dev/null >/dev/console 2>&1

ctl_mounted=0

# Messages carry the guest's uptime (s), like the kernel's own.
log() {
  read -r up _ </proc/uptime
  echo "pandora-vm: [$up] $*" >/dev/console
}

stage() {
  log "stage $1"
  [ "$ctl_mounted" = 1 ] && echo "$1" >>/ctl/stage
}

halt_vm() {
  sync
  [ "$ctl_mounted" = 1 ] && umount /ctl 2>/dev/null
  poweroff -f
  # poweroff -f does not return; if it did, exiting PID 1 panics the kernel
  # and QEMU (-no-reboot, panic=-1) stops.
  exit 1
}

# fail CODE REASON...: reports a harness failure and stops the VM.
fail() {
  code="$1"
  shift
  log "FAILED ($code): $*"
  [ "$ctl_mounted" = 1 ] && echo "fail $code $*" >>/ctl/stage
  halt_vm
}

log "init started"

# 1. modules, in dependency order.
while read -r mod; do
  [ -n "$mod" ] || continue
  insmod "/modules/$mod" || fail 92 "insmod $mod failed"
done </modules.load

# 2. shares. msize: larger 9p messages, fewer round trips through QEMU.
p9opts="trans=virtio,version=9p2000.L,msize=262144"
mount -t 9p -o "$p9opts" ctl /ctl || fail 92 "mounting the control share failed"
ctl_mounted=1
stage init

# shellcheck disable=SC1091
. /ctl/config || fail 92 "reading /ctl/config failed"

# cache=none (the default): the host's files as they are now. cache=loose
# was not measurably faster here under a noisy load and could show stale
# files, e.g. a test binary rebuilt on the host while the VM runs.
mount -t 9p -o "$p9opts,ro" hostroot /host || fail 92 "mounting the host root (9p) failed"

# 3. the chroot's kernel file systems and writable scratch space. The host
# root is read-only, so only directories that exist there can be mount
# points; /dev/pts and /dev/shm live in the (writable) devtmpfs.
mount -t proc proc /host/proc || fail 92 "mounting /proc in the chroot failed"
mount -t sysfs sysfs /host/sys || fail 92 "mounting /sys in the chroot failed"
mount -t devtmpfs devtmpfs /host/dev || fail 92 "mounting /dev in the chroot failed"
mkdir -p /host/dev/pts /host/dev/shm
mount -t devpts devpts /host/dev/pts
mount -t tmpfs -o mode=1777 tmpfs /host/dev/shm || fail 92 "mounting /dev/shm failed"
mount -t tmpfs -o mode=1777 tmpfs /host/tmp || fail 92 "mounting /tmp failed"
mount -t tmpfs -o mode=0755 tmpfs /host/run || fail 92 "mounting /run failed"
mkdir -p /host/run/pandora-vm
mount --bind /ctl /host/run/pandora-vm || fail 92 "bind-mounting the control share failed"
if [ -n "${SHARE:-}" ]; then
  # The share may lie under /tmp or /run (now tmpfs): create its mount point.
  mkdir -p "/host$SHARE" 2>/dev/null
  mount -t 9p -o "$p9opts" share "/host$SHARE" || fail 92 "mounting the share at $SHARE failed"
fi
if [ -n "${EXCHANGE:-}" ]; then
  mkdir -p "/host$EXCHANGE" 2>/dev/null
  mount -t 9p -o "$p9opts" exchange "/host$EXCHANGE" || fail 92 "mounting the exchange directory at $EXCHANGE failed"
fi
if [ -n "${PROJECT:-}" ]; then
  # run.sh's own checkout, when it lies under /tmp, /run or /dev/shm.
  mkdir -p "/host$PROJECT" 2>/dev/null
  mount -t 9p -o "$p9opts,ro" project "/host$PROJECT" || fail 92 "mounting the checkout at $PROJECT failed"
fi

# 4. network and rxe0. QEMU's user-mode network is 10.0.2.0/24; the guest
# takes the address its DHCP server would give (nothing else is contacted:
# run.sh starts it with restrict=on).
ip link set lo up || fail 92 "ip link set lo up failed"
ip link set eth0 mtu 9000 || fail 92 "setting eth0's MTU to 9000 failed"
ip link set eth0 up || fail 92 "ip link set eth0 up failed"
ip addr add "$GUEST_ADDR/24" dev eth0 || fail 92 "adding $GUEST_ADDR to eth0 failed"
ip route add default via "$GATEWAY_ADDR" dev eth0 || fail 92 "adding the default route failed"
echo "$GUEST_HOSTNAME" >/proc/sys/kernel/hostname
rxe_netdev=eth0
if [ -n "${NET1_MAC:-}" ]; then
  # The private NIC, found by its MAC (not by probe order).
  net1=""
  for dev in /sys/class/net/*; do
    [ "$(cat "$dev/address" 2>/dev/null)" = "$NET1_MAC" ] && net1="${dev##*/}"
  done
  [ -n "$net1" ] || fail 92 "no network interface with MAC $NET1_MAC (the second NIC)"
  ip link set "$net1" mtu "${NET1_MTU:-9000}" || fail 92 "setting $net1's MTU to ${NET1_MTU:-9000} failed"
  ip link set "$net1" up || fail 92 "ip link set $net1 up failed"
  ip addr add "$NET1_ADDR" dev "$net1" || fail 92 "adding $NET1_ADDR to $net1 failed"
  rxe_netdev="$net1"
  log "$net1: $NET1_ADDR, MTU ${NET1_MTU:-9000}"
fi
stage net

chroot /host /usr/bin/rdma link add rxe0 type rxe netdev "$rxe_netdev" ||
  fail 91 "rdma link add rxe0 type rxe netdev $rxe_netdev failed"
state_file=/sys/class/infiniband/rxe0/ports/1/state
tries=0
until grep -q ACTIVE "$state_file" 2>/dev/null; do
  tries=$((tries + 1))
  [ "$tries" -le 100 ] || fail 91 "rxe0 port 1 not ACTIVE after 10 s (state: $(cat "$state_file" 2>/dev/null))"
  sleep 0.1
done
stage rxe

# 5. the command, in the chroot, with a clean environment.
stage run
env_i="PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp TMPDIR=/tmp LANG=C.UTF-8 TERM=dumb PANDORA_SOFTROCE_VM=1"
if [ "${STOPPABLE:-0}" = 1 ]; then
  # chroot, env and bash exec into one another and cmd.sh execs the
  # command: $! is the command's pid. Until it has exited (a zombie),
  # watch for ctl/stop.
  # shellcheck disable=SC2086
  chroot /host /usr/bin/env -i $env_i /bin/bash /run/pandora-vm/cmd.sh </dev/null >>/ctl/out 2>&1 &
  cmd_pid=$!
  stopping=0
  waited=0
  while :; do
    read -r _ _ state _ <"/proc/$cmd_pid/stat" 2>/dev/null || break
    [ "$state" = Z ] && break
    if [ "$stopping" = 0 ] && [ -e /ctl/stop ]; then
      log "stop requested: SIGTERM to the command (pid $cmd_pid)"
      kill -TERM "$cmd_pid" 2>/dev/null
      stopping=1
    elif [ "$stopping" = 1 ]; then
      waited=$((waited + 1))
      if [ "$waited" -ge $((${STOP_GRACE_S:-30} * 5)) ]; then
        log "the command ignored SIGTERM for ${STOP_GRACE_S:-30} s: SIGKILL"
        kill -KILL "$cmd_pid" 2>/dev/null
        stopping=2
      fi
    fi
    sleep 0.2
  done
  wait "$cmd_pid"
  rc=$?
else
  # shellcheck disable=SC2086
  chroot /host /usr/bin/env -i $env_i /bin/bash /run/pandora-vm/cmd.sh </dev/null >>/ctl/out 2>&1
  rc=$?
fi
echo "$rc" >/ctl/rc.tmp && mv /ctl/rc.tmp /ctl/rc
stage done
umount "/host$SHARE" 2>/dev/null
[ -z "${EXCHANGE:-}" ] || umount "/host$EXCHANGE" 2>/dev/null
[ -z "${PROJECT:-}" ] || umount "/host$PROJECT" 2>/dev/null
halt_vm
