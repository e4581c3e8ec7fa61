#!/usr/bin/env python3
"""Lip sync and delay of publishers LiveRoom did not write, next to its own CLI's, in one run.

usage: python3 scripts/sync-bench.py [BIN_DIR] [SECONDS] [PUBLISHERS]
  BIN_DIR     where liveroom-server and liveroom are (default .build/release)
  SECONDS     how long each publisher is measured (default 20; 60 for the steady-delay figure)
  PUBLISHERS  comma separated, of cli, webrtcbin-vp8, webrtcbin-h264, chromium-vp8, chromium-h264
              (default all of them)

A clapper source: 320x180 at 30 fps, black with a white picture for 100 ms every 2 s, and a
1 kHz beep for the same 100 ms (sample-exact), made with ffmpeg. Each publisher publishes it
into a room of its own on one liveroom-server:
- cli: `liveroom join --publish file:clapper.mkv` (VP8 and Opus, LiveRoom's own sender);
- webrtcbin-vp8 / -h264: GStreamer's webrtcbin over WHIP (Tests/Interop/whip_publish.py, x264
  packetization-mode 1 for H.264), from the same file;
- chromium-vp8 / -h264: headless Chromium over WHIP from a page, its fake camera and microphone
  fed the clapper as a .y4m and a .wav file.
For each, three receivers:
- a CLI viewer (`liveroom join --record`): the audio-video offset in its recording, and the
  point2PointDelay its onStatistics reports (after the first 4 s);
- a mix of the room (StartPublishCdnStream, grid, 320x180 at 30 fps) pushed to nginx-rtmp and
  recorded from there with ffmpeg: the offset in that recording;
- the watch page in headless Chromium (WHEP): the offset of its playout, measured in the page
  (requestVideoFrameCallback's presentation time of the white picture against the beep's
  onset in the audio the page receives, in an AudioWorklet, both on the page's clock).
The offset is the white picture's time minus the beep's (positive: video late), for each clap
matched to a beep within 1 s; the table gives the claps matched, the median and the largest
offset. The first row analyses the clapper file itself: the analyser's own error.
"""
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

bin_dir = sys.argv[1] if len(sys.argv) > 1 else ".build/release"
seconds = int(sys.argv[2]) if len(sys.argv) > 2 else 20
publishers = sys.argv[3].split(",") if len(sys.argv) > 3 else ["cli", "webrtcbin-vp8", "webrtcbin-h264", "chromium-vp8", "chromium-h264"]
APP, KEY = "1400000002", "sync-bench-secret"
WIDTH, HEIGHT, FPS = 320, 180, 30
INTEROP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Tests", "Interop")
CHROMIUM_FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream",
                  "--allow-loopback-in-peer-connection", "--autoplay-policy=no-user-gesture-required", "--disable-background-timer-throttling",
                  "--disable-renderer-backgrounding", "--no-first-run", "--disable-extensions", "--disable-dev-shm-usage"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Reader:
    """Reads a process's JSON lines on a thread."""

    def __init__(self, process, name):
        self.process, self.name, self.events = process, name, []
        self.lock = threading.Lock()
        threading.Thread(target=self.run, daemon=True).start()

    def run(self):
        for line in self.process.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            with self.lock:
                self.events.append((time.monotonic(), event))

    def wait(self, name, timeout=30, match=lambda e: True):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                for _, event in self.events:
                    if event.get("event") == name and match(event):
                        return event
            time.sleep(0.05)
        raise RuntimeError(f"{self.name}: no {name} within {timeout} s")

    def named(self, name, since=0.0):
        with self.lock:
            return [event for stamp, event in self.events if event.get("event") == name and stamp >= since]


