#!/usr/bin/env python3
"""SEI latency and frame alignment, RTC and CDN, next to custom messages in the same run.

usage: python3 scripts/sei-bench.py [BIN_DIR] [MESSAGES] [CODEC]
  BIN_DIR   where liveroom-server and liveroom are (default .build/release)
  MESSAGES  how many SEI messages (and as many custom messages) to send (default 60)
  CODEC     vp8 or h264, the anchor's video (default vp8)

It starts nginx with the RTMP module on a free loopback port, a liveroom-server, an anchor
publishing `framecode` (540x960 at 15 fps: every picture shows its number), a mix task of the
anchor to nginx (540x960, 15 fps, 2 s GOP), an RTC audience member (`join --frame-code`) and a
CDN viewer (`play --frame-code`). It sends MESSAGES SEI messages, 4 a second, each followed by a
custom message with the same number, and reports for each path:
- latency: from the moment the line is written to the anchor's standard input to the moment the
  receiver prints its event (the custom message over signaling is the baseline);
- frame offset: the frame code of the picture the message came on minus the code of the frame
  the anchor put it on (0: the pop-up lands on the very frame).
Medians and 95th percentiles; these machines are shared, so compare the ratios.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from bench_support import Reader, free_port

bin_dir = sys.argv[1] if len(sys.argv) > 1 else ".build/release"
count = int(sys.argv[2]) if len(sys.argv) > 2 else 60
codec = sys.argv[3] if len(sys.argv) > 3 else "vp8"
APP, KEY = "1400000001", "sei-bench-secret"


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main():
    work = tempfile.mkdtemp(prefix="sei-bench-")
    processes = []
    try:
        rtmp_port = free_port()
        with open(f"{work}/nginx.conf", "w") as conf:
            conf.write(f"""load_module /usr/lib/nginx/modules/ngx_rtmp_module.so;
daemon off; master_process off; pid {work}/nginx.pid; error_log {work}/error.log warn;
events {{ worker_connections 256; }}
rtmp {{ access_log {work}/access.log; server {{ listen 127.0.0.1:{rtmp_port}; application live {{ live on; record off; wait_key on; }} }} }}
""")
        processes.append(subprocess.Popen(["nginx", "-c", f"{work}/nginx.conf"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        server = subprocess.Popen(
            [f"{bin_dir}/liveroom-server", "--host", "127.0.0.1", "--port", "0", "--media-port", "0", "--ice-tcp-port", "0",
             "--data-dir", f"{work}/data", "--sdk-app-id", APP, "--secret-key", KEY, "--egress-allow", "127.0.0.1", "--log-level", "warning"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        processes.append(server)
        url = None
        for line in server.stdout:
            if "listening on" in line:
                url = line.split("listening on ")[1].strip()
                break

        def join(user, role, extra):
            process = subprocess.Popen(
                [f"{bin_dir}/liveroom", "join", "--server", url, "--room", "bench", "--user-id", user, "--role", role,
                 "--sdk-app-id", APP, "--secret-key", KEY, "--json", "--frame-code"] + extra,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
            processes.append(process)
            return process, Reader(process, user)

        anchor, anchor_events = join("anchor", "anchor", ["--publish", "framecode", "--video-codec", codec, "--resolution", "540x960", "--fps", "15"])
        anchor_events.wait("onMediaConnected")
        fan, fan_events = join("fan", "audience", [])
        fan_events.wait("onFirstVideoFrame")
        stream = f"rtmp://127.0.0.1:{rtmp_port}/live/bench"
        request = {"target": {"mode": "mixStreamToCdn", "cdnUrlList": [{"rtmpUrl": stream}]},
                   "encoderParam": {"videoEncodedWidth": 540, "videoEncodedHeight": 960, "videoEncodedFPS": 15, "videoEncodedGOP": 2,
                                    "videoEncodedKbps": 1300},
                   "mixingConfig": {"layoutMode": "grid"}}
        anchor.stdin.write("start-publish " + json.dumps(request) + "\n")
        anchor.stdin.flush()
        anchor_events.wait("onCdnStreamStateChanged", match=lambda e: e.get("status") == 2)
        player = subprocess.Popen([f"{bin_dir}/liveroom", "play", stream, "--json", "--frame-code"],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
        processes.append(player)
        player_events = Reader(player, "play")
        player_events.wait("onFirstVideoFrame")
        time.sleep(2)

        sent = {}
        for number in range(count):
            sent[number] = time.monotonic()
            anchor.stdin.write(f"sei bench-{number}\ncustom 1 bench-{number}\n")
            anchor.stdin.flush()
            time.sleep(0.25)
        time.sleep(6)

        sent_codes = {e["messageHex"]: e["frameCode"] for _, e in anchor_events.named("onSEIMsgSent")}

        def path(receiver, event_name, field):
            latencies, offsets, seen = [], [], {}
            for stamp, event in receiver.named(event_name):
                text = event.get(field, "")
                if not text.startswith("bench-"):
                    continue
                number = int(text.split("-")[1])
                seen[number] = seen.get(number, 0) + 1
                if seen[number] > 1:
                    continue
                latencies.append((stamp - sent[number]) * 1000)
                hex_text = text.encode().hex()
                if "frameCode" in event and hex_text in sent_codes:
                    offsets.append((event["frameCode"] - sent_codes[hex_text] + 32768) % 65536 - 32768)
            duplicates = sum(n - 1 for n in seen.values())
            return latencies, offsets, duplicates

        rows = [
            ("custom message, RTC (baseline)", *path(fan_events, "onRecvCustomCmdMsg", "data")),
            ("SEI, RTC (onRecvSEIMsg)", *path(fan_events, "onRecvSEIMsg", "message")),
            ("SEI, CDN via mix (onReceiveSeiMessage)", *path(player_events, "onReceiveSeiMessage", "message")),
        ]
        baseline = statistics.median(rows[0][1]) if rows[0][1] else float("nan")
        print(f"sei-bench: {count} messages, anchor {codec} 540x960@15 framecode, mix 540x960@15 GOP 2 s to nginx-rtmp, loopback")
        print(f"{'path':40} {'got':>7} {'dup':>4} {'p50 ms':>8} {'p95 ms':>8} {'p50/base':>9} {'offset p50':>10} {'offset min..max':>16} {'offset 0':>9}")
        for name, latencies, offsets, duplicates in rows:
            if not latencies:
                print(f"{name:40} {0:>4}/{count:<2}  nothing received")
                continue
            p50, p95 = statistics.median(latencies), percentile(latencies, 0.95)
            offset = (f"{statistics.median(offsets):>10.0f} {min(offsets):>7}..{max(offsets):<8} {sum(1 for o in offsets if o == 0):>5}/{len(offsets):<3}"
                      if offsets else f"{'-':>10} {'-':>16} {'-':>9}")
            print(f"{name:40} {len(latencies):>3}/{count:<3} {duplicates:>4} {p50:>8.1f} {p95:>8.1f} {p50 / baseline:>9.2f} {offset}")
        print("latency: from writing the line to the anchor's standard input to the receiver printing its event")
        print("offset: frame code of the picture the message came on minus the frame the anchor put it on (0 = same frame)")
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
