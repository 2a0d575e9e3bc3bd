#!/usr/bin/env python3
"""A small test of sluice_client.py against a running daemon (tests/python_client.rs runs
it with the daemon's socket): a request and its JSON, a refused request's code, events."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sluice_client import Client, RequestError  # noqa: E402


def main(path):
    c = Client(path)
    r = c.request("show version")
    assert r["ok"] and r["code"] == "ok" and "version" in r["json"], r
    try:
        c.request("set interface state", interface="nope", state="up")
        raise AssertionError("no error")
    except RequestError as e:
        assert e.code == "failed" and "no interface named 'nope'" in e.message, e
    try:
        c.request("set interface state", interface="n0", state="sideways")
        raise AssertionError("no error")
    except RequestError as e:
        assert e.code == "bad_field", e
    events = c.watch(["route"])
    c.request("ip route add", args="198.18.0.0/15 drop")
    e = next(events)
    assert (e["kind"], e["event"], e["prefix"], e["source"]) == (
        "route", "added", "198.18.0.0/15", "cli"), e
    events.close()
    try:
        next(c.watch(["routes"]))
        raise AssertionError("no error")
    except RequestError as e:
        assert e.code == "bad_field", e
    print("ok")


if __name__ == "__main__":
    main(sys.argv[1])
