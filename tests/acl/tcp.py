"""A TCP server and client for the session tests, run in the tester namespaces.

serve PORT SECONDS: answer each connection's line with "echo " and the line, for SECONDS.
connect HOST PORT TIMEOUT: send a line, print the answer; exit 1 if none came in time.
"""
import socket
import sys
import time


def serve(port, seconds):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port))
    s.listen(16)
    end = time.time() + seconds
    while time.time() < end:
        s.settimeout(max(0.1, end - time.time()))
        try:
            c, _ = s.accept()
        except socket.timeout:
            continue
        c.settimeout(2)
        try:
            line = c.recv(100)
            c.sendall(b"echo " + line)
        except OSError:
            pass
        c.close()


def connect(host, port, timeout):
    try:
        c = socket.create_connection((host, port), timeout=timeout)
        c.sendall(b"hello\n")
        answer = c.recv(100)
        c.close()
    except OSError as e:
        print("failed:", e)
        return 1
    print(answer.decode().strip())
    return 0 if answer == b"echo hello\n" else 1


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(int(sys.argv[2]), float(sys.argv[3]))
    else:
        sys.exit(connect(sys.argv[2], int(sys.argv[3]), float(sys.argv[4])))
