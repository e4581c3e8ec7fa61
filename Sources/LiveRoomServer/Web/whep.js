// WHEP playback (Sources/LiveRoomServer/HTTP/WHIPRoutes.swift): one peer connection at a time,
// POST /whep/<room>/<user>?anchor=<anchor> with the offer, DELETE on its Location to end it.
// A connection that fails, or stays disconnected for a few seconds, is made again. Where the
// browser has encoded transforms (Chromium's createEncodedStreams), H.264 frames are read for
// SEI messages on their way to the decoder.

import { seiMessages } from './sei.js';

/** Whether this browser lets the page see encoded frames. */
const encodedStreams = typeof RTCRtpReceiver !== 'undefined' && 'createEncodedStreams' in RTCRtpReceiver.prototype;

const disconnectedGraceMs = 4000;
const maxRestarts = 20;

export class WHEPPlayer {
  /**
   * @param {object} options `room`, `userId`, `userSig()` (the current UserSig), `privateMapKey`
   *   (empty when the server needs none), `video` (the
   *   element), `onState(state, detail)` with "negotiating" | "playing" | "failed" | "stopped",
   *   `onSEI(message)` with each SEI message of the video (`{ payloadType, uuid, data }`).
   */
  constructor(options) {
    this.options = options;
    this.pc = null;
    this.location = null;
    this.anchor = null;
    this.generation = 0;
    this.restarts = 0;
    this.timer = null;
  }

  /** Plays `anchor`, ending the current session first. */
  async play(anchor) {
    const generation = ++this.generation;
    this.options.onState('negotiating', anchor);
    await this.end();
    if (generation !== this.generation) return;
    this.anchor = anchor;
    const pc = new RTCPeerConnection({ bundlePolicy: 'max-bundle', ...(encodedStreams ? { encodedInsertableStreams: true } : {}) });
    this.pc = pc;
    pc.addTransceiver('video', { direction: 'recvonly' });
    pc.addTransceiver('audio', { direction: 'recvonly' });
    pc.ontrack = (event) => {
      if (encodedStreams) this.readFrames(event.receiver, event.track.kind);
      const video = this.options.video;
      const stream = event.streams[0] || new MediaStream([event.track]);
      if (video.srcObject !== stream) video.srcObject = stream;
      video.play().catch(() => {});
    };
    pc.onconnectionstatechange = () => this.watch(pc, generation);
    try {
      const offer = await pc.createOffer();
      await pc.setLocalDescription(offer);
      const { room, userId } = this.options;
      let url = `/whep/${encodeURIComponent(room)}/${encodeURIComponent(userId)}?anchor=${encodeURIComponent(anchor)}`;
      if (this.options.privateMapKey) url += `&privateMapKey=${encodeURIComponent(this.options.privateMapKey)}`;
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/sdp', Authorization: `Bearer ${this.options.userSig()}` },
        body: pc.localDescription.sdp,
        cache: 'no-store',
      });
      if (generation !== this.generation) { pc.close(); return; }
      if (response.status !== 201) {
        const text = (await response.text()).slice(0, 200);
        throw new Error(`WHEP ${response.status}: ${text}`);
      }
      this.location = response.headers.get('Location');
      await pc.setRemoteDescription({ type: 'answer', sdp: await response.text() });
    } catch (error) {
      if (generation !== this.generation) return;
      this.options.onState('failed', String(error.message || error));
      this.scheduleRestart(generation);
    }
  }

  /**
   * Passes a receiver's encoded frames on to its decoder (with encoded streams on, a receiver
   * whose frames are not passed on decodes nothing), reading H.264 video frames for SEI.
   */
  readFrames(receiver, kind) {
    let streams;
    try { streams = receiver.createEncodedStreams(); } catch { return; }
    const onSEI = kind === 'video' ? this.options.onSEI : null;
    const transform = new TransformStream({
      transform(frame, controller) {
        if (onSEI) {
          const mimeType = frame.getMetadata?.().mimeType;
          if (mimeType === undefined || mimeType.toLowerCase() === 'video/h264') {
            try {
              for (const message of seiMessages(new Uint8Array(frame.data))) onSEI(message);
            } catch { /* a frame the page cannot read still plays */ }
          }
        }
        controller.enqueue(frame);
      },
    });
    streams.readable.pipeThrough(transform).pipeTo(streams.writable).catch(() => {});
  }

  watch(pc, generation) {
    if (generation !== this.generation || pc !== this.pc) return;
    clearTimeout(this.timer);
    switch (pc.connectionState) {
      case 'connected':
        this.restarts = 0;
        this.options.onState('playing', this.anchor);
        break;
      case 'failed':
      case 'closed':
        this.options.onState('failed', 'the connection failed');
        this.scheduleRestart(generation);
        break;
      case 'disconnected':
        // A short outage often heals by itself; one that lasts gets a new session.
        this.timer = setTimeout(() => {
          if (generation === this.generation && pc.connectionState === 'disconnected') this.scheduleRestart(generation);
        }, disconnectedGraceMs);
        break;
    }
  }

  scheduleRestart(generation) {
    if (generation !== this.generation || this.anchor === null) return;
    if (this.restarts >= maxRestarts) {
      this.options.onState('failed', 'gave up playing; reload the page');
      return;
    }
    const delay = Math.min(8000, 500 * 2 ** this.restarts++);
    clearTimeout(this.timer);
    this.timer = setTimeout(() => { if (generation === this.generation) this.play(this.anchor); }, delay);
  }

  /** Ends the current session: closes the peer connection and DELETEs the WHEP resource. */
  async end() {
    clearTimeout(this.timer);
    const pc = this.pc;
    const location = this.location;
    this.pc = null;
    this.location = null;
    if (pc) pc.close();
    if (location) {
      try {
        await fetch(location, { method: 'DELETE', headers: { Authorization: `Bearer ${this.options.userSig()}` } });
      } catch { /* the server ends it with the peer connection */ }
    }
  }

  /** Stops playing altogether. */
  async stop() {
    this.generation++;
    this.anchor = null;
    await this.end();
    this.options.onState('stopped', null);
  }

  /** Frames the current connection decoded so far (from getStats), for tests and diagnostics. */
  async framesDecoded() {
    if (!this.pc) return 0;
    let frames = 0;
    (await this.pc.getStats()).forEach((report) => {
      if (report.type === 'inbound-rtp' && report.kind === 'video') frames += report.framesDecoded || 0;
    });
    return frames;
  }
}
