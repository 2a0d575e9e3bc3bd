#!/usr/bin/python3
"""NAT44 conformance cases, run inside the tester namespace against one DUT.

The DUT translates between d0 (inside, facing our t0) and d1 (outside, facing our t1). On t0
we play two inside hosts (a, b: two addresses of one link); on t1 we play the next hop (nh),
remote endpoints beyond it (r1, r2) and a router beyond it (rtr) that sends ICMP errors. The
DUT masquerades to d1's address and forwards d1:80/tcp to b:8080.

A case is a short script of steps: each step sends frames (on t0 or t1), then records what
the DUT sent on t0 and on t1, and later steps answer what came out (a remote replies to the
translated port it saw). One JSON line per case:

    {"case": "udp_port_preserved", "t0": ["2 udp4 r1:53>a:40000 ttl63"], "t1": [...]}

Each string starts with its step's number. Addresses are written by name; a port (or ICMP
identifier) that the case chose prints as its number, any other (one the NAT picked) as
P1, P2, ... in order of first appearance, so that a picked port compares equal between DUTs
and a preserved one shows as preserved. A bad IP, L4 or ICMP checksum adds a word saying so.

Run with Debian's /usr/bin/python3 and python3-scapy:

    cases.py CONFIG.json [--only NAME,...]
"""

import json
import os
import socket
import sys
import time

from scapy.all import ICMP, IP, TCP, UDP, Ether, IPerror, conf

conf.verb = 0
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4

# How long to listen after a step's frames: the DUT answers in well under this.
QUIET = float(os.environ.get("CONFORMANCE_WAIT", "0.3"))


def payload(n):
    return bytes((i * 7) & 0xFF for i in range(n))


def csum(raw):
    s = 0
    if len(raw) % 2:
        raw += b"\0"
    for i in range(0, len(raw), 2):
        s += (raw[i] << 8) | raw[i + 1]
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def l4_ok(ipraw):
    """Whether the TCP/UDP/ICMP checksum of a whole IPv4 datagram is right (None: truncated)."""
    hl = (ipraw[0] & 15) * 4
    total = (ipraw[2] << 8) | ipraw[3]
    proto = ipraw[9]
    if len(ipraw) < total:
        return None
    body = bytes(ipraw[hl:total])
    if proto == 1:
        return csum(body) == 0xFFFF
    if proto == 17 and len(body) >= 8 and body[6:8] == b"\0\0":
        return True  # no checksum
    if proto in (6, 17):
        pseudo = bytes(ipraw[12:20]) + bytes([0, proto]) + len(body).to_bytes(2, "big")
        return csum(pseudo + body) == 0xFFFF
    return None


class Port:
    """A raw socket on one tester interface: sends frames, reads what the DUT sends to us."""

    def __init__(self, name):
        self.name = name
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.sock.bind((name, 0))
        self.sock.setblocking(False)

    def send(self, frame):
        self.sock.send(bytes(frame))

    def read_all(self):
        got = []
        while True:
            try:
                data, addr = self.sock.recvfrom(65535)
            except BlockingIOError:
                return got
            if addr[2] != PACKET_OUTGOING:
                got.append(data)


ICMP4_TYPES = {0: "echo-reply", 3: "unreachable", 8: "echo-request", 11: "time-exceeded", 12: "param-problem"}


