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
- chromium-vp8 / -h264: headless Chromium over WHIP from Tests/Interop/whip_publish.html, its
  fake camera and microphone fed the clapper as a .y4m and a .wav file.
For each, three receivers:
- a CLI viewer (`liveroom join --record`): the audio-video offset in its recording, and the
  point2PointDelay its onStatistics reports (after the first 4 s);
- a mix of the room (StartPublishCdnStream, grid, 320x180 at 30 fps) pushed to nginx-rtmp and
  recorded from there with ffmpeg: the offset in that recording;
- the watch page in headless Chromium (WHEP), driven over its DevTools pipe: the offset of its
  playout measured two ways. The probe: requestVideoFrameCallback's presentation time of the
  white picture against the beep's onset in the audio the page receives (an AudioWorklet on the
  video element's stream, put on the page's clock with AudioContext.getOutputTimestamp); the
  audio there goes through Web Audio, not the element's own output. getStats: Chromium's own
  estimatedPlayoutTimestamp of the audio played now minus that of the picture shown, every
  500 ms. The baseline for both is Chromium playing the clapper to itself through a local peer
  connection, no server (a page served by the bench over http).
The offset is the white picture's time minus the beep's (positive: video late), for each clap
matched to a beep within 1 s; the table gives the claps matched, the median and the largest
offset. The first row analyses the clapper file itself: the analyser's own error.
"""
import http.server
import json
import os
import re
import shutil
import signal
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
sys.path.insert(0, INTEROP)
from clapper import analyse, make_clapper, match  # noqa: E402
from bench_support import Reader, free_port  # noqa: E402
CHROMIUM_FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream",
                  "--allow-loopback-in-peer-connection", "--autoplay-policy=no-user-gesture-required", "--disable-background-timer-throttling",
                  "--disable-renderer-backgrounding", "--no-first-run", "--disable-extensions", "--disable-dev-shm-usage"]


def row(name, offsets, delays=None):
    if not offsets:
        return f"| {name} | 0 | - | - | {delay_text(delays)} |"
    largest = max(offsets, key=abs)
    return f"| {name} | {len(offsets)} | {statistics.median(offsets):+.0f} | {largest:+.0f} | {delay_text(delays)} |"


def playout_rows(name, playout, audio_state):
    """The page's two measures: the probe's (white picture presented against the beep heard),
    and Chromium's own (getStats: the capture time of the audio played now minus that of the
    picture shown, every 500 ms)."""
    heard = match([t / 1000 for t in playout["flashes"]], [t / 1000 for t in playout["beeps"]])
    stats = playout["stats"][4:]
    own = f"| {name}, getStats estimatedPlayoutTimestamp | {len(stats)} reads | {statistics.median(stats):+.0f} | {max(stats, key=abs):+.0f} | - |" if stats else f"| {name}, getStats | 0 reads | - | - | - |"
    return [row(f"{name}, probe (audio {audio_state})", heard), own]


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
        page = os.path.abspath(f"{INTEROP}/whip_publish.html")
        profile = f"{self.work}/chromium-{room}"
        process, _ = self.start(["chromium", *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                                 f"--use-file-for-fake-video-capture={self.work}/clapper.y4m",
                                 f"--use-file-for-fake-audio-capture={self.work}/clapper.wav",
                                 f"file://{page}#url={whip}&token={self.usersig(user)}&codec={codec}&width={WIDTH}&height={HEIGHT}&fps={FPS}"],
                                f"{room}-{user}")
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
        watcher = DevTools(self, f"{room}-watch", [*CHROMIUM_FLAGS, f"--user-data-dir={self.work}/chromium-watch-{room}"],
                           f"{self.url}/watch/{room}?userId=watcher&userSig={self.usersig('watcher')}")
        time.sleep(2)
        page = watcher.page()
        # The probe's AudioWorklet is a blob: script, which the page's Content-Security-Policy refuses.
        watcher.send("Page.enable", {}, page)
        watcher.send("Page.setBypassCSP", {"enabled": True}, page)
        # The page's peer connections, for getStats.
        watcher.send("Page.addScriptToEvaluateOnNewDocument", {"source": PEER_CONNECTIONS}, page)
        watcher.send("Page.reload", {}, page)
        time.sleep(2)
        audio_state = watcher.evaluate(page, PLAYOUT_PROBE)
        capture, _ = self.start(["ffmpeg", "-v", "error", "-y", "-i", stream, "-t", str(seconds), "-c", "copy", f"{self.work}/mix-{kind}.flv"],
                                f"{room}-capture")
        started = time.monotonic()
        time.sleep(seconds)
        delays = [stat["point2PointDelay"] for stamp, event in viewer_events.named("onStatistics") if stamp >= started + 4
                  for stat in event.get("remoteStatistics", []) if stat.get("userId") == user and "point2PointDelay" in stat]
        try:
            capture.wait(timeout=15)
        except subprocess.TimeoutExpired:
            # Short of SECONDS of stream (a late start, a gap): what it has is analysed.
            print(f"sync-bench: {kind}: the mix's recording ran past {seconds} s; stopped", file=sys.stderr)
            self.stop(capture)
        playout = watcher.evaluate(page, "window.__sync")
        self.stop(watcher.process)
        self.admin("StopPublishCdnStream", {"SdkAppId": int(APP), "TaskId": task})
        viewer.stdin.write("leave\n")
        viewer.stdin.flush()
        viewer.wait(timeout=20)
        self.stop(publisher)
        return [row(f"{kind} → CLI viewer's recording", analyse(f"{self.work}/rec-{kind}/{user}.mkv"), delays),
                row(f"{kind} → mix to nginx-rtmp", analyse(f"{self.work}/mix-{kind}.flv")),
                *playout_rows(f"{kind} → watch page playout", playout, audio_state)]

    def chromium_to_itself(self):
        """The watch page's baseline: Chromium playing the clapper from its fake devices through a
        peer connection to itself (no server), measured the same two ways."""
        with open(f"{self.work}/loop.html", "w") as out:
            out.write(LOOP_PAGE)
        class Files(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args):
                pass

        handler = lambda *args: Files(*args, directory=self.work)
        files = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=files.serve_forever, daemon=True).start()
        try:
            browser = DevTools(self, "loop", [*CHROMIUM_FLAGS, f"--user-data-dir={self.work}/chromium-loop",
                                              f"--use-file-for-fake-video-capture={self.work}/clapper.y4m",
                                              f"--use-file-for-fake-audio-capture={self.work}/clapper.wav"],
                               f"http://127.0.0.1:{files.server_address[1]}/loop.html")
            time.sleep(3)
            page = browser.page()
            audio_state = browser.evaluate(page, PLAYOUT_PROBE)
            time.sleep(seconds)
            playout = browser.evaluate(page, "window.__sync")
            self.stop(browser.process)
        finally:
            files.shutdown()
        return playout_rows("Chromium to itself (local peer connection, no server)", playout, audio_state)

    def run(self):
        make_clapper(self.work, seconds + 30, WIDTH, HEIGHT, FPS)
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
                                "--log-level", os.environ.get("SYNC_BENCH_LOG_LEVEL", "warning")], "server", json_lines=False)
        self.url = wait_for_url(f"{self.work}/server.log")
        rows = [row("clapper file (the analyser's own error)", analyse(f"{self.work}/clapper.mkv"))]
        print("sync-bench: Chromium to itself ...", file=sys.stderr, flush=True)
        rows += self.chromium_to_itself()
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


class DevTools:
    """Chromium's DevTools protocol over --remote-debugging-pipe (JSON messages ending in NUL on
    the browser's file descriptors 3 and 4): commands by id, answers matched to them."""

    def __init__(self, bench, name, flags, url):
        to_browser, self.commands = os.pipe()
        self.answers, from_browser = os.pipe()
        command = " ".join(["exec chromium", *flags, "--remote-debugging-pipe", f"'{url}'", f"3<&{to_browser}", f"4>&{from_browser}"])
        self.process, _ = bench.start(["bash", "-c", command], name, pass_fds=(to_browser, from_browser))
        os.close(to_browser)
        os.close(from_browser)
        self.next_id, self.pending, self.lock = 0, {}, threading.Lock()
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        buffer = b""
        while True:
            chunk = os.read(self.answers, 65536)
            if not chunk:
                return
            buffer += chunk
            while b"\0" in buffer:
                message, buffer = buffer.split(b"\0", 1)
                answer = json.loads(message)
                with self.lock:
                    if answer.get("id") in self.pending:
                        self.pending[answer["id"]] = answer

    def send(self, method, params=None, session=None, timeout=20):
        with self.lock:
            self.next_id += 1
            ident = self.next_id
            self.pending[ident] = None
        message = {"id": ident, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.commands, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                answer = self.pending[ident]
            if answer is not None:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer.get("result", {})
            time.sleep(0.02)
        raise RuntimeError(f"{method}: no answer within {timeout} s")

    def page(self):
        """A flat session on the first page."""
        targets = self.send("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        return self.send("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True})["sessionId"]

    def evaluate(self, session, expression):
        result = self.send("Runtime.evaluate", {"expression": expression, "awaitPromise": True, "returnByValue": True}, session)
        if "exceptionDetails" in result:
            raise RuntimeError(f"page: {result['exceptionDetails']}")
        return result["result"].get("value")


