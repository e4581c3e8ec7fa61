import LiveRoomWire
import NIOCore

/// The codec-specific parts of receiving video over RTP: where frames start, which are
/// keyframes, and how a frame's payloads become a VP8 frame or an H.264 access unit.
/// The one place that reads video payloads: the SFU, the client and the task runner use it.
public enum VideoPayloadFormat {
    /// Whether a payload starts a frame, and whether it shows a keyframe (VP8: a key frame's
    /// first partition; H.264: an IDR slice or a sequence parameter set).
    public static func describe(_ payload: ByteBuffer, codec: VideoCodec) -> (startsFrame: Bool, marksKeyframe: Bool) {
        switch codec {
        case .vp8:
            guard let parsed = try? VP8RTPPayload.parse(payload) else { return (false, false) }
            return (parsed.startsFrame, parsed.startsKeyframe)
        case .h264:
            return describeH264(payload)
        }
    }

    private static func describeH264(_ payload: ByteBuffer) -> (Bool, Bool) {
        guard let parsed = try? H264RTPPayload.parse(payload) else { return (false, false) }
        /// A slice NAL whose slice header starts with first_mb_in_slice = 0 (ue(v) "1").
        func firstSlice(type: UInt8, headerBits: UInt8?) -> Bool {
            (type == H264NALUnitType.idrSlice || type == 1) && (headerBits ?? 0) & 0x80 != 0
        }
        // SPS, SEI and access unit delimiters open an access unit; a PPS follows an SPS.
        func opensAccessUnit(_ type: UInt8) -> Bool {
            type == H264NALUnitType.sps || type == H264NALUnitType.sei || type == H264NALUnitType.accessUnitDelimiter
        }
        switch parsed {
        case .singleNALUnit(let unit):
            let type = H264NALUnitType.of(headerByte: unit.getInteger(at: unit.readerIndex, as: UInt8.self) ?? 0)
            let starts = opensAccessUnit(type) || firstSlice(type: type, headerBits: unit.getInteger(at: unit.readerIndex + 1, as: UInt8.self))
            return (starts, parsed.startsKeyframe)
        case .aggregation(let units):
            let types = units.map { H264NALUnitType.of(headerByte: $0.getInteger(at: $0.readerIndex, as: UInt8.self) ?? 0) }
            let first = units.first
            let starts = types.first.map { opensAccessUnit($0) || firstSlice(type: $0, headerBits: first?.getInteger(at: first!.readerIndex + 1, as: UInt8.self)) } ?? false
            return (starts, parsed.startsKeyframe)
        case .fragment(let piece):
            let starts = piece.isStart && firstSlice(type: piece.nalType, headerBits: piece.data.getInteger(at: piece.data.readerIndex, as: UInt8.self))
            // Every fragment of an IDR slice marks the frame, not only the first.
            return (starts, piece.nalType == H264NALUnitType.idrSlice)
        }
    }

    /// The frame's bitstream: VP8 frame bytes, or an H.264 access unit in Annex B form.
    /// Nil when the payloads do not form a frame.
    public static func bitstream(of frame: VideoFrameAssembler.Frame, codec: VideoCodec) -> [UInt8]? {
        switch codec {
        case .vp8:
            var bytes: [UInt8] = []
            for packet in frame.packets {
                guard let parsed = try? VP8RTPPayload.parse(packet.payload) else { return nil }
                bytes += parsed.data.readableBytesView
            }
            return bytes.isEmpty ? nil : bytes
        case .h264:
            var depacketizer = H264Depacketizer()
            var units: [H264AccessUnit] = []
            for (index, packet) in frame.packets.enumerated() {
                let last = index == frame.packets.count - 1
                guard let completed = try? depacketizer.push(
                    payload: packet.payload, sequenceNumber: packet.sequenceNumber, timestamp: packet.timestamp, marker: last || packet.marker)
                else { return nil }
                units += completed
            }
            guard let unit = units.last, unit.isComplete, !unit.nalUnits.isEmpty else { return nil }
            return Array(buffer: unit.annexB)
        }
    }

    /// The SEI messages a frame carries: an H.264 access unit's SEI NAL units (`bitstream`),
    /// or, for VP8, the SEI NAL unit in the packets' header extension `extensionID`
    /// (``SEIHeaderExtension``).
    public static func sei(of frame: VideoFrameAssembler.Frame, bitstream: [UInt8], codec: VideoCodec, extensionID: UInt8?) -> [TaggedSEIMessage] {
        switch codec {
        case .h264:
            return H264SEI.messages(inAccessUnit: bitstream)
        case .vp8:
            guard let extensionID else { return [] }
            // A packet may carry several chunks, each its own element.
            let chunks = frame.packets.flatMap { packet in
                packet.headerExtension?.elements.filter { $0.id == extensionID }.map(\.data) ?? []
            }
            guard !chunks.isEmpty, let unit = SEIHeaderExtension.reassemble(chunks) else { return [] }
            return H264SEI.messages(inNALUnit: unit)
        }
    }
}
