#!/usr/bin/python3
"""Router conformance cases, run inside the tester namespace against one DUT.

The DUT routes between d0 (facing our t0) and d1 (facing our t1); d1's link has a smaller MTU.
For each named case this sends crafted frames on t0 and records what the DUT sends back on t0
and what arrives on t1, as one JSON line per case with a normalised observation:

    {"case": "ttl1_through", "t0": ["icmp4 time-exceeded code 0 d0v4>t0v4 q28"], "t1": []}

Addresses are written by name (d0v4, t1v6, ...). Neighbour maintenance (ARP requests, neighbour
solicitations, MLD, IGMP, router solicitations) is left out unless a case is about it. After
the cases, `--fuzz N` sends N random and mutated frames and prints one line saying how many.

Run with Debian's /usr/bin/python3 and python3-scapy:

    cases.py CONFIG.json [--only NAME,...] [--fuzz N]
"""

import json
import os
import random
import select
import socket
import struct
import sys
import time

from scapy.all import (
    ARP,
    ICMP,
    IP,
    UDP,
    Ether,
    HBHOptUnknown,
    ICMPv6DestUnreach,
    ICMPv6EchoReply,
    ICMPv6EchoRequest,
    ICMPv6ND_NA,
    ICMPv6ND_NS,
    ICMPv6NDOptDstLLAddr,
    ICMPv6NDOptSrcLLAddr,
    ICMPv6PacketTooBig,
    ICMPv6ParamProblem,
    ICMPv6TimeExceeded,
    IPOption_NOP,
    IPOption_RR,
    IPv6,
    IPv6ExtHdrDestOpt,
    IPv6ExtHdrFragment,
    IPv6ExtHdrHopByHop,
    IPv6ExtHdrRouting,
    PadN,
    Raw,
    fuzz,
    conf,
)

conf.verb = 0
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4

# How long to listen after the last frame of a case: the DUT answers in well under this.
QUIET = float(os.environ.get("CONFORMANCE_WAIT", "0.25"))


def mac_bytes(mac):
    return bytes(int(x, 16) for x in mac.split(":"))


def link_local(mac):
    """The EUI-64 link-local address (RFC 4291 appendix A) a kernel gives an interface."""
    b = bytearray(mac_bytes(mac))
    b[0] ^= 2
    iid = bytes(b[:3]) + b"\xff\xfe" + bytes(b[3:])
    return socket.inet_ntop(socket.AF_INET6, b"\xfe\x80" + b"\0" * 6 + iid)


def solicited_node(addr):
    raw = socket.inet_pton(socket.AF_INET6, addr)
    group = b"\xff\x02" + b"\0" * 9 + b"\x01\xff" + raw[13:]
    return socket.inet_ntop(socket.AF_INET6, group)


def multicast_mac6(addr):
    raw = socket.inet_pton(socket.AF_INET6, addr)
    return "33:33:" + ":".join("%02x" % x for x in raw[12:])


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
        """Frames received (not our own outgoing ones) that are waiting now."""
        got = []
        while True:
            try:
                data, addr = self.sock.recvfrom(65535)
            except BlockingIOError:
                return got
            if addr[2] != PACKET_OUTGOING:
                got.append(data)


class Names:
    def __init__(self, cfg):
        self.by_addr = {}
        for k, v in cfg["addr"].items():
            self.by_addr[v] = k

    def __call__(self, a):
        return self.by_addr.get(a, a)


ICMP4_TYPES = {0: "echo-reply", 3: "unreachable", 8: "echo-request", 11: "time-exceeded", 12: "param-problem"}
ICMP6_TYPES = {1: "unreachable", 2: "too-big", 3: "time-exceeded", 4: "param-problem", 128: "echo-request", 129: "echo-reply"}


def ip4_flags(ip):
    f = []
    if ip.flags.DF:
        f.append("df")
    if ip.flags.MF:
        f.append("mf")
    if ip.frag:
        f.append("off%d" % ip.frag)
    return f


def checksum_ok(raw):
    s = 0
    if len(raw) % 2:
        raw += b"\0"
    for i in range(0, len(raw), 2):
        s += (raw[i] << 8) | raw[i + 1]
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s == 0xFFFF