class Describer:
    """Frames as normalised strings for one case: names for addresses, labels for ports."""

    def __init__(self, names, known):
        self.names = names
        self.known = set(known)
        self.labels = {}

    def port(self, p):
        if p in self.known:
            return str(p)
        if p not in self.labels:
            self.labels[p] = "P%d" % (len(self.labels) + 1)
        return self.labels[p]

    def addr(self, a):
        return self.names.get(a, a)

    def datagram(self, raw, inner=False):
        """An IPv4 datagram (bytes from its header on). Inner: quoted by an ICMP error."""
        ip = IPerror(raw) if inner else IP(raw)
        hl = ip.ihl * 4
        words = []
        if csum(bytearray(raw[:hl])) != 0xFFFF:
            words.append("bad-ip-checksum")
        pair = lambda sp, dp: "%s:%s>%s:%s" % (self.addr(ip.src), self.port(sp), self.addr(ip.dst), self.port(dp))
        body = raw[hl:]
        if ip.frag:
            words += ["ip4", "%s>%s" % (self.addr(ip.src), self.addr(ip.dst)), "p%d" % ip.proto, "off%d" % ip.frag]
        elif ip.proto == 17 and len(body) >= 8:
            words += ["udp4", pair(int.from_bytes(body[0:2], "big"), int.from_bytes(body[2:4], "big"))]
        elif ip.proto == 6 and len(body) >= 14:
            flags = body[13]
            names = "".join(c for bit, c in ((2, "S"), (16, "A"), (1, "F"), (4, "R"), (8, "P")) if flags & bit)
            words += ["tcp4", pair(int.from_bytes(body[0:2], "big"), int.from_bytes(body[2:4], "big")), names]
        elif ip.proto == 1 and len(body) >= 8:
            t, code = body[0], body[1]
            kind = ICMP4_TYPES.get(t, "type%d" % t)
            words += ["icmp4", kind, "%s>%s" % (self.addr(ip.src), self.addr(ip.dst))]
            if t in (0, 8):
                words.append("id" + self.port(int.from_bytes(body[4:6], "big")))
            else:
                words += ["code", str(code)]
                if not inner:
                    words.append("q%d" % (len(body) - 8))
                    words.append("[" + self.datagram(body[8:], inner=True) + "]")
        else:
            words += ["ip4", "%s>%s" % (self.addr(ip.src), self.addr(ip.dst)), "p%d" % ip.proto]
        if ip.flags.MF:
            words.append("mf")
        if not inner:
            words.append("ttl%d" % ip.ttl)
        ok = l4_ok(raw) if not (ip.frag or ip.flags.MF) else None
        if ok is False:
            words.append("bad-l4-checksum")
        return " ".join(words)

    def frame(self, frame):
        """One frame as a string, or None for ARP (neighbour upkeep is not what we test)."""
        if len(frame) < 14:
            return "runt%d" % len(frame)
        e = Ether(frame)
        if e.type == 0x0806:
            return None
        if e.type == 0x86DD:
            return None  # the links carry no IPv6; a kernel's own MLD/RS are noise
        if e.type != 0x0800:
            return "ethertype %#06x" % e.type
        ip = IP(frame[14:])
        if ip.proto == 2:
            return None  # IGMP
        return self.datagram(frame[14 : 14 + ip.len])


class Lab:
    def __init__(self, cfg):
        self.a = cfg["addr"]
        self.m = cfg["mac"]
        self.t0 = Port("t0")
        self.t1 = Port("t1")
        self.names = {v: k for k, v in self.a.items()}
        # Seconds to wait for a session to expire: longer than the DUT's UDP timeout.
        self.expire_wait = float(cfg["expire_wait"])

    def inside(self, host, l4, **kw):
        """A frame from inside host `host` ("a" or "b") on t0."""
        return Ether(src=self.m["t0mac"], dst=self.m["d0mac"]) / IP(src=self.a[host], **kw) / l4

    def outside(self, src, l4, dst=None, **kw):
        """A frame from `src` (a remote name) beyond the next hop, on t1, to d1."""
        return Ether(src=self.m["t1mac"], dst=self.m["d1mac"]) / IP(src=self.a[src], dst=dst or self.a["d1"], **kw) / l4


class Case:
    """One case's steps and what they showed."""

    def __init__(self, lab, known):
        self.lab = lab
        self.d = Describer(lab.names, known)
        self.t0, self.t1 = [], []
        self.n = 0
        self.last = ([], [])

    def step(self, t0=(), t1=(), wait=QUIET):
        """Send frames on t0 and t1; returns the frames the DUT sent on t0 and on t1 (as IP)."""
        lab = self.lab
        lab.t0.read_all()
        lab.t1.read_all()
        for f in t0:
            lab.t0.send(f)
        for f in t1:
            lab.t1.send(f)
        time.sleep(wait)
        self.n += 1
        got = []
        for port, out in ((lab.t0, self.t0), (lab.t1, self.t1)):
            frames = port.read_all()
            words = [self.d.frame(f) for f in frames]
            out += sorted("%d %s" % (self.n, w) for w in words if w is not None)
            ips = [f[14:] for f in frames if len(f) > 34 and f[12:14] == b"\x08\x00"]
            got.append([IP(b[: int.from_bytes(b[2:4], "big")]) for b in ips])
        self.last = got
        return got

    def result(self, name):
        return {"case": name, "t0": self.t0, "t1": self.t1}


def find(frames, proto, **fields):
    """The first IP datagram of `frames` carrying `proto` with the given field values."""
    for ip in frames:
        if proto in ip and all(getattr(ip[proto], k) == v for k, v in fields.items()):
            return ip
    return None


def udp(sport, dport=53, n=20):
    return UDP(sport=sport, dport=dport) / payload(n)


def reply_to(lab, seen, proto=UDP, **kw):
    """The remote's answer to the translated datagram `seen` (on t1): addresses and ports
    swapped, from the remote to the NAT's outside address and port."""
    remote = lab.names[seen.dst]
    if proto is UDP:
        l4 = UDP(sport=seen[UDP].dport, dport=seen[UDP].sport) / payload(12)
    elif proto is TCP:
        l4 = TCP(sport=seen[TCP].dport, dport=seen[TCP].sport, flags="SA", seq=5000, ack=seen[TCP].seq + 1)
    else:
        l4 = ICMP(type=0, id=seen[ICMP].id, seq=seen[ICMP].seq) / bytes(seen[ICMP].payload)
    return lab.outside(remote, l4, dst=seen.src, **kw)


