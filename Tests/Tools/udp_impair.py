#!/usr/bin/env python3
"""A user-space UDP impairment relay: netem for machines without it.

usage: udp_impair.py LISTEN_HOST LISTEN_PORT TARGET_HOST TARGET_PORT LOSS_PERCENT DELAY_MS JITTER_MS [SECONDS [SEED]]

Clients send to LISTEN_HOST:LISTEN_PORT; each client gets its own socket toward the target, so
the target sees one source per client, and the target's answers go back to that client from the
listening address. Every datagram, either way, is dropped with probability LOSS_PERCENT/100, or
else delayed by DELAY_MS plus a uniform -JITTER_MS..+JITTER_MS (so packets overtake each other,
as on a jittery path). Prints "ready" when listening, then each second
"stats up=<forwarded>/<received> down=<forwarded>/<received>". Stops after SECONDS (default 600).

A line "drop-up N" on standard input drops the next N datagrams toward the target that are
longer than 300 bytes (video packets, not audio or RTCP), and prints "dropped N" when done: a test
loses exactly the packets of the frames sent next.
"""
import heapq, random, selectors, socket, sys, time

listen_host, listen_port = sys.argv[1], int(sys.argv[2])
target = (sys.argv[3], int(sys.argv[4]))
loss, delay, jitter = float(sys.argv[5]) / 100, float(sys.argv[6]) / 1000, float(sys.argv[7]) / 1000
seconds = float(sys.argv[8]) if len(sys.argv) > 8 else 600.0
rng = random.Random(int(sys.argv[9]) if len(sys.argv) > 9 else 1)

selector = selectors.DefaultSelector()
front = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
front.bind((listen_host, listen_port))
front.setblocking(False)
selector.register(front, selectors.EVENT_READ, None)
upstream = {}  # client address -> socket toward the target
queue = []  # (due, sequence, socket, payload, destination)
sequence = 0
counts = {"up": [0, 0], "down": [0, 0]}  # forwarded, received
drop_up = 0  # large datagrams toward the target still to drop (the drop-up command)
dropped_up = 0
selector.register(sys.stdin, selectors.EVENT_READ, "stdin")


def schedule(sock, payload, destination, direction):
    global sequence, drop_up, dropped_up
    counts[direction][1] += 1
    if direction == "up" and drop_up > 0 and len(payload) > 300:
        drop_up -= 1
        dropped_up += 1
        if drop_up == 0:
            print(f"dropped {dropped_up}", flush=True)
        return
    if rng.random() < loss:
        return
    due = time.monotonic() + max(0.0, delay + rng.uniform(-jitter, jitter))
    sequence += 1
    heapq.heappush(queue, (due, sequence, sock, payload, destination, direction))


print("ready", flush=True)
started = last_report = time.monotonic()
while time.monotonic() - started < seconds:
    timeout = 0.2 if not queue else max(0.0, min(0.2, queue[0][0] - time.monotonic()))
    for key, _ in selector.select(timeout=timeout):
        if key.data == "stdin":
            line = sys.stdin.readline()
            if not line:
                selector.unregister(sys.stdin)
            elif line.startswith("drop-up "):
                drop_up, dropped_up = int(line.split()[1]), 0
            continue
        sock = key.fileobj
        try:
            payload, source = sock.recvfrom(65536)
        except (BlockingIOError, ConnectionRefusedError):
            continue
        if key.data is None:  # from a client, toward the target
            link = upstream.get(source)
            if link is None:
                link = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                link.bind((listen_host, 0))
                link.setblocking(False)
                selector.register(link, selectors.EVENT_READ, source)
                upstream[source] = link
            schedule(link, payload, target, "up")
        else:  # from the target, back to the client this socket serves
            schedule(front, payload, key.data, "down")
    now = time.monotonic()
    while queue and queue[0][0] <= now:
        _, _, sock, payload, destination, direction = heapq.heappop(queue)
        try:
            sock.sendto(payload, destination)
            counts[direction][0] += 1
        except OSError:
            pass
    if now - last_report >= 1:
        last_report = now
        print(f"stats up={counts['up'][0]}/{counts['up'][1]} down={counts['down'][0]}/{counts['down'][1]}", flush=True)
