#!/usr/bin/env python3
"""Frames delivered over a lossy, jittery path, at several loss rates.

usage: python3 scripts/loss-bench.py [BIN_DIR] [SECONDS]

For each loss rate (0, 5, 10, 20 % each way, 50 +- 30 ms delay each way) it starts
liveroom-server announcing 127.0.0.2, Tests/Tools/udp_impair.py on 127.0.0.2 in front of the
media port, an anchor publishing testsrc (320x240, 15 fps, VP8) and an audience member recording
it, all real processes on loopback; then counts the recorded frames with ffprobe. Prints, per
rate, the share of the frames sent in the recorded video's span (first to last video frame)
that arrived decodable. The baseline
is the 0 % row of the same run. BIN_DIR defaults to `swift build --show-bin-path`.
"""
import os, subprocess, sys, tempfile, time

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
bin_dir = sys.argv[1] if len(sys.argv) > 1 else subprocess.run(
    ["swift", "build", "--show-bin-path"], cwd=root, capture_output=True, text=True, check=True).stdout.strip()
seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 10.0
relay_script = os.path.join(root, "Tests", "Tools", "udp_impair.py")
app, secret = "1400000000", "loss-bench-secret-key-0123456789"


def wait_for(process, prefix, timeout=15):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        if line.startswith(prefix):
            return line.strip()
    raise RuntimeError(f"no line starting {prefix!r}")


def run(loss):
    with tempfile.TemporaryDirectory() as work:
        processes = []
        try:
            server = subprocess.Popen(
                [f"{bin_dir}/liveroom-server", "--host", "127.0.0.1", "--port", "0", "--media-port", "0", "--ice-tcp-port", "0", "--data-dir", f"{work}/data",
                 "--sdk-app-id", app, "--secret-key", secret, "--announce-ip", "127.0.0.2", "--log-level", "warning"],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            processes.append(server)
            url = wait_for(server, "LiveRoom server listening on ").split()[-1]
            media_port = wait_for(server, "Media UDP port: ").split()[-1]
            relay = subprocess.Popen(
                ["python3", relay_script, "127.0.0.2", media_port, "127.0.0.1", media_port, str(loss), "50", "30"],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            processes.append(relay)
            wait_for(relay, "ready")
            common = ["join", "--server", url, "--room", "bench", "--sdk-app-id", app, "--secret-key", secret, "--json"]
            host = subprocess.Popen(
                [f"{bin_dir}/liveroom"] + common + ["--user-id", "host", "--role", "anchor", "--publish", "testsrc",
                                                     "--resolution", "320x240", "--fps", "15", "--bitrate", "500"],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            processes.append(host)
            time.sleep(1)
            fan = subprocess.Popen(
                [f"{bin_dir}/liveroom"] + common + ["--user-id", "fan", "--record", f"{work}/rec", "--duration", str(seconds)],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            processes.append(fan)
            fan.wait(timeout=seconds + 30)
            # The video's own span, first to last frame: the file's duration also covers audio
            # that arrived before the first keyframe.
            probe = subprocess.run(
                ["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time", "-of", "csv=p=0",
                 f"{work}/rec/host.mkv"],
                capture_output=True, text=True, check=True)
            times = sorted(float(line) for line in probe.stdout.split() if line.strip())
            frames = len(times)
            span = times[-1] - times[0]
            return frames, span, frames / (round(span * 15) + 1)
        finally:
            for process in reversed(processes):
                if process.poll() is None:
                    process.terminate()
                    try:
                        process.wait(timeout=5)
                    except subprocess.TimeoutExpired:
                        process.kill()


print(f"{'loss each way':>14} {'frames':>7} {'span s':>7} {'delivered':>10} {'vs 0 %':>7}")
baseline = None
for loss in [0, 5, 10, 20]:
    frames, span, share = run(loss)
    baseline = baseline or share
    print(f"{loss:>13} % {frames:>7} {span:>7.1f} {share * 100:>9.1f} % {share / baseline:>7.2f}", flush=True)
