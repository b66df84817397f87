#!/usr/bin/env python3
"""Writes the fuzz seed corpus: small valid data-plane frames, control
messages of every kind and failure-detector datagrams of every type. Written independently of the C++ encoders (from the
layouts in common/wire/frame.h and control.h), so common_tests' SeedCorpus
test, which decodes every seed, also cross-checks the codecs against a
second implementation. Re-run after a wire-format change:

    python3 tests/fuzz/make_seeds.py
"""
import hashlib
import hmac
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
FRAME_MAGIC = 0x5044
CONTROL_MAGIC = 0x4C544350
CONTROL_VERSION = 6
READ, WRITE, CAS, FAA = 1, 2, 3, 4
HEARTBEAT_MAGIC = 0x54424850
HEARTBEAT_VERSION = 2
# tests/fuzz/fuzz_heartbeat.cc signs with this secret for this cluster.
FUZZ_SECRET = b"fuzz-secret"
FUZZ_CLUSTER = 7


def request(op, length, tag, addr, compare=0, swap=0, payload=b""):
    return struct.pack("<HBBIQQQQ", FRAME_MAGIC, op, 0, length, tag, addr, compare, swap) + payload


def response(op, status, tag, value=0, payload=b""):
    return struct.pack("<HBBIQQ", FRAME_MAGIC, status, op, len(payload), tag, value) + payload


def control(msg_type, body):
    return struct.pack("<IHHI", CONTROL_MAGIC, CONTROL_VERSION, msg_type, len(body)) + body


def string(s):
    b = s.encode()
    return struct.pack("<H", len(b)) + b


def region():
    return struct.pack("<QIIQQQQQQ", 7, 1, 1, 1 << 26, 4096, 8192, 1 << 25, 1 << 20, 0x0123456789ABCDEF)


# common/wire/heartbeat.h: the values of a Stats answer, in order.
REPLICA_STATS_FIELDS = 24
STATS_BODY = 8 + 8 + 2 + 8 * REPLICA_STATS_FIELDS


def heartbeat(msg_type, kind, sender, seq, pids=None, epoch=None, body=None):
    if body is None:
        body = b"" if pids is None else struct.pack("<H", len(pids)) + struct.pack("<%dH" % len(pids), *pids)
    if epoch is not None:  # MemorySuspects: the record epoch of the sender's view first
        body = struct.pack("<Q", epoch) + body
    head = struct.pack("<IHBBQIQQQH", HEARTBEAT_MAGIC, HEARTBEAT_VERSION, msg_type, kind, FUZZ_CLUSTER, sender,
                       0x1122334455667788, seq, 1_700_000_000_000_000_000, len(body))
    data = head + body
    return data + hmac.new(FUZZ_SECRET, data, hashlib.sha256).digest()


def write_all(directory, seeds):
    os.makedirs(directory, exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(directory, name), "wb") as f:
            f.write(data)


