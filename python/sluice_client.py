"""A client for sluice's control socket: typed requests and events (docs/api.md).

Standard library only. `Client(path).request(command, **fields)` sends one typed request
and returns its reply (a dict with "ok", "code", "text" and, where the command has one,
"json"); a refused request raises `RequestError` with the reply's code. `Client(path).watch
(kinds)` subscribes and returns an iterator of events (dicts with "seq", "time", "kind",
...) that ends when the daemon closes the connection.

    from sluice_client import Client
    c = Client("/run/sluice/cli.sock")
    c.request("ip route add", args="198.19.0.0/16 via 192.0.2.2 d0")
    with c.watch(["link"]) as events:
        for event in events:
            print(event)
"""

import json
import socket

VERSION = 1


class RequestError(Exception):
    """A reply with "ok": false: `code` is its code ("failed", "bad_field", ...)."""

    def __init__(self, code, message):
        super().__init__("%s: %s" % (code, message))
        self.code = code
        self.message = message


class Client:
    def __init__(self, path, timeout=10.0):
        self.path = path
        self.timeout = timeout

    def _connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.path)
        return s

    @staticmethod
    def _line(command, fields):
        req = {"version": VERSION, "command": command}
        for k, v in fields.items():
            # Python names cannot hold every field name; a trailing _ is dropped (del_=True).
            req[k[:-1] if k.endswith("_") else k] = v
        return (json.dumps(req) + "\n").encode()

    @staticmethod
    def _checked(reply):
        if not reply.get("ok"):
            raise RequestError(reply.get("code", "error"), reply.get("error", ""))
        return reply

    def request(self, command, **fields):
        """Send one typed request; its reply, or RequestError."""
        with self._connect() as s:
            s.sendall(self._line(command, fields))
            s.shutdown(socket.SHUT_WR)
            with s.makefile("r", encoding="utf-8") as f:
                line = f.readline()
        if not line:
            raise RequestError("closed", "the daemon closed the connection")
        return self._checked(json.loads(line))

    def watch(self, kinds=()):
        """Subscribe to events of `kinds` (all when empty) now, and return an iterator of
        them; the connection stays open until it is closed (`close()`, or `with`)."""
        s = self._connect()
        try:
            s.sendall(self._line("watch", {"kinds": list(kinds)}))
            f = s.makefile("r", encoding="utf-8")
            line = f.readline()
            if not line:
                raise RequestError("closed", "the daemon closed the connection")
            self._checked(json.loads(line))
        except BaseException:
            s.close()
            raise
        # Events come when things change: no timeout while waiting for one.
        s.settimeout(None)
        return Events(s, f)


class Events:
    """The events of one watch, in order; iteration ends when the daemon closes."""

    def __init__(self, sock, lines):
        self._sock = sock
        self._lines = lines

    def __iter__(self):
        return self

    def __next__(self):
        line = self._lines.readline()
        if not line:
            raise StopIteration
        return json.loads(line)

    def close(self):
        self._lines.close()
        self._sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
