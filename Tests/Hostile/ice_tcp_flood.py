#!/usr/bin/python3
"""Opens COUNT connections to an ICE-TCP port and never sends a valid ICE check: the first sends
a frame longer than the server takes, the second a stream of junk frames, the rest nothing.
Watches for SECONDS when the server closes each one.

Usage: ice_tcp_flood.py HOST PORT COUNT SECONDS
Prints one JSON line: {"opened": N, "closedAt": [seconds after opening, or null], "oversizedClosedAt": S}.
"""
import json
import select
import socket
import sys
import time


def main():
    host, port, count, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    sockets = []
    for _ in range(count):
        try:
            sockets.append(socket.create_connection((host, port), timeout=5))
        except OSError:
            break
    start = time.monotonic()
    if sockets:
        sockets[0].sendall(b"\x10\x01" + b"x" * 64)  # announces 4097 bytes
    if len(sockets) > 1:
        sockets[1].sendall(b"\x00\x04junk" * 256)
    closed = {}
    while time.monotonic() - start < seconds and len(closed) < len(sockets):
        open_ones = [s for i, s in enumerate(sockets) if i not in closed]
        readable, _, _ = select.select(open_ones, [], [], 0.2)
        for s in readable:
            try:
                data = s.recv(65536)
            except OSError:
                data = b""
            if not data:
                closed[sockets.index(s)] = round(time.monotonic() - start, 2)
    print(json.dumps({
        "opened": len(sockets),
        "closedAt": [closed.get(i) for i in range(len(sockets))],
    }), flush=True)
    for s in sockets:
        s.close()


if __name__ == "__main__":
    main()
