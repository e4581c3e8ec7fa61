#!/usr/bin/env bash
# Installs the Debian packages LiveRoom builds and tests with, only those missing.
# Idempotent: a second run installs nothing.
set -euo pipefail

packages=(
  pkg-config
  libsrtp2-dev libopus-dev libvpx-dev libssl-dev zlib1g-dev libsqlite3-dev
  libavformat-dev libavcodec-dev libavutil-dev libswscale-dev libswresample-dev
  ffmpeg
  # Interop tests: GStreamer's webrtcbin from Python (Debian's python3 with python3-gi).
  python3-gi gir1.2-gstreamer-1.0 gir1.2-gst-plugins-base-1.0 gir1.2-gst-plugins-bad-1.0 gir1.2-nice-0.1
  gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad gstreamer1.0-nice gstreamer1.0-libav
  # H.264 from webrtcbin publishers (x264enc).
  gstreamer1.0-plugins-ugly
  # RTMP tests: a real RTMP origin, started unprivileged by the tests on a free loopback port.
  nginx libnginx-mod-rtmp
  # Hostile tests: a TLS endpoint with a self-signed certificate (openssl s_server), and raw
  # WebSocket floods (python3).
  openssl ca-certificates python3
  # TLS tests: an https client that checks the server's certificate (curl).
  curl
  # Real-network tests: network namespaces joined by veth pairs (run as root, as CI does).
  iproute2 nftables
  # Watch page tests: a real browser (headless Chromium, driven over its DevTools protocol).
  chromium
  # Cluster tests: a real PostgreSQL server, started unprivileged by the tests in a temporary
  # directory on a free loopback port (initdb and pg_ctl from /usr/lib/postgresql/N/bin).
  postgresql
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "Installing: ${missing[*]}"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Swift comes from swift.org's toolchain, not from Debian; /opt/swift is where this project's machines keep it.
if ! command -v swift >/dev/null 2>&1; then
  if [ -x /opt/swift/usr/bin/swift ]; then
    echo "Swift is at /opt/swift/usr/bin; add it to PATH" >&2
  else
    echo "Swift 6.2 or later is needed: install a toolchain from swift.org" >&2
  fi
  exit 1
fi
