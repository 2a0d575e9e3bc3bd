"""Reads a pcap of `sluice gen` frames with scapy, an implementation independent of sluice's,
and checks every frame: its VLAN tags, IPv4 or IPv6 header, UDP or TCP header, lengths and
checksums (recomputed by scapy), the test header, and for TCP each flow's segments (a SYN
first, then ACKs whose sequence numbers advance by the payload, FIN+ACK last).

usage: check.py PCAP FAMILY L4 FLOWS COUNT TAGS   (TAGS: none, vlan:ID or qinq:OUTER,INNER)
Prints "ok FRAMES" or fails with the first frame that is wrong.
"""
import sys

from scapy.all import Dot1AD, Dot1Q, Ether, IP, IPv6, TCP, UDP, rdpcap

pcap, family, l4, flows, count, tags = sys.argv[1:7]
flows, count = int(flows), int(count)

MAGIC, MAGIC_SHORT = b"\x51\xce", b"\x51\xcd"
CLOSE = 1 << 46


def fail(i, why, p):
    sys.exit(f"frame {i}: {why}: {p.summary()} {bytes(p).hex()}")


def rebuilt(p, layer, field):
    """The value scapy computes for a checksum field when it builds the frame afresh."""
    q = Ether(bytes(p))
    delattr(q[layer], field)
    return Ether(bytes(q))[layer].getfieldval(field)


seen = set()
by_flow = {}
frames = rdpcap(pcap)
for i, p in enumerate(frames):
    if tags.startswith("vlan:"):
        if not (p.haslayer(Dot1Q) and p[Dot1Q].vlan == int(tags[5:])):
            fail(i, "no 802.1Q tag " + tags, p)
    elif tags.startswith("qinq:"):
        outer, inner = (int(x) for x in tags[5:].split(","))
        if not (p.haslayer(Dot1AD) and p[Dot1AD].vlan == outer and p[Dot1Q].vlan == inner):
            fail(i, "no QinQ tags " + tags, p)
    ipl = IPv6 if family == "ipv6" else IP
    l4l = TCP if l4 == "tcp" else UDP
    if not (p.haslayer(ipl) and p.haslayer(l4l)):
        fail(i, f"not {family}/{l4}", p)
    ip, seg = p[ipl], p[l4l]
    if family == "ipv6":
        if ip.plen != len(bytes(ip.payload)) or ip.hlim != 64 or ip.nh != (6 if l4 == "tcp" else 17):
            fail(i, "IPv6 header", p)
        if not (ip.src.startswith("2001:db8:198:18:") and ip.dst.startswith("2001:db8:198:19:")):
            fail(i, "IPv6 addresses outside the default prefixes", p)
    else:
        if ip.len != len(bytes(ip)) or ip.ttl != 64 or ip.chksum != rebuilt(p, IP, "chksum"):
            fail(i, "IPv4 header", p)
    # The L4 checksum, with its pseudo-header, as scapy computes it.
    if seg.chksum != rebuilt(p, l4l, "chksum"):
        fail(i, f"{l4} checksum {seg.chksum:#x}, scapy says {rebuilt(p, l4l, 'chksum'):#x}", p)
    if l4 == "udp" and seg.len != len(bytes(seg)):
        fail(i, "UDP length", p)
    data = bytes(seg.payload)
    short = len(data) < 16
    if data[:2] != (MAGIC_SHORT if short else MAGIC):
        fail(i, "test header magic", p)
    seq = int.from_bytes(data[2:8], "big")
    key = (ip.src, ip.dst, seg.sport, seg.dport)
    by_flow.setdefault(key, []).append((seq, seg, len(data), i, p))
    if not seq & CLOSE:
        if seq in seen:
            fail(i, f"sequence number {seq} twice", p)
        seen.add(seq)

if seen != set(range(count)):
    sys.exit(f"sequence numbers: {len(seen)} of {count}, missing {sorted(set(range(count)) - seen)[:10]}")
if len(by_flow) != min(flows, count):
    sys.exit(f"{len(by_flow)} flows, expected {min(flows, count)}")

if l4 == "tcp":
    for key, segs in by_flow.items():
        first = segs[0][1]
        if first.flags != "S" or first.ack != 0:
            fail(segs[0][3], f"flow {key} opens with {first.flags}, not a SYN", segs[0][4])
        nxt = first.seq + 1 + segs[0][2]
        ack = None
        for n, (seq, s, length, i, p) in enumerate(segs[1:], 1):
            closing = bool(seq & CLOSE)
            want = "FA" if closing else "A"
            if s.flags != want:
                fail(i, f"flow {key} segment {n}: flags {s.flags}, expected {want}", p)
            if closing and n != len(segs) - 1:
                fail(i, f"flow {key}: FIN before the last segment", p)
            if s.seq != nxt % (1 << 32):
                fail(i, f"flow {key} segment {n}: seq {s.seq}, expected {nxt % (1 << 32)}", p)
            if ack is not None and s.ack != ack:
                fail(i, f"flow {key} segment {n}: ack moved", p)
            ack = s.ack
            nxt = s.seq + length
        if segs[-1][1].flags != "FA":
            fail(segs[-1][3], f"flow {key} not closed with FIN+ACK", segs[-1][4])

print("ok", len(frames))