def icmp_error(lab, seen, type, code):
    """An ICMP error from the router beyond (rtr) about the translated datagram `seen`,
    quoting all of it, sent to its source (the NAT's outside address)."""
    return lab.outside("rtr", ICMP(type=type, code=code) / bytes(seen), dst=seen.src)


def cases():
    """(name, ports the case chooses, script) for every case, in order. Each case uses its own
    inside ports and identifiers, so a session an earlier case left does not touch it."""
    c = []

    def case(name, known):
        def wrap(f):
            c.append((name, known, f))
            return f

        return wrap

    @case("udp_port_preserved", [40000, 53])
    def _(lab, k):
        _, t1 = k.step(t0=[lab.inside("a", udp(40000), dst=lab.a["r1"])])
        seen = find(t1, UDP, sport=40000) or find(t1, UDP, dport=53)
        if seen:
            k.step(t1=[reply_to(lab, seen)])

    @case("udp_mapping_reused_for_second_destination", [40001, 53])
    def _(lab, k):
        k.step(t0=[lab.inside("a", udp(40001), dst=lab.a["r1"])])
        _, t1 = k.step(t0=[lab.inside("a", udp(40001), dst=lab.a["r2"])])
        seen = find(t1, UDP, dport=53)
        if seen:
            k.step(t1=[reply_to(lab, seen)])

    @case("udp_port_collision", [40002, 53])
    def _(lab, k):
        _, first = k.step(t0=[lab.inside("a", udp(40002), dst=lab.a["r1"])])
        _, second = k.step(t0=[lab.inside("b", udp(40002), dst=lab.a["r1"])])
        for seen in (find(first, UDP, dport=53), find(second, UDP, dport=53)):
            if seen:
                k.step(t1=[reply_to(lab, seen)])

    # After a collision moved b's port, b's next destination: EIM keeps the port it was given,
    # Linux keeps the inside port where the new 5-tuple is free.
    @case("udp_second_destination_after_collision", [40003, 53])
    def _(lab, k):
        k.step(t0=[lab.inside("a", udp(40003), dst=lab.a["r1"])])
        k.step(t0=[lab.inside("b", udp(40003), dst=lab.a["r1"])])
        _, t1 = k.step(t0=[lab.inside("b", udp(40003), dst=lab.a["r2"])])
        seen = find(t1, UDP, dport=53)
        if seen:
            k.step(t1=[reply_to(lab, seen)])

    @case("udp_other_remote_filtered", [40004, 53, 5353])
    def _(lab, k):
        _, t1 = k.step(t0=[lab.inside("a", udp(40004), dst=lab.a["r1"])])
        seen = find(t1, UDP, dport=53)
        if seen:
            # r2 (not the session's remote) and r1 from another port, to the mapped port.
            k.step(t1=[lab.outside("r2", UDP(sport=53, dport=seen[UDP].sport) / payload(12))])
            k.step(t1=[lab.outside("r1", UDP(sport=5353, dport=seen[UDP].sport) / payload(12))])

    @case("tcp_handshake", [40005, 80])
    def _(lab, k):
        syn = TCP(sport=40005, dport=80, flags="S", seq=1000)
        _, t1 = k.step(t0=[lab.inside("a", syn, dst=lab.a["r1"])])
        seen = find(t1, TCP, dport=80)
        if seen:
            k.step(t1=[reply_to(lab, seen, TCP)])

    @case("icmp_echo", [0x4001])
    def _(lab, k):
        _, t1 = k.step(t0=[lab.inside("a", ICMP(id=0x4001, seq=1) / payload(32), dst=lab.a["r1"])])
        seen = find(t1, ICMP, type=8)
        if seen:
            k.step(t1=[reply_to(lab, seen, ICMP)])

    @case("icmp_echo_collision", [0x4002])
    def _(lab, k):
        _, first = k.step(t0=[lab.inside("a", ICMP(id=0x4002, seq=1) / payload(32), dst=lab.a["r1"])])
        _, second = k.step(t0=[lab.inside("b", ICMP(id=0x4002, seq=1) / payload(32), dst=lab.a["r1"])])
        for seen in (find(first, ICMP, type=8), find(second, ICMP, type=8)):
            if seen:
                k.step(t1=[reply_to(lab, seen, ICMP)])

    @case("icmp_error_for_udp", [40006, 53])
    def _(lab, k):
        _, t1 = k.step(t0=[lab.inside("a", udp(40006), dst=lab.a["r1"])])
        seen = find(t1, UDP, dport=53)
        if seen:
            k.step(t1=[icmp_error(lab, seen, 11, 0)])

    @case("icmp_error_for_tcp", [40007, 80])
    def _(lab, k):
        syn = TCP(sport=40007, dport=80, flags="S", seq=1000)
        _, t1 = k.step(t0=[lab.inside("a", syn, dst=lab.a["r1"])])
        seen = find(t1, TCP, dport=80)
        if seen:
            k.step(t1=[icmp_error(lab, seen, 3, 1)])

    @case("icmp_error_for_echo", [0x4003])
    def _(lab, k):
        _, t1 = k.step(t0=[lab.inside("a", ICMP(id=0x4003, seq=1) / payload(32), dst=lab.a["r1"])])
        seen = find(t1, ICMP, type=8)
        if seen:
            k.step(t1=[icmp_error(lab, seen, 11, 0)])

    @case("port_forward", [40008, 80, 8080])
    def _(lab, k):
        syn = TCP(sport=40008, dport=80, flags="S", seq=1000)
        t0, _ = k.step(t1=[lab.outside("r1", syn)])
        seen = find(t0, TCP, dport=8080)
        if seen:
            back = TCP(sport=8080, dport=40008, flags="SA", seq=7000, ack=1001)
            k.step(t0=[lab.inside("b", back, dst=lab.a["r1"])])

    @case("hairpin", [40009, 80, 8080])
    def _(lab, k):
        syn = TCP(sport=40009, dport=80, flags="S", seq=1000)
        t0, _ = k.step(t0=[lab.inside("a", syn, dst=lab.a["d1"])])
        seen = find(t0, TCP, dport=8080)
        if seen:
            back = TCP(sport=8080, dport=seen[TCP].sport, flags="SA", seq=7000, ack=1001)
            k.step(t0=[lab.inside("b", back, dst=seen.src)])

    @case("ttl1_through", [40010, 53])
    def _(lab, k):
        k.step(t0=[lab.inside("a", udp(40010), dst=lab.a["r1"], ttl=1)])
        # No session was made: the remote's "reply" to the port that would have been kept.
        k.step(t1=[lab.outside("r1", udp(53, 40010))])

    # A UDP datagram in two fragments; the first carries the whole UDP header.
    @case("udp_fragments", [40014, 53])
    def _(lab, k):
        # (The UDP checksum covers the whole datagram: compute it over the reassembled one.)
        whole = bytes(IP(src=lab.a["a"], dst=lab.a["r1"]) / UDP(sport=40014, dport=53) / payload(64))[20:]
        first = lab.inside("a", whole[:40], dst=lab.a["r1"], proto=17, id=4242, flags="MF")
        later = lab.inside("a", whole[40:], dst=lab.a["r1"], proto=17, id=4242, frag=5)
        k.step(t0=[first, later])

    @case("unsolicited_udp", [40011, 53])
    def _(lab, k):
        k.step(t1=[lab.outside("r1", udp(53, 40011))])

    @case("unsolicited_tcp", [40012, 5000])
    def _(lab, k):
        k.step(t1=[lab.outside("r1", TCP(sport=5000, dport=40012, flags="S", seq=1000))])

    @case("udp_session_expires", [40013, 53])
    def _(lab, k):
        _, t1 = k.step(t0=[lab.inside("a", udp(40013), dst=lab.a["r1"])])
        seen = find(t1, UDP, dport=53)
        if seen:
            k.step(t1=[reply_to(lab, seen)])
            time.sleep(lab.expire_wait)
            k.step(t1=[reply_to(lab, seen)])

    return c


def main():
    cfg = json.load(open(sys.argv[1]))
    only = None
    args = sys.argv[2:]
    while args:
        if args[0] == "--only":
            only = set(args[1].split(","))
            args = args[2:]
        else:
            raise SystemExit("unknown argument %r" % args[0])
    lab = Lab(cfg)
    # Let the DUT resolve its neighbours on both sides (the inside hosts, the next hop) first.
    for _ in range(3):
        for host in ("a", "b"):
            lab.t0.send(lab.inside(host, ICMP(id=1) / payload(8), dst=lab.a["d0"]))
        lab.t1.send(Ether(src=lab.m["t1mac"], dst=lab.m["d1mac"]) / IP(src=lab.a["nh"], dst=lab.a["d1"]) / ICMP(id=1))
        time.sleep(0.5)
    lab.t0.read_all()
    lab.t1.read_all()
    for name, known, script in cases():
        if only is not None and name not in only:
            continue
        k = Case(lab, known)
        script(lab, k)
        print(json.dumps(k.result(name)), flush=True)


if __name__ == "__main__":
    main()