def make_clapper(work, length):
    """The clapper as a file for the CLI and webrtcbin, and as .y4m and .wav for Chromium's fake devices."""
    video = (f"color=c=black:s={WIDTH}x{HEIGHT}:r={FPS}:d={length},"
             "drawbox=x=0:y=0:w=iw:h=ih:color=white:t=fill:enable='lt(mod(t+1\\,2)\\,0.1)'")
    audio = f"aevalsrc=if(lt(mod(t+1\\,2)\\,0.1)\\,0.25*sin(2*PI*1000*t)\\,0):s=48000:d={length}:c=stereo"
    run = lambda *args: subprocess.run(["ffmpeg", "-v", "error", "-y", *args], check=True)
    run("-f", "lavfi", "-i", video, "-f", "lavfi", "-i", audio, "-c:v", "libx264", "-preset", "ultrafast", "-g", str(FPS),
        "-pix_fmt", "yuv420p", "-c:a", "pcm_s16le", f"{work}/clapper.mkv")
    run("-f", "lavfi", "-i", video, "-pix_fmt", "yuv420p", f"{work}/clapper.y4m")
    run("-f", "lavfi", "-i", audio, "-c:a", "pcm_s16le", f"{work}/clapper.wav")


def series(text, key):
    """(pts_time, value) pairs from ffmpeg's metadata=print output."""
    out, stamp = [], None
    for line in text.splitlines():
        found = re.search(r"pts_time:([-0-9.]+)", line)
        if found:
            stamp = float(found.group(1))
        elif line.startswith(key + "=") and stamp is not None:
            value = line.split("=", 1)[1]
            out.append((stamp, float(value) if value not in ("-inf", "inf", "nan") else -200.0))
    return out


def onsets(values, threshold, quiet):
    """Times where the value goes above `threshold` after at least `quiet` seconds below it."""
    found, last = [], None
    for stamp, value in values:
        if value > threshold:
            if last is None or stamp - last > quiet:
                found.append(stamp)
            last = stamp
    return found


def match(flashes, beeps):
    """Offsets (ms, video minus audio) of each flash against the nearest beep within 1 s."""
    offsets = []
    for flash in flashes:
        nearest = min(beeps, key=lambda beep: abs(beep - flash), default=None)
        if nearest is not None and abs(nearest - flash) < 1.0:
            offsets.append((flash - nearest) * 1000)
    return offsets


def analyse(path):
    """Offsets in a recording: the white pictures' pts against the beeps' onsets (1 ms windows)."""
    ffmpeg = lambda *args: subprocess.run(["ffmpeg", "-v", "error", "-i", path, *args, "-f", "null", "-"], capture_output=True, text=True, timeout=120).stdout
    luma = series(ffmpeg("-map", "0:v:0", "-vf", "scale=16:16,signalstats,metadata=mode=print:key=lavfi.signalstats.YAVG:file=-"),
                  "lavfi.signalstats.YAVG")
    level = series(ffmpeg("-map", "0:a:0", "-af", "aresample=48000,asetnsamples=n=48:p=0,astats=metadata=1:reset=1,"
                          "ametadata=mode=print:key=lavfi.astats.Overall.RMS_level:file=-"), "lavfi.astats.Overall.RMS_level")
    return match(onsets(luma, 128, 0.5), onsets(level, -30, 0.5))


def row(name, offsets, expected, delays=None):
    if not offsets:
        return f"| {name} | 0/{expected} | - | - | {delay_text(delays)} |"
    largest = max(offsets, key=abs)
    return f"| {name} | {len(offsets)}/{expected} | {statistics.median(offsets):+.0f} | {largest:+.0f} | {delay_text(delays)} |"


def delay_text(delays):
    if not delays:
        return "-"
    return f"{statistics.median(delays):.0f} ({min(delays):.0f}..{max(delays):.0f})"


