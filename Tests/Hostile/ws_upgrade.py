"""The WebSocket upgrade the hostile clients do by hand: one GET, read up to the blank line."""
import base64, os


def upgrade(sock, host, port):
    """Sends the upgrade request on a connected socket and reads the answer's head.

    Returns (upgraded, bytes after the head): upgraded is whether the answer is 101; the bytes
    may already hold the server's first frames.
    """
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall((f"GET /ws HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        if not chunk:
            return False, b""
        head += chunk
    head, rest = head.split(b"\r\n\r\n", 1)
    return head.startswith(b"HTTP/1.1 101"), rest