PEER_CONNECTIONS = """(() => {
  const Original = window.RTCPeerConnection;
  window.__pcs = [];
  window.RTCPeerConnection = function (...args) { const pc = new Original(...args); window.__pcs.push(pc); return pc; };
  window.RTCPeerConnection.prototype = Original.prototype;
  Object.setPrototypeOf(window.RTCPeerConnection, Original);
})()"""

# Installed in the watch page once it plays: the white picture's presentation time from
# requestVideoFrameCallback (drawn to a 16x16 canvas), the beep's onset in the audio the page
# receives (an AudioWorklet on the video element's stream) turned into the same clock by
# AudioContext.getOutputTimestamp. Both in performance.now() milliseconds.
PLAYOUT_PROBE = """(async () => {
  const video = document.getElementById('video');
  for (let i = 0; i < 200 && !(video.srcObject && video.srcObject.getAudioTracks().length && video.readyState >= 2); i++) {
    await new Promise((r) => setTimeout(r, 50));
  }
  const probe = window.__sync = { flashes: [], beeps: [], error: null };
  const canvas = new OffscreenCanvas(16, 16);
  const context = canvas.getContext('2d', { willReadFrequently: true });
  let bright = -1e9;
  const onFrame = (now, metadata) => {
    context.drawImage(video, 0, 0, 16, 16);
    const pixels = context.getImageData(0, 0, 16, 16).data;
    let sum = 0;
    for (let i = 0; i < pixels.length; i += 4) sum += 0.299 * pixels[i] + 0.587 * pixels[i + 1] + 0.114 * pixels[i + 2];
    if (sum / 256 > 128) {
      if (metadata.expectedDisplayTime - bright > 500) probe.flashes.push(metadata.expectedDisplayTime);
      bright = metadata.expectedDisplayTime;
    }
    video.requestVideoFrameCallback(onFrame);
  };
  video.requestVideoFrameCallback(onFrame);
  const audio = new AudioContext();
  const worklet = `registerProcessor('onsets', class extends AudioWorkletProcessor {
    constructor() { super(); this.loud = -1e9; }
    process(inputs) {
      const samples = inputs[0][0];
      if (samples) for (let i = 0; i < samples.length; i++) {
        if (Math.abs(samples[i]) > 0.05) {
          const frame = currentFrame + i;
          if (frame - this.loud > sampleRate / 2) this.port.postMessage(frame / sampleRate);
          this.loud = frame;
        }
      }
      return true;
    }
  });`;
  await audio.audioWorklet.addModule(URL.createObjectURL(new Blob([worklet], { type: 'text/javascript' })));
  const node = new AudioWorkletNode(audio, 'onsets');
  node.port.onmessage = (event) => {
    const stamp = audio.getOutputTimestamp();
    probe.beeps.push(stamp.performanceTime + (event.data - stamp.contextTime) * 1000);
  };
  probe.stats = [];
  setInterval(async () => {
    const pc = window.__pcs[window.__pcs.length - 1];
    if (!pc) return;
    const playout = {};
    (await pc.getStats()).forEach((s) => { if (s.type === 'inbound-rtp' && s.estimatedPlayoutTimestamp) playout[s.kind] = s.estimatedPlayoutTimestamp; });
    // Positive: the audio played now was captured later than the picture shown (video late).
    if (playout.audio && playout.video) probe.stats.push(playout.audio - playout.video);
  }, 500);
  audio.createMediaStreamSource(video.srcObject).connect(node);
  node.connect(audio.destination);
  await audio.resume();
  return audio.state;
})()"""


LOOP_PAGE = """<!doctype html>
<meta charset="utf-8">
<video id="video" autoplay playsinline muted></video>
<script type="module">
const stream = await navigator.mediaDevices.getUserMedia({
  video: { width: %d, height: %d, frameRate: %d },
  audio: { echoCancellation: false, noiseSuppression: false, autoGainControl: false },
});
const sender = new RTCPeerConnection(), receiver = new RTCPeerConnection();
window.__pcs = [receiver];
sender.onicecandidate = (event) => event.candidate && receiver.addIceCandidate(event.candidate);
receiver.onicecandidate = (event) => event.candidate && sender.addIceCandidate(event.candidate);
for (const track of stream.getTracks()) sender.addTrack(track, stream);
receiver.ontrack = (event) => {
  const video = document.getElementById('video');
  if (video.srcObject !== event.streams[0]) video.srcObject = event.streams[0];
  video.play().catch(() => {});
};
await sender.setLocalDescription(await sender.createOffer());
await receiver.setRemoteDescription(sender.localDescription);
await receiver.setLocalDescription(await receiver.createAnswer());
await sender.setRemoteDescription(receiver.localDescription);
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
