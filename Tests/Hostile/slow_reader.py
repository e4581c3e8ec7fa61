#!/usr/bin/env python3
"""A WebSocket client that sends requests as fast as it can and never reads the answers.

usage: slow_reader.py HOST PORT SECONDS

After the HTTP upgrade it shrinks its receive buffer and sends frames that each earn an error
answer: a request before entering a room (-7001) and a 2000-byte unknown request type (-7101,
whose answer quotes only a short prefix). It reads nothing more. Prints, for the test:
  sent <frames> <bytes>    every second
  closed <frames> <bytes>  when the server has closed the connection (a send fails)
  gave-up <frames> <bytes> when SECONDS passed and the connection is still open
"""
import os, socket, struct, sys, time

from ws_upgrade import upgrade

host, port, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect((host, port))
if not upgrade(s, host, port)[0]:
    print("refused", flush=True)
    sys.exit(1)


def frame(text):
    """One masked text frame, as a client sends it."""
    payload = text.encode()
    mask = os.urandom(4)
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    length = len(payload)
    if length < 126:
        header = struct.pack("!BB", 0x81, 0x80 | length)
    else:
        header = struct.pack("!BBH", 0x81, 0x80 | 126, length)
    return header + mask + masked


batch = (frame('{"type":"requestMic"}') * 50) + frame('{"type":"' + "x" * 2000 + '"}')
per_batch = 51
s.settimeout(2)
frames = sent = 0
started = last = time.monotonic()
while time.monotonic() - started < seconds:
    try:
        s.sendall(batch)
    except (BrokenPipeError, ConnectionResetError, socket.timeout, OSError):
        print(f"closed {frames} {sent}", flush=True)
        sys.exit(0)
    frames += per_batch
    sent += len(batch)
    if time.monotonic() - last >= 1:
        last = time.monotonic()
        print(f"sent {frames} {sent}", flush=True)
print(f"gave-up {frames} {sent}", flush=True)