def describe4(frame, name):
    e = Ether(frame)
    ip = e[IP]
    raw = frame[14:]
    hl = ip.ihl * 4
    words = []
    if not checksum_ok(bytearray(raw[:hl])):
        words.append("bad-ip-checksum")
    # Bytes after the datagram beyond the minimum frame's padding.
    extra = len(frame) - max(60, 14 + ip.len)
    tail = ["extra%d" % extra] if extra > 0 else []
    opts = ["opts" + raw[20:hl].hex()] if hl > 20 else []
    if ip.proto == 1 and not ip.frag and ICMP in ip:
        icmp = ip[ICMP]
        kind = ICMP4_TYPES.get(icmp.type, "type%d" % icmp.type)
        words += ["icmp4", kind, "code", str(icmp.code), "%s>%s" % (name(ip.src), name(ip.dst))]
        if icmp.type == 3 and icmp.code == 4:
            words.append("mtu%d" % icmp.nexthopmtu)
        if icmp.type in (3, 11, 12):
            quoted = bytes(icmp.payload)
            words.append("q%d" % len(quoted))
            if icmp.type == 12:
                words.append("ptr%d" % icmp.ptr)
        if icmp.type in (0, 8):
            words.append("ttl%d" % ip.ttl)
            words.append("len%d" % ip.len)
        return " ".join(words + ip4_flags(ip) + opts + tail)
    words += ["ip4", "%s>%s" % (name(ip.src), name(ip.dst)), "p%d" % ip.proto, "ttl%d" % ip.ttl, "len%d" % ip.len]
    return " ".join(words + ip4_flags(ip) + opts + tail)


EXT_NAMES = {0: "hbh", 43: "rh", 44: "frag", 60: "dst"}


def describe6(frame, name):
    e = Ether(frame)
    ip = e[IPv6]
    extra = len(frame) - max(60, 14 + 40 + ip.plen)
    tail = ["extra%d" % extra] if extra > 0 else []
    # The chain of extension headers and the upper layer.
    chain = []
    layer = ip.payload
    nh = ip.nh
    while nh in EXT_NAMES and layer is not None and not isinstance(layer, Raw):
        chain.append(EXT_NAMES[nh])
        if nh == 44:
            chain[-1] += "(off%d%s)" % (layer.offset, ",m" if layer.m else "")
            if layer.offset:
                nh = None
                break
        nh = layer.nh
        layer = layer.payload
    pair = "%s>%s" % (name(ip.src), name(ip.dst))
    icmp = layer if nh == 58 else None
    if icmp is not None and hasattr(icmp, "type") and icmp.type in ICMP6_TYPES:
        words = ["icmp6", ICMP6_TYPES[icmp.type], "code", str(icmp.code), pair] + chain
        if icmp.type == 2:
            words.append("mtu%d" % icmp.mtu)
        if icmp.type == 4:
            words.append("ptr%d" % icmp.ptr)
        if icmp.type in (1, 2, 3, 4):
            words.append("q%d" % len(bytes(icmp.payload)))
        else:
            words.append("hlim%d" % ip.hlim)
            words.append("plen%d" % ip.plen)
        return " ".join(words + tail)
    words = ["ip6", pair, "nh%s" % nh, "hlim%d" % ip.hlim, "plen%d" % ip.plen] + chain
    return " ".join(words + tail)


