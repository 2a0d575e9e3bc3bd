"""Send every frame of a pcap file out of an interface, in file order: the sender of
tests/capture_ns.rs, which builds the frames itself and must know exactly what was sent.

usage: replay.py FILE.pcap INTERFACE    prints the number of frames sent
"""
import errno
import socket
import struct
import sys
import time

path, interface = sys.argv[1], sys.argv[2]
data = open(path, "rb").read()
magic = struct.unpack_from("<I", data, 0)[0]
if magic not in (0xA1B2C3D4, 0xA1B23C4D):
    sys.exit(f"{path}: not a little-endian pcap file")
# A plain packet socket: its frames go through dev_queue_xmit, so the device's XPS map
# picks the transmit queue (and, on a veth, the peer's receive queue).
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((interface, 0))
at, sent = 24, 0
while at < len(data):
    caplen = struct.unpack_from("<I", data, at + 8)[0]
    frame = data[at + 16 : at + 16 + caplen]
    while True:
        try:
            s.send(frame)
            break
        except OSError as e:
            if e.errno != errno.ENOBUFS:
                raise
            time.sleep(0.001)
    at += 16 + caplen
    sent += 1
print(sent)
