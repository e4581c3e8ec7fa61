#!/usr/bin/env python3
"""A TCP relay whose connections a test can cut, as a dead link or a network change does.

usage: tcp_cut.py TARGET_PORT [SECONDS]

Listens on a free 127.0.0.1 port (printed as "ready <port>") and relays each connection to
127.0.0.1:TARGET_PORT. A line "cut N" on standard input resets every relayed connection and,
for N seconds, resets each new one at once; "cut-done" is printed when the cut ends. Stops after
SECONDS (default 600) or at the end of standard input.
"""
import selectors, socket, struct, sys, time

target = ("127.0.0.1", int(sys.argv[1]))
seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 600.0
selector = selectors.DefaultSelector()
listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", 0))
listener.listen(64)
listener.setblocking(False)
selector.register(listener, selectors.EVENT_READ, "accept")
selector.register(sys.stdin, selectors.EVENT_READ, "command")
peers = {}  # socket -> its other end
cut_until = 0.0
print(f"ready {listener.getsockname()[1]}", flush=True)


def reset(sock):
    """Closes with RST, as a dead path ends a connection for the other side."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    try:
        selector.unregister(sock)
    except (KeyError, ValueError):
        pass
    sock.close()


def drop(sock):
    other = peers.pop(sock, None)
    reset(sock)
    if other is not None:
        peers.pop(other, None)
        reset(other)


started = time.monotonic()
was_cut = False
while time.monotonic() - started < seconds:
    for key, _ in selector.select(timeout=0.1):
        if key.data == "accept":
            client, _ = listener.accept()
            if time.monotonic() < cut_until:
                reset(client)
                continue
            upstream = socket.create_connection(target)
            for sock in (client, upstream):
                sock.setblocking(False)
                selector.register(sock, selectors.EVENT_READ, "relay")
            peers[client], peers[upstream] = upstream, client
        elif key.data == "command":
            line = sys.stdin.readline()
            if not line:
                sys.exit(0)
            if line.startswith("cut "):
                cut_until = time.monotonic() + float(line.split()[1])
                was_cut = True
                for sock in list(peers):
                    if sock in peers:
                        drop(sock)
        else:
            sock = key.fileobj
            try:
                data = sock.recv(65536)
            except (ConnectionResetError, BlockingIOError):
                data = b""
            if not data:
                drop(sock)
                continue
            try:
                peers[sock].sendall(data)
            except (OSError, KeyError):
                drop(sock)
    if was_cut and time.monotonic() >= cut_until:
        was_cut = False
        print("cut-done", flush=True)
