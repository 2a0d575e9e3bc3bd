#!/usr/bin/python3
"""A host on VLAN 100 behind a router's L3 sub-interface, as raw frames (the kernels here have
no 802.1Q devices). Run in the tester namespace:

    l3sub.py PORT VLAN MY_IP ROUTER_IP FAR_IP

Answers the router's ARP requests for MY_IP (tagged), asks for ROUTER_IP's MAC (tagged), pings
ROUTER_IP and then FAR_IP through it (tagged echo requests), and prints one JSON object: the
router's MAC, and for each step whether the answer came and with which VLAN tags.
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
PACKET_OUTGOING = 4


def ip4(text):
    return socket.inet_aton(text)


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


def tagged(dst, src, vlan, ethertype, payload):
    return dst + src + struct.pack("!HHH", 0x8100, vlan, ethertype) + payload


def arp(op, sha, spa, tha, tpa):
    return struct.pack("!HHBBH", 1, 0x0800, 6, 4, op) + sha + spa + tha + tpa


def echo(src, dst, ident, seq):
    icmp = struct.pack("!BBHHH", 8, 0, 0, ident, seq) + b"sluice-l3-sub"
    icmp = icmp[:2] + struct.pack("!H", checksum(icmp)) + icmp[4:]
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(icmp), seq, 0, 64, 1, 0, src, dst)
    hdr = hdr[:10] + struct.pack("!H", checksum(hdr)) + hdr[12:]
    return hdr + icmp


def frames(sock, seconds):
    """(vlan ids, ethertype, payload) of each frame received for `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        ready, _, _ = select.select([sock], [], [], left)
        if not ready:
            continue
        data, anc, _, addr = sock.recvmsg(65536, socket.CMSG_SPACE(64))
        if addr[2] == PACKET_OUTGOING:
            continue
        vids = []
        for level, kind, blob in anc:
            if level == SOL_PACKET and kind == PACKET_AUXDATA and len(blob) >= 20:
                if struct.unpack("I", blob[0:4])[0] & TP_STATUS_VLAN_VALID:
                    vids.append(struct.unpack("H", blob[16:18])[0] & 0x0FFF)
        at = 12
        while struct.unpack("!H", data[at:at + 2])[0] in (0x8100, 0x88A8):
            vids.append(struct.unpack("!H", data[at + 2:at + 4])[0] & 0x0FFF)
            at += 4
        yield data, vids, struct.unpack("!H", data[at:at + 2])[0], data[at + 2:]


def main():
    port, vlan = sys.argv[1], int(sys.argv[2])
    me, router, far = ip4(sys.argv[3]), ip4(sys.argv[4]), ip4(sys.argv[5])
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((port, 0))
    s.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
    mac = open("/sys/class/net/%s/address" % port).read().strip()
    mine = bytes(int(b, 16) for b in mac.split(":"))
    out = {"arp": None, "ping_router": None, "ping_far": None, "answered_arp": 0}

    def handle(data, vids, etype, body, want):
        """Answer ARP for us; return what `want` matches."""
        if etype == 0x0806 and body[6:8] == b"\0\1" and body[24:28] == me:
            out["answered_arp"] += 1
            reply = arp(2, mine, me, body[8:14], body[14:18])
            s.send(tagged(body[8:14], mine, vlan, 0x0806, reply))
            return None
        return want(data, vids, etype, body)

    def wait(want, seconds=2.0):
        for data, vids, etype, body in frames(s, seconds):
            got = handle(data, vids, etype, body, want)
            if got is not None:
                return got
        return None

    s.send(tagged(b"\xff" * 6, mine, vlan, 0x0806, arp(1, mine, me, b"\0" * 6, router)))
    got = wait(lambda d, v, t, b: (b[8:14], v) if t == 0x0806 and b[6:8] == b"\0\2"
               and b[14:18] == router else None)
    if got is None:
        print(json.dumps(out))
        return
    router_mac, vids = got
    out["arp"] = {"mac": ":".join("%02x" % x for x in router_mac), "vlans": vids}
    for key, target in (("ping_router", router), ("ping_far", far)):
        for seq in range(1, 4):
            s.send(tagged(router_mac, mine, vlan, 0x0800, echo(me, target, 0x51CE, seq)))
            got = wait(lambda d, v, t, b: v if t == 0x0800 and b[9] == 1 and b[12:16] == target
                       and b[20] == 0 else None)
            if got is not None:
                out[key] = {"vlans": got, "seq": seq}
                break
    print(json.dumps(out))


main()