def describe(frame, name, keep_nd):
    """One frame as a short stable string, or None for neighbour maintenance noise."""
    if len(frame) < 14:
        return "runt%d" % len(frame)
    e = Ether(frame)
    if ARP in e:
        a = e[ARP]
        if a.op != 2 or not keep_nd:
            return None
        return "arp reply %s is-at %s to %s" % (name(a.psrc), name(a.hwsrc), name(a.pdst))
    if IP in e:
        if e[IP].proto == 2:  # IGMP membership reports
            return None
        return describe4(frame, name)
    if IPv6 in e:
        ip = e[IPv6]
        # Find ICMPv6 ND/MLD/RS, maybe behind a hop-by-hop header (MLD has router alert).
        layer = ip.payload
        if isinstance(layer, IPv6ExtHdrHopByHop):
            layer = layer.payload
        t = getattr(layer, "type", None) if ip.nh in (0, 58) else None
        if t in (130, 131, 132, 133, 134, 135, 137, 143):
            return None
        if t == 136:
            if not keep_nd:
                return None
            na = e[ICMPv6ND_NA]
            flags = "".join(f for f, on in (("R", na.R), ("S", na.S), ("O", na.O)) if on)
            lla = e[ICMPv6NDOptDstLLAddr].lladdr if ICMPv6NDOptDstLLAddr in e else "-"
            return "na %s target %s flags %s lla %s hlim%d" % (
                "%s>%s" % (name(ip.src), name(ip.dst)),
                name(na.tgt),
                flags or "-",
                name(lla),
                ip.hlim,
            )
        return describe6(frame, name)
    return "ethertype %#06x" % e.type


class Lab:
    def __init__(self, cfg):
        self.cfg = cfg
        self.a = cfg["addr"]
        self.m = cfg["mac"]
        self.t0 = Port("t0")
        self.t1 = Port("t1")
        names = dict(cfg["addr"])
        names.update(cfg["mac"])
        names["t0ll"] = link_local(cfg["mac"]["t0mac"])
        names["d0ll"] = link_local(cfg["mac"]["d0mac"])
        self.a["t0ll"] = names["t0ll"]
        self.a["d0ll"] = names["d0ll"]
        self.name = Names({"addr": names})

    def eth(self, dst=None):
        return Ether(src=self.m["t0mac"], dst=dst or self.m["d0mac"])

    def ip4(self, dst, src=None, **kw):
        return self.eth() / IP(src=src or self.a["t0v4"], dst=dst, **kw)

    def ip6(self, dst, src=None, **kw):
        return self.eth() / IPv6(src=src or self.a["t0v6"], dst=dst, **kw)

    def run(self, frames, keep_nd=False, wait=QUIET):
        self.t0.read_all()
        self.t1.read_all()
        for f in frames:
            self.t0.send(f)
        time.sleep(wait)
        seen = {}
        for port in (self.t0, self.t1):
            out = []
            for fr in port.read_all():
                d = describe(fr, self.name, keep_nd)
                if d is not None:
                    out.append(d)
            seen[port.name] = sorted(out)
        return seen


def payload(n):
    return bytes((i * 7) & 0xFF for i in range(n))


