// SEI messages in H.264 access units as the browser hands them to an encoded transform
// (Annex B: NAL units after 00 00 01 start codes), so a pop-up that rides on the video shows on
// the frame it came with. docs/media.md describes what anchors send: an SEI NAL unit of
// payload type 242 (or 100–254 except 244), or 5 with a 16-byte UUID, before the picture.

/** At most this many messages are read from one frame (as the server and the CLI read). */
export const maxMessagesPerFrame = 32;

const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
/** user_data_unregistered UUIDs that are not anchors' messages: x264's version, LiveRoom's tag. */
const ignoredUUIDs = new Set([
  'dc45e9bde6d948b7962cd820d923eeef',
  hex(new TextEncoder().encode('LiveRoomSEITag01')),
]);

/**
 * The anchors' SEI messages in one encoded H.264 frame: `{ payloadType, uuid (type 5 only),
 * data }`, in order. Malformed units end the search in that unit; nothing is thrown.
 * @param {Uint8Array} frame
 */
export function seiMessages(frame) {
  const messages = [];
  const starts = [];
  for (let i = 0; i + 2 < frame.length; i++) {
    if (frame[i] === 0 && frame[i + 1] === 0 && frame[i + 2] === 1) {
      starts.push(i + 3);
      i += 2;
    }
  }
  for (let s = 0; s < starts.length && messages.length < maxMessagesPerFrame; s++) {
    const begin = starts[s];
    if (begin >= frame.length || (frame[begin] & 0x1f) !== 6) continue;
    let end = s + 1 < starts.length ? starts[s + 1] - 3 : frame.length;
    while (end > begin + 1 && frame[end - 1] === 0) end--; // a four-byte start code's leading zero
    readMessages(unescape(frame.subarray(begin + 1, end)), messages);
  }
  return messages.slice(0, maxMessagesPerFrame);
}

/** The unit's payload without emulation prevention bytes (00 00 03 → 00 00). */
function unescape(bytes) {
  const out = new Uint8Array(bytes.length);
  let length = 0;
  let zeros = 0;
  for (const byte of bytes) {
    if (zeros >= 2 && byte === 3) { zeros = 0; continue; }
    zeros = byte === 0 ? zeros + 1 : 0;
    out[length++] = byte;
  }
  return out.subarray(0, length);
}

function readMessages(rbsp, messages) {
  let p = 0;
  const number = () => {
    let value = 0;
    while (p < rbsp.length && rbsp[p] === 0xff) { value += 255; p++; }
    return p < rbsp.length ? value + rbsp[p++] : -1;
  };
  // The last byte holding 0x80 is the unit's stop bit.
  while (p < rbsp.length - 1 && messages.length < maxMessagesPerFrame) {
    const type = number();
    const size = number();
    if (type < 0 || size < 0 || p + size > rbsp.length) return;
    const payload = rbsp.subarray(p, p + size);
    p += size;
    if (type === 5) {
      if (size < 16 || ignoredUUIDs.has(hex(payload.subarray(0, 16)))) continue;
      messages.push({ payloadType: 5, uuid: hex(payload.subarray(0, 16)), data: payload.slice(16) });
    } else if (type >= 100 && type <= 254 && type !== 244) {
      messages.push({ payloadType: type, data: payload.slice() });
    }
  }
}
