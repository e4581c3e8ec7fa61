#!/usr/bin/env python3
"""Opens N WebSocket connections to a LiveRoom server and never enters a room.

usage: idle_flood.py HOST PORT N [SECONDS [SOURCE_ADDRESS]]

Each connection does the HTTP upgrade and then only reads. Prints one line per event, for the
test that runs it:
  opened <upgraded> <refused-at-http>   after every connection was tried
  refused <code>                         a connection that got onError with a code at once, or an
                                         HTTP refusal (429, 503) with the code in its JSON body
  closed <count>                         connections the server has closed so far (every second)
Stops after SECONDS (default 30) or when every connection is closed.
"""
import json, selectors, socket, sys, time

from ws_upgrade import upgrade

host, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
seconds = float(sys.argv[4]) if len(sys.argv) > 4 else 30.0
source = (sys.argv[5], 0) if len(sys.argv) > 5 else None
selector = selectors.DefaultSelector()
open_sockets, refused_http = [], 0
for _ in range(count):
    s = socket.create_connection((host, port), timeout=5, source_address=source)
    upgraded, rest = upgrade(s, host, port)
    if not upgraded:
        # Refused before its request was read (over a connection cap): the answer carries the code.
        refused_http += 1
        body = bytearray(rest)
        while True:
            try:
                chunk = s.recv(4096)
            except OSError:
                break
            if not chunk:
                break
            body.extend(chunk)
        try:
            print(f"refused {json.loads(bytes(body)).get('ErrorCode')}", flush=True)
        except ValueError:
            pass
        s.close()
        continue
    s.setblocking(False)
    selector.register(s, selectors.EVENT_READ, bytearray(rest))
    open_sockets.append(s)
print(f"opened {len(open_sockets)} {refused_http}", flush=True)

def report(buffer):
    """Prints the refusals among the complete frames in buffer (which may have come with the upgrade answer)."""
    for opcode, payload in frames(buffer):
        if opcode == 1:
            event = json.loads(payload)
            if event.get("event") == "onError":
                print(f"refused {event.get('errCode')}", flush=True)

def frames(buffer):
    """Yields (opcode, payload) of the complete server frames in buffer, removing them."""
    while len(buffer) >= 2:
        length, offset = buffer[1] & 0x7F, 2
        if length == 126:
            if len(buffer) < 4: return
            length, offset = int.from_bytes(buffer[2:4], "big"), 4
        elif length == 127:
            if len(buffer) < 10: return
            length, offset = int.from_bytes(buffer[2:10], "big"), 10
        if len(buffer) < offset + length: return
        yield buffer[0] & 0x0F, bytes(buffer[offset:offset + length])
        del buffer[:offset + length]

closed, deadline, next_report = 0, time.monotonic() + seconds, 0.0
while closed < len(open_sockets) and time.monotonic() < deadline:
    for key, _ in selector.select(timeout=0.2):
        try:
            data = key.fileobj.recv(65536)
        except (ConnectionResetError, BlockingIOError):
            data = b""
        key.data.extend(data)
        report(key.data)
        if not data:
            selector.unregister(key.fileobj)
            key.fileobj.close()
            closed += 1
    if time.monotonic() >= next_report:
        print(f"closed {closed}", flush=True)
        next_report = time.monotonic() + 1.0
print(f"closed {closed}", flush=True)