def cases(lab):
    """(name, frames, keep_nd) for every case, in order."""
    a, m = lab.a, lab.m
    far4, far6 = a["far4"], a["far6"]
    noroute4, noroute6 = a["noroute4"], a["noroute6"]
    d0, d1, d0v6, d1v6 = a["d0v4"], a["d1v4"], a["d0v6"], a["d1v6"]
    echo = lambda: ICMP(id=0x4242, seq=1) / payload(32)
    echo6 = lambda: ICMPv6EchoRequest(id=0x4242, seq=1, data=payload(32))
    udp = lambda: UDP(sport=40000, dport=33434) / payload(20)
    c = []

    def case(name, frames, keep_nd=False):
        if not isinstance(frames, list):
            frames = [frames]
        c.append((name, frames, keep_nd))

    def raw4(pkt, mutate):
        """A built IPv4 frame with bytes changed after the checksum was computed."""
        b = bytearray(bytes(pkt))
        mutate(b)
        return bytes(b)

    # --- echo and local services (IPv4)
    case("echo4_router", lab.ip4(d0) / echo())
    case("echo4_router_other_if", lab.ip4(d1) / echo())
    case("echo4_through", lab.ip4(far4) / echo())
    bad = bytearray(bytes(lab.ip4(d0) / echo()))
    bad[36] ^= 0x55
    case("echo4_bad_icmp_checksum", bytes(bad))
    case("udp4_closed_port", lab.ip4(d0) / udp())
    case("proto4_unknown", lab.ip4(d0, proto=253) / payload(20))
    # --- TTL (RFC 1812 4.2.2.9, 5.3.1)
    for ttl in (0, 1, 2):
        case("ttl%d_through" % ttl, lab.ip4(far4, ttl=ttl) / udp())
    for ttl in (0, 1):
        case("ttl%d_router" % ttl, lab.ip4(d0, ttl=ttl) / echo())
    # --- no route, MTU
    case("noroute4", lab.ip4(noroute4) / udp())
    case("df_too_big4", lab.ip4(far4, flags="DF") / UDP(sport=40000, dport=9) / payload(1450 - 28))
    case("df_fits4", lab.ip4(far4, flags="DF") / UDP(sport=40000, dport=9) / payload(1400 - 28))
    case("nodf_too_big4", lab.ip4(far4) / UDP(sport=40000, dport=9) / payload(1450 - 28))
    # --- header checks (RFC 1812 5.2.2)
    good4 = lambda: lab.ip4(far4) / udp()
    case("bad_checksum4", raw4(good4(), lambda b: b.__setitem__(24, b[24] ^ 0xFF)))
    case("bad_version4", raw4(good4(), lambda b: b.__setitem__(14, 0x55)))
    case("bad_ihl4", raw4(good4(), lambda b: b.__setitem__(14, 0x43)))
    case("ihl_beyond_total4", lab.ip4(far4, ihl=15, len=40) / payload(60))
    case("totlen_long4", lab.ip4(far4, len=200) / udp())
    case("totlen_short4", bytes(good4()) + payload(50))
    case("totlen_below_header4", lab.ip4(far4, len=16) / udp())
    # --- options
    case("options_nop4", lab.ip4(far4, options=[IPOption_NOP(), IPOption_NOP(), IPOption_NOP(), IPOption_NOP()]) / udp())
    case("options_rr4", lab.ip4(far4, options=[IPOption_RR(routers=["0.0.0.0"] * 3)]) / udp())
    case("options_to_router4", lab.ip4(d0, options=[IPOption_NOP()] * 4) / echo())
    # --- fragments
    case("frag_first4", lab.ip4(far4, flags="MF", id=77) / UDP(sport=40000, dport=9) / payload(64))
    case("frag_later4", lab.ip4(far4, frag=100, id=77, proto=17) / payload(64))
    case("frag_later_ttl1_4", lab.ip4(far4, frag=100, id=78, proto=17, ttl=1) / payload(64))
    whole = bytes(ICMP(id=0x4242, seq=9) / payload(64))
    case(
        "frag_to_router4",
        [
            lab.ip4(d0, flags="MF", id=79, proto=1) / whole[:40],
            lab.ip4(d0, frag=5, id=79, proto=1) / whole[40:],
        ],
    )
    # --- martian sources and destinations (RFC 1812 4.2.2.11, 5.3.7)
    for tag, src in (
        ("zero", "0.0.0.5"),
        ("loopback", "127.0.0.1"),
        ("multicast", "224.0.0.5"),
        ("limited_bcast", "255.255.255.255"),
        ("class_e", "240.0.0.1"),
        ("ours", d1),
        ("directed_bcast", a["t0bcast4"]),
    ):
        case("martian_src_%s4" % tag, lab.ip4(far4, src=src) / udp())
    for tag, dst in (("zero", "0.1.2.3"), ("loopback", "127.0.0.1"), ("class_e", "240.0.0.1")):
        case("martian_dst_%s4" % tag, lab.ip4(dst) / udp())
    # --- broadcast and multicast destinations
    bcast = lambda dst, l3: Ether(src=m["t0mac"], dst=dst) / l3
    case("limited_bcast_udp4", bcast("ff:ff:ff:ff:ff:ff", IP(src=a["t0v4"], dst="255.255.255.255") / udp()))
    case("limited_bcast_echo4", bcast("ff:ff:ff:ff:ff:ff", IP(src=a["t0v4"], dst="255.255.255.255") / echo()))
    case("directed_bcast_through4", lab.ip4(a["t1bcast4"]) / udp())
    case("mcast_local_echo4", bcast("01:00:5e:00:00:01", IP(src=a["t0v4"], dst="224.0.0.1", ttl=1) / echo()))
    case("mcast_routed_udp4", bcast("01:00:5e:01:02:03", IP(src=a["t0v4"], dst="239.1.2.3") / udp()))
    # --- frames not addressed to us (RFC 1812 5.3.4 for link broadcasts)
    case("not_our_mac4", Ether(src=m["t0mac"], dst="02:00:00:aa:bb:cc") / IP(src=a["t0v4"], dst=far4) / udp())
    case("bcast_mac_unicast_ip4", bcast("ff:ff:ff:ff:ff:ff", IP(src=a["t0v4"], dst=far4) / udp()))
    case("mcast_mac_unicast_ip4", bcast("01:00:5e:00:00:09", IP(src=a["t0v4"], dst=far4) / udp()))
    # --- ARP
    arp = lambda target, dst="ff:ff:ff:ff:ff:ff": Ether(src=m["t0mac"], dst=dst) / ARP(
        op=1, hwsrc=m["t0mac"], psrc=a["t0v4"], pdst=target
    )
    case("arp_ours", arp(d0), keep_nd=True)
    case("arp_ours_unicast", arp(d0, m["d0mac"]), keep_nd=True)
    case("arp_other", arp("192.0.2.77"), keep_nd=True)
    case("arp_other_interface", arp(d1), keep_nd=True)

    # --- IPv6 echo and local services
    case("echo6_router", lab.ip6(d0v6) / echo6())
    case("echo6_router_other_if", lab.ip6(d1v6) / echo6())
    case("echo6_through", lab.ip6(far6) / echo6())
    case("echo6_link_local", lab.ip6(a["d0ll"], src=a["t0ll"]) / echo6())
    case(
        "echo6_all_nodes",
        Ether(src=m["t0mac"], dst="33:33:00:00:00:01") / IPv6(src=a["t0v6"], dst="ff02::1") / echo6(),
    )
    case("udp6_closed_port", lab.ip6(d0v6) / udp())
    case("nh6_unknown_to_router", lab.ip6(d0v6, nh=253) / payload(20))
    # --- hop limit (RFC 8200 3, RFC 4443 3.3)
    for h in (0, 1, 2):
        case("hlim%d_through" % h, lab.ip6(far6, hlim=h) / udp())
    for h in (0, 1):
        case("hlim%d_router" % h, lab.ip6(d0v6, hlim=h) / echo6())
    # --- no route, MTU (RFC 4443 3.1, 3.2)
    case("noroute6", lab.ip6(noroute6) / udp())
    case("too_big6", lab.ip6(far6) / UDP(sport=40000, dport=9) / payload(1450 - 48))
    case("fits6", lab.ip6(far6) / UDP(sport=40000, dport=9) / payload(1400 - 48))
    # --- header checks
    good6 = lambda: lab.ip6(far6) / udp()
    case("bad_version6", raw4(good6(), lambda b: b.__setitem__(14, 0x45)))
    case("plen_long6", lab.ip6(far6, plen=200) / udp())
    case("plen_short6", bytes(good6()) + payload(50))
    # --- extension headers (RFC 8200 4)
    padn = lambda: [PadN(optdata=b"\0\0\0\0")]
    case("ext_hbh_through", lab.ip6(far6) / IPv6ExtHdrHopByHop(options=padn()) / udp())
    case("ext_dst_through", lab.ip6(far6) / IPv6ExtHdrDestOpt(options=padn()) / udp())
    case("ext_rh_through", lab.ip6(far6) / IPv6ExtHdrRouting(type=4, segleft=0, addresses=[]) / udp())
    case("ext_chain_through", lab.ip6(far6) / IPv6ExtHdrHopByHop(options=padn()) / IPv6ExtHdrDestOpt(options=padn()) / udp())
    case(
        "ext_hbh_unknown_option_through",
        lab.ip6(far6) / IPv6ExtHdrHopByHop(options=[HBHOptUnknown(otype=0x9E, optdata=b"\0\0\0\0")]) / udp(),
    )
    case("ext_hbh_echo_router", lab.ip6(d0v6) / IPv6ExtHdrHopByHop(options=padn()) / echo6())
    case("ext_dst_echo_router", lab.ip6(d0v6) / IPv6ExtHdrDestOpt(options=padn()) / echo6())
    case("ext_hbh_udp_router", lab.ip6(d0v6) / IPv6ExtHdrHopByHop(options=padn()) / udp())
    case("frag_first6", lab.ip6(far6) / IPv6ExtHdrFragment(m=1, id=77, offset=0) / UDP(sport=40000, dport=9) / payload(64))
    case("frag_later6", lab.ip6(far6) / IPv6ExtHdrFragment(m=0, id=77, offset=9, nh=17) / payload(64))
    # The ICMPv6 checksum covers the reassembled message: compute it over the whole one.
    whole6 = bytes(IPv6(src=a["t0v6"], dst=d0v6) / ICMPv6EchoRequest(id=0x4242, seq=9, data=payload(64)))[40:]
    case(
        "frag_to_router6",
        [
            lab.ip6(d0v6) / IPv6ExtHdrFragment(m=1, id=79, offset=0, nh=58) / whole6[:40],
            lab.ip6(d0v6) / IPv6ExtHdrFragment(m=0, id=79, offset=5, nh=58) / whole6[40:],
        ],
    )
    # --- martian addresses (RFC 4291 2.5.2, 2.5.3, 2.7; RFC 4443 3.1 code 2)
    for tag, src in (("unspecified", "::"), ("loopback", "::1"), ("multicast", "ff02::1"), ("link_local", a["t0ll"])):
        case("martian_src_%s6" % tag, lab.ip6(far6, src=src) / udp())
    for tag, dst in (("loopback", "::1"), ("iface_local_mcast", "ff01::1"), ("global_mcast", "ff0e::1")):
        dmac = multicast_mac6(dst) if dst.startswith("ff") else m["d0mac"]
        case("martian_dst_%s6" % tag, Ether(src=m["t0mac"], dst=dmac) / IPv6(src=a["t0v6"], dst=dst) / udp())
    # --- frames not addressed to us
    case("not_our_mac6", Ether(src=m["t0mac"], dst="02:00:00:aa:bb:cc") / IPv6(src=a["t0v6"], dst=far6) / udp())
    case("mcast_mac_unicast_ip6", Ether(src=m["t0mac"], dst="33:33:00:00:00:01") / IPv6(src=a["t0v6"], dst=far6) / udp())
    # --- neighbour discovery (RFC 4861 7.1.1, 7.2.4)

    def ns(target, dst=None, src=None, hlim=255, lla=True):
        dst = dst or solicited_node(target)
        dmac = multicast_mac6(dst) if dst.startswith("ff") else m["d0mac"]
        p = Ether(src=m["t0mac"], dst=dmac) / IPv6(src=src or a["t0v6"], dst=dst, hlim=hlim) / ICMPv6ND_NS(tgt=target)
        if lla:
            p = p / ICMPv6NDOptSrcLLAddr(lladdr=m["t0mac"])
        return p

    case("ns_ours", ns(d0v6), keep_nd=True)
    case("ns_ours_unicast", ns(d0v6, dst=d0v6), keep_nd=True)
    case("ns_link_local", ns(a["d0ll"], src=a["t0ll"]), keep_nd=True)
    case("ns_other", ns("2001:db8::77"), keep_nd=True)
    case("ns_other_interface", ns(d1v6), keep_nd=True)
    case("ns_hlim64", ns(d0v6, hlim=64), keep_nd=True)
    case("ns_dad", ns(d0v6, src="::", lla=False), keep_nd=True)
    return c


