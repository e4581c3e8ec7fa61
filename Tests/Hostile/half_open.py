#!/usr/bin/env python3
"""Opens many TCP connections to a server's HTTP port that never finish their request head.

usage: half_open.py HOST PORT PER_SOURCE SECONDS MODE REFUSED_WITHIN SOURCE...

From each SOURCE address it opens PER_SOURCE connections and on each sends, by MODE:
  silent   nothing at all
  http     the start of a request head (no blank line ending it)
  tls      the first bytes of a TLS ClientHello record (the handshake never goes on)
then never sends again and watches them. A connection the server closes within REFUSED_WITHIN
seconds of its opening counts as refused (over a cap; in plain HTTP it reads a 429 or 503 answer
first), one it closes later as timed out. Prints, for the test:
  opened <count> <seconds>                         once every connection was made, and how long it took
  state <open> <refused> <answered> <timed-out> <min-age> <max-age>
                                                   every 0.5 s, and once more at the end after
  done                                             (ages: seconds from opening to the server's
                                                   close, over the timed-out ones)
Stops after SECONDS, or once the server has closed every connection.
"""
import resource, selectors, socket, sys, time

host, port, per_source, seconds, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
refused_within = float(sys.argv[6])
sources = sys.argv[7:]
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

PARTIAL = {
    "silent": b"",
    "http": b"GET /metrics HTTP/1.1\r\nHost: liveroom\r\nUser-Agent: half-open\r\n",
    # A TLS handshake record header announcing 512 bytes, and 4 bytes of a ClientHello.
    "tls": bytes([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC]),
}[mode]

selector = selectors.DefaultSelector()
refused = answered = timed_out = 0
ages = []


def watch(timeout):
    """Reads what the server did to the connections: closed ones are sorted by their age."""
    global refused, answered, timed_out
    for key, _ in selector.select(timeout=timeout):
        s, data = key.fileobj, key.data
        try:
            chunk = s.recv(65536)
            ended = not chunk
        except BlockingIOError:
            chunk, ended = b"", False
        except OSError:
            chunk, ended = b"", True
        data[1] += chunk[:64]
        if not ended:
            continue
        selector.unregister(s)
        s.close()
        age = time.monotonic() - data[0]
        if age < refused_within:
            refused += 1
            if data[1].startswith(b"HTTP/1.1 429") or data[1].startswith(b"HTTP/1.1 503"):
                answered += 1
        else:
            timed_out += 1
            ages.append(age)


def state():
    low = f"{min(ages):.1f}" if ages else "-"
    high = f"{max(ages):.1f}" if ages else "-"
    return f"state {len(selector.get_map())} {refused} {answered} {timed_out} {low} {high}"


count, started = 0, time.monotonic()
for source in sources:
    for _ in range(per_source):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind((source, 0))
        s.settimeout(10)
        s.connect((host, port))
        opened_at = time.monotonic()
        if PARTIAL:
            try:
                s.sendall(PARTIAL)
            except OSError:
                pass
        s.setblocking(False)
        selector.register(s, selectors.EVENT_READ, [opened_at, b""])
        count += 1
        watch(0)
print(f"opened {count} {time.monotonic() - started:.1f}", flush=True)

deadline, next_report = time.monotonic() + seconds, 0.0
while selector.get_map() and time.monotonic() < deadline:
    watch(0.1)
    if time.monotonic() >= next_report:
        print(state(), flush=True)
        next_report = time.monotonic() + 0.5
print(state(), flush=True)
print("done", flush=True)
for key in list(selector.get_map().values()):
    key.fileobj.close()
