#!/usr/bin/env python3
"""Sends unauthenticated STUN Binding requests whose USERNAME names nothing the server has to
its media port, over UDP and framed on its ICE-TCP port (RFC 4571).

usage: stun_probe.py HOST UDP_PORT TCP_PORT SOURCES USERNAME...

Each USERNAME is sent once from each of SOURCES UDP sockets (different source ports, so the
kernel spreads them over every media loop) and once over one ICE-TCP connection each. An
empty USERNAME sends a request with no USERNAME attribute. Prints, for the test:
  sent <udp datagrams> <tcp frames>
"""
import os, socket, struct, sys, time

host, udp_port, tcp_port, sources = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
usernames = sys.argv[5:]


def binding_request(username):
    attributes = b""
    if username:
        value = username.encode()
        attributes = struct.pack("!HH", 0x0006, len(value)) + value + b"\0" * (-len(value) % 4)
    return struct.pack("!HHI", 0x0001, len(attributes), 0x2112A442) + os.urandom(12) + attributes


udp = 0
sockets = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(sources)]
for s in sockets:
    for username in usernames:
        s.sendto(binding_request(username), (host, udp_port))
        udp += 1
tcp = 0
connections = []
for username in usernames:
    c = socket.create_connection((host, tcp_port), timeout=5)
    request = binding_request(username)
    c.sendall(struct.pack("!H", len(request)) + request)
    connections.append(c)
    tcp += 1
time.sleep(0.5)
for s in sockets + connections:
    s.close()
print(f"sent {udp} {tcp}", flush=True)