def fuzz_frames(lab, n, seed):
    """n random or mutated frames: scapy's fuzz() of each layer the router parses, bit flips
    of good frames, and plain random bytes."""
    rnd = random.Random(seed)
    a = lab.a
    templates = [
        lambda: lab.eth() / fuzz(IP(dst=a["far4"])) / fuzz(UDP()),
        lambda: lab.eth() / fuzz(IP(dst=a["d0v4"], proto=1)) / fuzz(ICMP()),
        lambda: lab.eth() / IP(src=a["t0v4"], dst=a["d0v4"]) / fuzz(ICMP()),
        lambda: lab.eth() / fuzz(IPv6(dst=a["far6"])) / fuzz(UDP()),
        lambda: lab.eth() / IPv6(src=a["t0v6"], dst=a["d0v6"]) / fuzz(ICMPv6EchoRequest()),
        lambda: lab.eth() / IPv6(src=a["t0v6"], dst=a["d0v6"]) / fuzz(IPv6ExtHdrHopByHop()) / UDP(),
        lambda: lab.eth() / IPv6(src=a["t0v6"], dst=a["far6"]) / fuzz(IPv6ExtHdrFragment()) / payload(16),
        lambda: lab.eth("ff:ff:ff:ff:ff:ff") / fuzz(ARP()),
        lambda: Ether(src=lab.m["t0mac"], dst="33:33:ff:00:00:01")
        / IPv6(src=a["t0v6"], dst="ff02::1:ff00:1", hlim=255)
        / fuzz(ICMPv6ND_NS()),
    ]
    good = [
        bytes(lab.ip4(a["far4"]) / UDP() / payload(30)),
        bytes(lab.ip4(a["d0v4"]) / ICMP() / payload(30)),
        bytes(lab.ip6(a["far6"]) / UDP() / payload(30)),
        bytes(lab.ip6(a["d0v6"]) / ICMPv6EchoRequest() / payload(30)),
        bytes(lab.eth("ff:ff:ff:ff:ff:ff") / ARP(op=1, hwsrc=lab.m["t0mac"], psrc=a["t0v4"], pdst=a["d0v4"])),
    ]
    frames = []
    for i in range(n):
        kind = i % 3
        if kind == 0:
            try:
                frames.append(bytes(rnd.choice(templates)()))
            except Exception:
                frames.append(bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 200))))
        elif kind == 1:
            b = bytearray(rnd.choice(good))
            for _ in range(rnd.randint(1, 6)):
                # Keep our own MAC most of the time so the mutation reaches the L3 nodes.
                at = rnd.randrange(12 if rnd.random() < 0.9 else 0, len(b))
                b[at] = rnd.getrandbits(8)
            if rnd.random() < 0.3:
                b = b[: rnd.randint(14, len(b))]
            frames.append(bytes(b))
        else:
            body = bytes(rnd.getrandbits(8) for _ in range(rnd.randint(0, 120)))
            et = rnd.choice([b"\x08\x00", b"\x86\xdd", b"\x08\x06", b"\x81\x00", b"\x88\xa8", bytes(2)])
            frames.append(mac_bytes(lab.m["d0mac"]) + mac_bytes(lab.m["t0mac"]) + et + body)
    return frames


