#!/usr/bin/env python3
"""Watch link events; when an interface's link comes up (admin and link up), add a route
through it. Usage: watch_and_route.py SOCKET INTERFACE PREFIX GATEWAY [--once]

With --once it stops after the first route it adds (tests/python_client.rs runs it so).
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from sluice_client import Client, RequestError  # noqa: E402


def main():
    args = [a for a in sys.argv[1:] if a != "--once"]
    once = "--once" in sys.argv[1:]
    if len(args) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    path, interface, prefix, gateway = args
    client = Client(path)
    events = client.watch(["link"])
    print("watching links", flush=True)
    for event in events:
        if event["interface"] != interface:
            continue
        if event["admin"] == "up" and event["link"] == "up":
            try:
                client.request("ip route add", args=[prefix, "via", gateway, interface])
                print("link up: added %s via %s %s" % (prefix, gateway, interface), flush=True)
            except RequestError as e:
                print("link up: route refused: %s" % e, flush=True)
            if once:
                return 0
    return 1


if __name__ == "__main__":
    sys.exit(main())
