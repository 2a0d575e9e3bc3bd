#!/usr/bin/python3
"""Send crafted Ethernet frames on the tester's ports and report where each step's frames came
out. Run inside the tester namespace against one DUT (a sluice bridge or a Linux bridge):

    ports.py PORT,PORT,... STEPS.json

STEPS.json is a list of steps; each sends frames and then listens on every port:

    {"name": "flood", "send": [{"port": "t0", "src": "02:00:00:00:00:0a",
     "dst": "02:00:00:00:00:0b", "vlan": [100], "count": 1}], "wait_ms": 300}

Only frames of the test's EtherType (0x88b5, IEEE local experimental) carrying the step's tag
are counted, so the kernel's own chatter on the ports never counts. Prints one JSON line per
step: {"name": "flood", "rx": {"t1": 1, "t2": 1}}. (Received tags are not reported: the
kernel hands them to AF_PACKET apart from the frame.)
"""

import json
import select
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003
ETHERTYPE = 0x88B5
PACKET_OUTGOING = 4
TPIDS = {0x8100, 0x88A8}


def mac(text):
    return bytes(int(b, 16) for b in text.split(":"))


def frame(src, dst, vlans, tag, seq):
    head = mac(dst) + mac(src)
    for i, vid in enumerate(vlans):
        tpid = 0x88A8 if len(vlans) == 2 and i == 0 else 0x8100
        head += struct.pack("!HH", tpid, vid)
    payload = struct.pack("!II", tag, seq) + bytes(38)
    return head + struct.pack("!H", ETHERTYPE) + payload


def parse(data):
    """The step tag of one of our frames, or None."""
    at = 12
    while len(data) >= at + 4 and struct.unpack("!H", data[at:at + 2])[0] in TPIDS:
        at += 4
    if len(data) < at + 10 or struct.unpack("!H", data[at:at + 2])[0] != ETHERTYPE:
        return None
    return struct.unpack("!I", data[at + 2:at + 6])[0]


def main():
    ports = sys.argv[1].split(",")
    with open(sys.argv[2]) as f:
        steps = json.load(f)
    socks = {}
    for p in ports:
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        s.bind((p, 0))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        s.setblocking(False)
        socks[p] = s
    by_fd = {s.fileno(): p for p, s in socks.items()}
    for tag, step in enumerate(steps, start=1):
        # Whatever is still queued belongs to an earlier step.
        for s in socks.values():
            try:
                while True:
                    s.recv(65536)
            except BlockingIOError:
                pass
        seq = 0
        for send in step["send"]:
            for _ in range(send.get("count", 1)):
                src = send["src"]
                if send.get("vary_src"):
                    src = "02:%02x:%02x:%02x:00:01" % (seq >> 16 & 255, seq >> 8 & 255, seq & 255)
                socks[send["port"]].send(frame(src, send["dst"], send.get("vlan", []), tag, seq))
                seq += 1
        rx = {}
        deadline = time.monotonic() + step.get("wait_ms", 300) / 1000
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            ready, _, _ = select.select(list(socks.values()), [], [], left)
            for s in ready:
                port = by_fd[s.fileno()]
                while True:
                    try:
                        data, addr = s.recvfrom(65536)
                    except BlockingIOError:
                        break
                    if addr[2] == PACKET_OUTGOING:
                        continue
                    if parse(data) == tag:
                        rx[port] = rx.get(port, 0) + 1
        print(json.dumps({"name": step["name"], "rx": rx}), flush=True)


main()
