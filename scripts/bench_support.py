"""What the Python benches share: free loopback ports, and a process's JSON lines read on a thread."""
import json
import socket
import threading
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Reader:
    """Reads a process's JSON lines on a thread, stamping each with the monotonic time."""

    def __init__(self, process, name):
        self.process, self.name, self.events = process, name, []
        self.lock = threading.Lock()
        threading.Thread(target=self.run, daemon=True).start()

    def run(self):
        for line in self.process.stdout:
            stamp = time.monotonic()
            try:
                event = json.loads(line)
            except ValueError:
                continue
            with self.lock:
                self.events.append((stamp, event))

    def wait(self, name, timeout=30, match=lambda e: True):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                for _, event in self.events:
                    if event.get("event") == name and match(event):
                        return event
            time.sleep(0.05)
        raise SystemExit(f"{self.name}: no {name} within {timeout} s")

    def named(self, name):
        with self.lock:
            return [(stamp, event) for stamp, event in self.events if event.get("event") == name]