class Bench:
    def __init__(self, work):
        self.work, self.processes = work, []

    def start(self, args, name, json_lines=False, **kwargs):
        log = open(f"{self.work}/{name}.log", "w")
        process = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE if json_lines else log, stderr=log, text=True, bufsize=1,
                                   start_new_session=True, **kwargs)
        self.processes.append(process)
        return process, (Reader(process, name) if json_lines else None)

    def stop(self, process, grace=10):
        if process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()

    def stop_all(self):
        for process in reversed(self.processes):
            self.stop(process)

    def usersig(self, user):
        return subprocess.run([f"{bin_dir}/liveroom", "usersig", "--sdk-app-id", APP, "--secret-key", KEY, "--user-id", user],
                              capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]

    def admin(self, action, body):
        query = f"sdkappid={APP}&identifier=administrator&usersig={self.usersig('administrator')}"
        request = urllib.request.Request(f"{self.url}/v1/{action}?{query}", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            answer = json.load(response)["Response"]
        if "Error" in answer:
            raise RuntimeError(f"{action}: {answer['Error']}")
        return answer

    def join(self, room, user, role, extra):
        return self.start([f"{bin_dir}/liveroom", "join", "--server", self.url, "--room", room, "--user-id", user, "--role", role,
                           "--sdk-app-id", APP, "--secret-key", KEY, "--json"] + extra, f"{room}-{user}", json_lines=True)

    def publish(self, kind, room, user):
        """Starts publisher `kind` as `user` in `room`; returns its process."""
        whip = f"{self.url}/whip/{room}/{user}"
        if kind == "cli":
            process, events = self.join(room, user, "anchor", ["--publish", f"file:{self.work}/clapper.mkv", "--resolution", f"{WIDTH}x{HEIGHT}",
                                                               "--fps", str(FPS), "--bitrate", "600"])
            return process
        if kind.startswith("webrtcbin-"):
            process, _ = self.start(["/usr/bin/python3", f"{INTEROP}/whip_publish.py", whip, self.usersig(user), str(seconds + 30),
                                     kind.split("-")[1], f"{self.work}/clapper.mkv"], f"{room}-{user}")
            return process
        codec = kind.split("-")[1]
        page = f"{self.work}/publish.html"
        with open(page, "w") as out:
            out.write(PUBLISH_PAGE)
        profile = f"{self.work}/chromium-{room}"
        process, _ = self.start(["chromium", *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                                 f"--use-file-for-fake-video-capture={self.work}/clapper.y4m",
                                 f"--use-file-for-fake-audio-capture={self.work}/clapper.wav",
                                 f"file://{page}#url={whip}&token={self.usersig(user)}&codec={codec}"], f"{room}-{user}")
        return process

    def measure(self, kind):
        room, user = f"sync-{kind}", "anchor"
        viewer, viewer_events = self.join(room, "fan", "audience", ["--record", f"{self.work}/rec-{kind}"])
        viewer_events.wait("onEnterRoom")
        publisher = self.publish(kind, room, user)
        viewer_events.wait("onFirstVideoFrame", timeout=30, match=lambda e: e.get("userId") == user)
        stream = f"rtmp://127.0.0.1:{self.rtmp_port}/live/{room}"
        task = self.admin("StartPublishCdnStream", {
            "SdkAppId": int(APP), "RoomId": room, "RoomIdType": 1, "WithTranscoding": 1, "AgentParams": {"UserId": "mixer"},
            "AudioParams": {"AudioEncode": {"SampleRate": 48000, "Channel": 2, "BitRate": 64}},
            "VideoParams": {"VideoEncode": {"Width": WIDTH, "Height": HEIGHT, "Fps": FPS, "BitRate": 600, "Gop": 1},
                            "LayoutParams": {"MixLayoutMode": 3}},
            "PublishCdnParams": [{"PublishCdnUrl": stream}]})["TaskId"]
        time.sleep(2)
        capture, _ = self.start(["ffmpeg", "-v", "error", "-y", "-i", stream, "-t", str(seconds), "-c", "copy", f"{self.work}/mix-{kind}.flv"],
                                f"{room}-capture")
        started = time.monotonic()
        time.sleep(seconds)
        delays = [stat["point2PointDelay"] for event in viewer_events.named("onStatistics", since=started + 4)
                  for stat in event.get("remoteStatistics", []) if stat.get("userId") == user and "point2PointDelay" in stat]
        capture.wait(timeout=30)
        self.admin("StopPublishCdnStream", {"SdkAppId": int(APP), "TaskId": task})
        viewer.stdin.write("leave\n")
        viewer.stdin.flush()
        viewer.wait(timeout=20)
        self.stop(publisher)
        claps = seconds // 2
        return [row(f"{kind} → CLI viewer's recording", analyse(f"{self.work}/rec-{kind}/{user}.mkv"), claps + 2, delays),
                row(f"{kind} → mix to nginx-rtmp", analyse(f"{self.work}/mix-{kind}.flv"), claps)]

    def run(self):
        make_clapper(self.work, seconds + 30)
        self.rtmp_port = free_port()
        with open(f"{self.work}/nginx.conf", "w") as conf:
            conf.write(f"""load_module /usr/lib/nginx/modules/ngx_rtmp_module.so;
daemon off; master_process off; pid {self.work}/nginx.pid; error_log {self.work}/nginx-error.log warn;
events {{ worker_connections 256; }}
rtmp {{ access_log {self.work}/access.log; server {{ listen 127.0.0.1:{self.rtmp_port}; application live {{ live on; record off; wait_key on; }} }} }}
""")
        self.start(["nginx", "-c", f"{self.work}/nginx.conf"], "nginx")
        server, _ = self.start([f"{bin_dir}/liveroom-server", "--host", "127.0.0.1", "--port", "0", "--media-port", "0", "--ice-tcp-port", "0",
                                "--data-dir", f"{self.work}/data", "--sdk-app-id", APP, "--secret-key", KEY, "--egress-allow", "127.0.0.1",
                                "--log-level", "warning"], "server", json_lines=False)
        self.url = wait_for_url(f"{self.work}/server.log")
        rows = [row("clapper file (the analyser's own error)", analyse(f"{self.work}/clapper.mkv"), (seconds + 30) // 2)]
        for kind in publishers:
            print(f"sync-bench: {kind} ...", file=sys.stderr, flush=True)
            rows += self.measure(kind)
        print(f"sync-bench: {seconds} s per publisher, clapper {WIDTH}x{HEIGHT}@{FPS} (white picture and 1 kHz beep, 100 ms every 2 s), loopback")
        print("| publisher → receiver | claps | A/V offset median, ms | largest, ms | point2PointDelay median (min..max), ms |")
        print("|---|---|---|---|---|")
        for line in rows:
            print(line)
        print("offset: the white picture's time minus the beep's (positive: video late); delay: the CLI viewer's onStatistics after the first 4 s")


def wait_for_url(log, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(log) as text:
            found = re.search(r"listening on (http://\S+)", text.read())
        if found:
            return found.group(1)
        time.sleep(0.1)
    raise RuntimeError("the server did not start; see " + log)


PUBLISH_PAGE = """<!doctype html>
<meta charset="utf-8">
<title>sync-bench publisher</title>
<script type="module">
const params = new URLSearchParams(location.hash.slice(1));
const stream = await navigator.mediaDevices.getUserMedia({
  video: { width: %d, height: %d, frameRate: %d },
  audio: { echoCancellation: false, noiseSuppression: false, autoGainControl: false },
});
const pc = new RTCPeerConnection();
for (const track of stream.getTracks()) {
  const transceiver = pc.addTransceiver(track, { direction: "sendonly", streams: [stream] });
  if (track.kind === "video") {
    const codec = "video/" + params.get("codec");
    transceiver.setCodecPreferences(RTCRtpSender.getCapabilities("video").codecs.filter((c) =>
      c.mimeType.toLowerCase() === codec && (codec !== "video/h264" || (c.sdpFmtpLine || "").includes("packetization-mode=1"))));
  }
}
await pc.setLocalDescription(await pc.createOffer());
await new Promise((resolve) => {
  pc.onicegatheringstatechange = () => pc.iceGatheringState === "complete" && resolve();
  setTimeout(resolve, 2000);
});
const answer = await fetch(params.get("url"), {
  method: "POST", headers: { "Content-Type": "application/sdp", Authorization: "Bearer " + params.get("token") }, body: pc.localDescription.sdp,
});
await pc.setRemoteDescription({ type: "answer", sdp: await answer.text() });
</script>
""" % (WIDTH, HEIGHT, FPS)


def main():
    work = tempfile.mkdtemp(prefix="sync-bench-")
    bench = Bench(work)
    try:
        bench.run()
    finally:
        bench.stop_all()
        if os.environ.get("SYNC_BENCH_KEEP"):
            print(f"sync-bench: files kept in {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
