#!/usr/bin/python3
"""A clapper for lip-sync measurements: a white picture and a 1 kHz beep together, for 100 ms
every 2 s (from 1 s on), and the audio-video offset of a recording of it.

Usage: clapper.py make DIR SECONDS      writes DIR/clapper.mkv (H.264 + PCM), .y4m and .wav
       clapper.py analyse FILE          prints {"offsets": [ms, ...]}: each white picture's time
                                        minus the nearest beep's onset within 1 s (positive:
                                        video late)
Used by scripts/sync-bench.py and the end-to-end tests; needs ffmpeg.
"""
import json
import re
import subprocess
import sys


def make_clapper(work, length, width=320, height=180, fps=30):
    """The clapper as a file for the CLI and webrtcbin, and as .y4m and .wav for Chromium's fake devices."""
    video = (f"color=c=black:s={width}x{height}:r={fps}:d={length},"
             "drawbox=x=0:y=0:w=iw:h=ih:color=white:t=fill:enable='lt(mod(t+1\\,2)\\,0.1)'")
    audio = f"aevalsrc=if(lt(mod(t+1\\,2)\\,0.1)\\,0.25*sin(2*PI*1000*t)\\,0):s=48000:d={length}:c=stereo"
    run = lambda *args: subprocess.run(["ffmpeg", "-v", "error", "-y", *args], check=True)
    run("-f", "lavfi", "-i", video, "-f", "lavfi", "-i", audio, "-c:v", "libx264", "-preset", "ultrafast", "-g", str(fps),
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


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make_clapper(sys.argv[2], int(sys.argv[3]))
    else:
        print(json.dumps({"offsets": analyse(sys.argv[2])}), flush=True)