def main():
    data = bytes(range(16))
    requests = {
        "req_read": request(READ, 64, 1, 4096),
        "req_write": request(WRITE, len(data), 2, 4160, payload=data),
        "req_cas": request(CAS, 8, 3, 8192, compare=0, swap=0x0001000200000003),
        "req_faa": request(FAA, 8, 4, 8200, compare=1),
    }
    responses = {
        "resp_read": response(READ, 0, 1, payload=data),
        "resp_write_ok": response(WRITE, 0, 2),
        "resp_cas": response(CAS, 0, 3, value=0x0001000200000003),
        "resp_faa_fenced": response(FAA, 1, 4),
        "resp_read_out_of_bounds": response(READ, 3, 5),
    }
    frames = dict(requests)
    frames.update(responses)
    frames["req_stream"] = b"".join(requests.values())
    frames["resp_stream"] = b"".join(responses.values())
    write_all(os.path.join(HERE, "seeds", "frame"), frames)

    nonce = bytes(range(32))
    client_nonce = bytes(range(64, 96))
    mac = bytes(range(32, 64))
    messages = {
        "01_server_hello": control(1, struct.pack("<H", CONTROL_VERSION) + nonce),
        # cluster, role, compute id, pid, incarnation, client nonce, mac
        "02_hello_compute": control(2, struct.pack("<QBHIQ", 7, 1, 1, 4242, 0x1234567890ABCDEF) + client_nonce + mac),
        "02_hello_admin": control(2, struct.pack("<QBHIQ", 7, 2, 0, 4243, 0) + client_nonce + mac),
        "03_hello_ok": control(3, region() + mac),
        "04_error": control(4, struct.pack("<B", 8) + string("wrong cluster secret")),
        "05_ok": control(5, b""),
        "06_setup_tcp": control(6, struct.pack("<B", 0)),
        "06_setup_tcp_frame_mac": control(6, struct.pack("<B", 1)),
        "07_setup_shm": control(7, b""),
        "08_shm_info": control(8, string("/dev/shm/pandora-1.pm.shm.a1b2c3/sock") + nonce
                              + struct.pack("<QQQB", 1 << 26, 0x2d, 123456, 1)),
        "09_fence": control(9, struct.pack("<HH", 1, 3)),
        "09_fence_three": control(9, struct.pack("<HHHH", 3, 3, 9, 4000)),
        "10_stats_request": control(10, b""),
        "11_stats_reply": control(11, struct.pack("<14Q", *range(1, 15))),
        "12_region_info_request": control(12, b""),
        "13_region_info_reply": control(13, region()),
        "14_unfence": control(14, struct.pack("<H", 3)),
        # queue pair address: qpn, psn, gid[16], lid, mtu code, link layer;
        # then SetupVerbs: max_rd_atomic; VerbsInfo: rkey, base va, max_rd_atomic
        "15_setup_verbs": control(15, struct.pack("<II", 0x11, 0x123456) + bytes(10) + b"\xff\xff\x0a\x00\x02\x0f"
                                  + struct.pack("<HBB", 0, 5, 2) + struct.pack("<B", 16)),
        "16_verbs_info": control(16, struct.pack("<II", 0x12, 0x654321) + bytes(10) + b"\xff\xff\x0a\x00\x02\x0f"
                                 + struct.pack("<HBB", 0, 5, 2) + struct.pack("<IQB", 0x1234, 0x7f0000000000, 16)),
    }
    write_all(os.path.join(HERE, "seeds", "control"), messages)

    COMPUTE, MEMORY, REPLICA, ADMIN = 1, 2, 3, 4
    datagrams = {
        "1_heartbeat_compute": heartbeat(1, COMPUTE, 42, 1),
        "1_heartbeat_memory": heartbeat(1, MEMORY, 3, 2),
        "2_suspects_empty": heartbeat(2, REPLICA, 2, 3, []),
        "2_suspects": heartbeat(2, REPLICA, 2, 4, [5, 6, 65535]),
        "3_failed_push": heartbeat(3, REPLICA, 1, 5, [7]),
        "3_failed_push_full": heartbeat(3, REPLICA, 1, 6, list(range(1, 661))),
        "4_memory_suspects": heartbeat(4, REPLICA, 3, 7, [2], epoch=5),
        # a query is all zero padding, as long as the answer
        "5_stats_query": heartbeat(5, ADMIN, 1, 8, body=bytes(STATS_BODY)),
        # answer to query (incarnation 0x1122334455667788, seq 8): values 100, 101, ...
        "6_stats": heartbeat(6, REPLICA, 2, 9, body=struct.pack("<QQH", 0x1122334455667788, 8, REPLICA_STATS_FIELDS)
                             + struct.pack("<%dQ" % REPLICA_STATS_FIELDS, *range(100, 100 + REPLICA_STATS_FIELDS))),
    }
    write_all(os.path.join(HERE, "seeds", "heartbeat"), datagrams)


if __name__ == "__main__":
    main()
