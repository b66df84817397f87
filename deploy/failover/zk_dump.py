#!/usr/bin/env python3
"""Reads Pandora's fail-over records from ZooKeeper and prints them as JSON.

    python3 deploy/failover/zk_dump.py --zookeeper HOST:PORT,... [--root /pandora]
        [--pid N] [--wait-done-s S]

Prints one JSON object:

    {"recoveries": {"<pid>": {"pid": .., "step": "done", "detected_ns": ..,
                              "start_record_us": .., ...}},
     "failed": {"<pid>": {"published_ns": ..}},
     "members": ["<pid>", ...]}

The records are the "key=value" lines of recovery/registry.h (numbers are
converted to int). With --pid N and --wait-done-s S it polls (every 2 ms)
until <root>/recoveries/N is at step "done" or S seconds pass (exit status 3
on timeout), then prints only that pid's records.

A minimal client of ZooKeeper's wire protocol (jute; getChildren and getData
only, no watches), so no JVM start (zkCli.sh takes about a second) and no
package beyond python3. Loopback use; the first server that answers is used.
"""
import argparse
import json
import random
import socket
import struct
import sys
import time

OP_GET_DATA = 4
OP_GET_CHILDREN = 8
OP_CLOSE = -11
ERR_NO_NODE = -101


class ZkError(Exception):
    pass


class Zk:
    def __init__(self, hosts, timeout_s=5.0):
        last = None
        hosts_list = hosts.split(",")
        random.shuffle(hosts_list)
        for hp in hosts_list:
            host, port = hp.strip().rsplit(":", 1)
            try:
                self.sock = socket.create_connection((host, int(port)), timeout=timeout_s)
                self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self._connect()
                self.xid = 0
                return
            except (OSError, ZkError) as e:  # try the next server
                last = e
        raise ZkError(f"no ZooKeeper server of {hosts} answered: {last}")

    def _send(self, payload):
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)

    def _recv_exact(self, n):
        out = b""
        while len(out) < n:
            b = self.sock.recv(n - len(out))
            if not b:
                raise ZkError("connection closed by the server")
            out += b
        return out

    def _recv(self):
        (n,) = struct.unpack(">i", self._recv_exact(4))
        return self._recv_exact(n)

    def _connect(self):
        # ConnectRequest: protocolVersion, lastZxidSeen, timeOut, sessionId,
        # passwd (buffer), readOnly.
        req = struct.pack(">iqiqi", 0, 0, 10000, 0, 16) + b"\0" * 16 + b"\0"
        self._send(req)
        resp = self._recv()
        if len(resp) < 16:
            raise ZkError("short connect response")
        _, timeout, session = struct.unpack(">iiq", resp[:16])
        if timeout <= 0:
            raise ZkError("session refused (server not serving?)")

    def _call(self, op, body):
        self.xid += 1
        self._send(struct.pack(">ii", self.xid, op) + body)
        while True:
            resp = self._recv()
            xid, _zxid, err = struct.unpack(">iqi", resp[:16])
            if xid == -1:  # a watch event: we set none, but skip it anyway
                continue
            if xid != self.xid:
                raise ZkError(f"reply for xid {xid}, expected {self.xid}")
            return err, resp[16:]

    @staticmethod
    def _path(path):
        p = path.encode()
        return struct.pack(">i", len(p)) + p + b"\0"  # path + watch=false

    def get_children(self, path):
        err, body = self._call(OP_GET_CHILDREN, self._path(path))
        if err == ERR_NO_NODE:
            return None
        if err != 0:
            raise ZkError(f"getChildren {path}: error {err}")
        (count,) = struct.unpack(">i", body[:4])
        off, out = 4, []
        for _ in range(max(count, 0)):
            (n,) = struct.unpack(">i", body[off:off + 4])
            off += 4
            out.append(body[off:off + n].decode())
            off += n
        return out

    def get_data(self, path):
        err, body = self._call(OP_GET_DATA, self._path(path))
        if err == ERR_NO_NODE:
            return None
        if err != 0:
            raise ZkError(f"getData {path}: error {err}")
        (n,) = struct.unpack(">i", body[:4])
        return body[4:4 + n].decode() if n > 0 else ""

    def close(self):
        try:
            self.xid += 1
            self._send(struct.pack(">ii", self.xid, OP_CLOSE))
        except OSError:
            pass
        self.sock.close()


def parse_fields(text):
    out = {}
    for line in (text or "").splitlines():
        if "=" not in line:
            continue
        k, v = line.split("=", 1)
        out[k] = int(v) if v.isdigit() else v
    return out


def dump(zk, root, only_pid=None):
    res = {"recoveries": {}, "failed": {}, "members": []}
    pids = [str(only_pid)] if only_pid is not None else (zk.get_children(f"{root}/recoveries") or [])
    for p in pids:
        d = zk.get_data(f"{root}/recoveries/{p}")
        if d is not None:
            res["recoveries"][p] = parse_fields(d)
    pids = [str(only_pid)] if only_pid is not None else (zk.get_children(f"{root}/failed") or [])
    for p in pids:
        d = zk.get_data(f"{root}/failed/{p}")
        if d is not None:
            res["failed"][p] = parse_fields(d)
    res["members"] = sorted(zk.get_children(f"{root}/compute") or [], key=int)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--zookeeper", required=True, help="HOST:PORT,HOST:PORT,...")
    ap.add_argument("--root", default="/pandora", help="the cluster's ZooKeeper path [/pandora]")
    ap.add_argument("--pid", type=int, help="only this pid's records")
    ap.add_argument("--wait-done-s", type=float, default=0.0,
                    help="with --pid: wait until its recovery record is at step done")
    ap.add_argument("--retry-s", type=float, default=15.0,
                    help="keep retrying this long while no server answers (an ensemble re-electing)")
    a = ap.parse_args()
    deadline = time.monotonic() + a.wait_done_s
    retry_until = time.monotonic() + max(a.retry_s, a.wait_done_s)
    zk = None
    res = None
    while True:
        try:
            if zk is None:
                zk = Zk(a.zookeeper)
            res = dump(zk, a.root, a.pid)
        except (ZkError, OSError, struct.error) as e:
            # A server that lost its quorum closes the connection: reconnect
            # (to any server) until the ensemble serves again.
            if zk is not None:
                try:
                    zk.sock.close()
                except OSError:
                    pass
                zk = None
            if time.monotonic() >= retry_until:
                print(f"zk_dump.py: {e}", file=sys.stderr)
                return 4
            time.sleep(0.05)
            continue
        if a.pid is None or a.wait_done_s <= 0:
            break
        rec = res["recoveries"].get(str(a.pid))
        if rec and rec.get("step") == "done":
            break
        if time.monotonic() >= deadline:
            print(json.dumps(res))
            print(f"zk_dump.py: pid {a.pid}'s recovery not done after {a.wait_done_s} s", file=sys.stderr)
            return 3
        time.sleep(0.002)
    zk.close()
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
