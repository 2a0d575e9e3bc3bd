"""Floods for scripts/soak.sh, sent raw on IFACE at about PPS frames a second until the file
STOP exists; prints the frames sent.

usage: soak_flood.py macs IFACE PPS STOP
         random unicast source MACs (and a few bad ones: a group source, the zero source, a
         frame to the reserved 01:80:c2:00:00:00) to random unknown destinations: a bridge
         port's MAC flood
       soak_flood.py flows IFACE PPS STOP DST_MAC NET
         new flows for a stateful ACL: TCP SYNs and UDP from random sources and ports in
         100.64.0.0/10 to random hosts of NET (a /16 such as 100.127), to DST_MAC"""
import os, random, socket, struct, sys, time


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def mac_frame(rnd):
    kind = rnd.randrange(100)
    dst = bytes([0x02, 0xBB]) + rnd.randbytes(4)
    if kind == 0:
        src = bytes([0x01, 0x00, 0x5E]) + rnd.randbytes(3)  # a group source: never learnt
    elif kind == 1:
        src = b"\0" * 6  # the zero source: never learnt
    else:
        src = bytes([0x02, 0xCC]) + rnd.randbytes(4)
    if kind == 2:
        dst = bytes.fromhex("0180c2000000")  # STP's group: never forwarded
    return (dst + src + b"\x88\xb5" + b"soak").ljust(60, b"\0")


def flow_frame(rnd, dst_mac, src_mac, net):
    src = struct.pack("!I", 0x64400000 | rnd.getrandbits(22))
    dst = net + rnd.randbytes(2)
    sport, dport = rnd.randrange(1024, 65536), rnd.choice([80, 443, 53, 8080])
    if rnd.getrandbits(1):
        l4 = struct.pack("!HHIIBBHHH", sport, dport, rnd.getrandbits(32), 0, 5 << 4, 0x02, 64240, 0, 0)
        proto = 6
    else:
        l4 = struct.pack("!HHHH", sport, dport, 8 + 18, 0) + b"soak new-flow flood"[:18]
        proto = 17
    pseudo = src + dst + struct.pack("!BBH", 0, proto, len(l4))
    c = csum(pseudo + l4)
    at = 16 if proto == 6 else 6
    l4 = l4[:at] + struct.pack("!H", c or 0xFFFF) + l4[at + 2 :]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), 0, 0, 64, proto, 0, src, dst)
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    return (dst_mac + src_mac + b"\x08\x00" + ip + l4).ljust(60, b"\0")


def main():
    mode, iface, pps, stop = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    rnd = random.Random(os.getpid())
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    if mode == "macs":
        make = lambda: mac_frame(rnd)
    else:
        dst_mac = bytes.fromhex(sys.argv[5].replace(":", ""))
        src_mac = s.getsockname()[4][:6]
        net = bytes(int(x) for x in sys.argv[6].split("."))
        make = lambda: flow_frame(rnd, dst_mac, src_mac, net)
    sent, tick = 0, 0.05
    burst = max(1, int(pps * tick))
    while not os.path.exists(stop):
        t = time.monotonic()
        for _ in range(burst):
            try:
                s.send(make())
                sent += 1
            except OSError:
                pass  # ENOBUFS, or the link is down (a flap): the frame is not sent
        time.sleep(max(0.0, tick - (time.monotonic() - t)))
    print(sent)


main()
