/// SEI for codecs that have none (VP8): LiveRoom carries a frame's SEI in an RTP header
/// extension on that frame's packets, so it stays with its frame through the SFU (which
/// forwards packets untouched), NACK retransmissions (which resend the stored packets) and
/// frame reassembly. The carried bytes are an H.264 SEI NAL unit (``H264SEI``), so receivers
/// read VP8 and H.264 SEI alike.
///
/// The NAL unit is cut into chunks of at most ``chunkSize`` bytes spread over the frame's
/// packets from its first, each an RFC 8285 two-byte-form element: total length (16 bits),
/// offset (16 bits), bytes. A sender cuts a frame that carries SEI into as many packets as it
/// takes for every packet to stay near the usual size.
public enum SEIHeaderExtension {
    /// The `a=extmap` URI that negotiates the extension.
    public static let uri = "urn:liveroom:rtp-hdrext:sei"
    /// The id LiveRoom offers it with (two-byte form ids go to 255; this one is also valid in
    /// the one-byte form's range, which keeps it clear of nothing a peer could mind).
    public static let defaultID: UInt8 = 12
    /// Bytes of SEI per packet.
    public static let chunkSize = 240
    /// The most SEI bytes one frame carries (about 17 messages of 1000 bytes would not fit;
    /// a sender puts at most a few on one frame).
    public static let maxLength = 16 * chunkSize

    /// The element data for each packet of a frame carrying `unit` (first packet first).
    public static func chunks(of unit: [UInt8]) -> [[UInt8]] {
        guard !unit.isEmpty, unit.count <= maxLength else { return [] }
        let total = UInt16(unit.count)
        return stride(from: 0, to: unit.count, by: chunkSize).map { offset in
            [UInt8(total >> 8), UInt8(total & 0xFF), UInt8(offset >> 8), UInt8(offset & 0xFF)] + unit[offset..<min(offset + chunkSize, unit.count)]
        }
    }

    /// The header extension carrying `chunk` as element `id`.
    public static func headerExtension(_ chunk: [UInt8], id: UInt8 = defaultID) -> RTPHeaderExtension {
        .twoByte(appBits: 0, [RTPHeaderExtension.Element(id: id, data: chunk)])
    }

    /// The carried bytes put back together from a frame's chunks (in any order); nil when
    /// there are none or they do not make a whole.
    public static func reassemble(_ chunks: [[UInt8]]) -> [UInt8]? {
        guard let first = chunks.first, first.count >= 4 else { return nil }
        let total = Int(first[0]) << 8 | Int(first[1])
        guard total > 0, total <= maxLength else { return nil }
        var pieces: [(offset: Int, bytes: ArraySlice<UInt8>)] = []
        for chunk in chunks {
            guard chunk.count > 4, Int(chunk[0]) << 8 | Int(chunk[1]) == total else { return nil }
            pieces.append((Int(chunk[2]) << 8 | Int(chunk[3]), chunk.dropFirst(4)))
        }
        // The chunks must tile the whole: each starts where the one before ended.
        var unit: [UInt8] = []
        unit.reserveCapacity(total)
        for piece in pieces.sorted(by: { $0.offset < $1.offset }) {
            guard piece.offset == unit.count, unit.count + piece.bytes.count <= total else { return nil }
            unit += piece.bytes
        }
        return unit.count == total ? unit : nil
    }
}