def main():
    cfg = json.load(open(sys.argv[1]))
    only = None
    n_fuzz = 0
    args = sys.argv[2:]
    while args:
        if args[0] == "--only":
            only = set(args[1].split(","))
            args = args[2:]
        elif args[0] == "--fuzz":
            n_fuzz = int(args[1])
            args = args[2:]
        else:
            raise SystemExit("unknown argument %r" % args[0])
    lab = Lab(cfg)
    # Let the DUT resolve its neighbours on both sides before anything is observed.
    for _ in range(3):
        for dst in (lab.a["far4"], lab.a["d0v4"]):
            lab.t0.send(lab.ip4(dst) / ICMP(id=1) / payload(8))
        for dst in (lab.a["far6"], lab.a["d0v6"]):
            lab.t0.send(lab.ip6(dst) / ICMPv6EchoRequest(id=1))
        time.sleep(0.5)
    lab.run([])
    for name, frames, keep_nd in cases(lab):
        if only is not None and name not in only:
            continue
        seen = lab.run(frames, keep_nd)
        print(json.dumps({"case": name, "t0": seen["t0"], "t1": seen["t1"]}), flush=True)
    if n_fuzz:
        frames = fuzz_frames(lab, n_fuzz, seed=cfg.get("seed", 1))
        for f in frames:
            lab.t0.send(f)
        time.sleep(1.0)
        lab.t0.read_all()
        lab.t1.read_all()
        print(json.dumps({"fuzz_sent": len(frames)}), flush=True)


if __name__ == "__main__":
    main()
