#!/usr/bin/python3
"""Send crafted Ethernet frames on the tester's ports and report where each step's frames came
out. Run inside the tester namespace against one DUT (a sluice bridge or a Linux bridge):

    ports.py PORT,PORT,... STEPS.json

STEPS.json is a list of steps; each sends frames and then listens on every port:

    {"name": "flood", "send": [{"port": "t0", "src": "02:00:00:00:00:0a",
     "dst": "02:00:00:00:00:0b", "vlan": [100], "count": 1}], "wait_ms": 300}

Only frames of the test's EtherType (0x88b5, IEEE local experimental) carrying the step's tag
are counted, so the kernel's own chatter on the ports never counts. Prints one JSON line per
step: {"name": "flood", "rx": {"t1": 1, "t2": 1}, "tags": {"t1": ["200"]}}: per port, the
VLAN ids of the frames that arrived tagged ("10.20" for QinQ), outermost first. The kernel may
hand the outer tag apart from the frame (PACKET_AUXDATA): it is put back in front.
"""

import json
import select
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_AUXDATA = 8
TP_STATUS_VLAN_VALID = 1 << 4
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


def arp_request(src, target_ip, tag):
    """A broadcast ARP request for `target_ip` from 198.18.0.TAG (the step's tag)."""
    body = struct.pack("!HHBBH", 1, 0x0800, 6, 4, 1) + mac(src) + bytes([198, 18, 0, tag])
    body += bytes(6) + bytes(int(x) for x in target_ip.split("."))
    return mac("ff:ff:ff:ff:ff:ff") + mac(src) + struct.pack("!H", 0x0806) + body + bytes(18)


def parse_arp(data, tag):
    """'request' or 'reply IP MAC' for an ARP frame of this step (sender or target
    198.18.0.TAG), else None."""
    at = 12
    while len(data) >= at + 4 and struct.unpack("!H", data[at:at + 2])[0] in TPIDS:
        at += 4
    if len(data) < at + 30 or struct.unpack("!H", data[at:at + 2])[0] != 0x0806:
        return None
    body = data[at + 2:]
    op = struct.unpack("!H", body[6:8])[0]
    ours = bytes([198, 18, 0, tag])
    if op == 1 and body[14:18] == ours:
        return "request"
    if op == 2 and body[24:28] == ours:
        ip = ".".join(str(b) for b in body[14:18])
        return "reply %s %s" % (ip, ":".join("%02x" % b for b in body[8:14]))
    return None


def parse(data):
    """(step tag, VLAN ids in the frame) of one of our frames, or None."""
    at, vids = 12, []
    while len(data) >= at + 4 and struct.unpack("!H", data[at:at + 2])[0] in TPIDS:
        vids.append(struct.unpack("!H", data[at + 2:at + 4])[0] & 0x0FFF)
        at += 4
    if len(data) < at + 10 or struct.unpack("!H", data[at:at + 2])[0] != ETHERTYPE:
        return None
    return struct.unpack("!I", data[at + 2:at + 6])[0], vids


def aux_vlan(ancdata):
    """The VLAN id the kernel kept apart from the frame, if any."""
    for level, kind, blob in ancdata:
        if level == SOL_PACKET and kind == PACKET_AUXDATA and len(blob) >= 20:
            status = struct.unpack("I", blob[0:4])[0]
            tci = struct.unpack("H", blob[16:18])[0]
            if status & TP_STATUS_VLAN_VALID:
                return tci & 0x0FFF
    return None


def main():
    ports = sys.argv[1].split(",")
    with open(sys.argv[2]) as f:
        steps = json.load(f)
    socks = {}
    for p in ports:
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        s.bind((p, 0))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        s.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
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
            if "arp_target" in send:
                socks[send["port"]].send(arp_request(send["src"], send["arp_target"], tag))
                continue
            for _ in range(send.get("count", 1)):
                src = send["src"]
                if send.get("vary_src"):
                    src = "02:%02x:%02x:%02x:00:01" % (seq >> 16 & 255, seq >> 8 & 255, seq & 255)
                socks[send["port"]].send(frame(src, send["dst"], send.get("vlan", []), tag, seq))
                seq += 1
        rx, tags, arp = {}, {}, {}
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
                        data, anc, _, addr = s.recvmsg(65536, socket.CMSG_SPACE(64))
                    except BlockingIOError:
                        break
                    if addr[2] == PACKET_OUTGOING:
                        continue
                    kind = parse_arp(data, tag)
                    if kind is not None:
                        rx[port] = rx.get(port, 0) + 1
                        arp.setdefault(port, []).append(kind)
                        continue
                    got = parse(data)
                    if got is None or got[0] != tag:
                        continue
                    rx[port] = rx.get(port, 0) + 1
                    vids = got[1]
                    outer = aux_vlan(anc)
                    if outer is not None:
                        vids = [outer] + vids
                    if vids:
                        stack = ".".join(str(v) for v in vids)
                        if stack not in tags.setdefault(port, []):
                            tags[port].append(stack)
        print(json.dumps({"name": step["name"], "rx": rx, "tags": tags, "arp": arp}), flush=True)


main()
