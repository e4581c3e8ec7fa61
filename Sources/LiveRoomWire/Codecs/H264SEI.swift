import NIOCore

/// H.264 SEI NAL units (ITU-T H.264 7.3.2.3 and D.1): build one from messages, read the
/// messages back, and put one into an access unit before its first slice, where decoders and
/// FFmpeg take it as part of that picture (an SEI after a slice is dropped as late).
public enum H264SEI {
    /// The UUID of the user_data_unregistered message in which x264 writes its version and options.
    public static let x264UUID: [UInt8] = [0xDC, 0x45, 0xE9, 0xBD, 0xE6, 0xD9, 0x48, 0xB7, 0x96, 0x2C, 0xD8, 0x20, 0xD9, 0x23, 0xEE, 0xEF]

    /// The most messages read from one NAL unit; the rest are ignored.
    public static let maxMessagesPerNALUnit = 32

    /// An SEI NAL unit (header byte, RBSP with emulation prevention, trailing bits).
    public static func nalUnit(_ messages: [SEIMessage]) -> [UInt8] {
        var rbsp: [UInt8] = []
        for message in messages {
            let payload = message.payload
            appendCoded(message.payloadType, to: &rbsp)
            appendCoded(payload.count, to: &rbsp)
            rbsp += payload
        }
        rbsp.append(0x80)
        return [H264NALUnitType.sei] + H264EmulationPrevention.adding(to: rbsp)
    }

    /// The SEI NAL unit of tagged messages: each tag right before its message.
    public static func nalUnit(_ tagged: [TaggedSEIMessage]) -> [UInt8] {
        nalUnit(tagged.flatMap { item in (item.tag.map { [$0.message] } ?? []) + [item.message] })
    }

    /// The messages a sender put in an SEI NAL unit (with its header byte), each with the tag
    /// before it; tags, payload types a sender may not use and x264's version message are not
    /// listed. Malformed trailing data ends the list.
    public static func messages(inNALUnit unit: some Collection<UInt8>) -> [TaggedSEIMessage] {
        guard let header = unit.first, H264NALUnitType.of(headerByte: header) == H264NALUnitType.sei else { return [] }
        let rbsp = H264EmulationPrevention.removing(from: unit.dropFirst())
        var index = rbsp.startIndex
        var result: [TaggedSEIMessage] = []
        var pendingTag: SEITag?
        var count = 0
        func readCoded() -> Int? {
            var value = 0
            while index < rbsp.endIndex {
                let byte = rbsp[index]
                index += 1
                value += Int(byte)
                if byte != 0xFF { return value }
                guard value < 1 << 20 else { return nil }
            }
            return nil
        }
        // more_rbsp_data: anything but the trailing 0x80 (and zero padding) left.
        while index < rbsp.endIndex, rbsp[index...].contains(where: { $0 != 0 }), !(rbsp[index] == 0x80 && rbsp[(index + 1)...].allSatisfy { $0 == 0 }) {
            guard count < maxMessagesPerNALUnit, let type = readCoded(), let size = readCoded(), size <= rbsp.endIndex - index else { break }
            let payload = Array(rbsp[index..<(index + size)])
            index += size
            count += 1
            var message = SEIMessage(payloadType: type, data: payload)
            if type == 5 {
                guard payload.count >= 16 else { continue }
                message = SEIMessage(payloadType: 5, uuid: Array(payload.prefix(16)), data: Array(payload.dropFirst(16)))
            }
            if let tag = SEITag(message) {
                pendingTag = tag
                continue
            }
            // Only what a sender may send: not the decoder's own messages (buffering, timing…) nor
            // the encoder's version string that x264 puts on its first frame.
            guard SEIMessage.isAllowedPayloadType(message.payloadType), message.uuid != Self.x264UUID else {
                pendingTag = nil
                continue
            }
            result.append(TaggedSEIMessage(message: message, tag: pendingTag))
            pendingTag = nil
        }
        return result
    }

    /// The messages of every SEI NAL unit in an Annex B access unit.
    public static func messages(inAccessUnit accessUnit: [UInt8]) -> [TaggedSEIMessage] {
        guard let units = try? H264AnnexB.split(ByteBuffer(bytes: accessUnit)) else { return [] }
        return units.flatMap { unit in
            unit.readableBytesView.first.map { H264NALUnitType.of(headerByte: $0) == H264NALUnitType.sei } == true
                ? messages(inNALUnit: unit.readableBytesView) : []
        }
    }

    /// The access unit with `seiUnit` placed right before its first slice (after any access
    /// unit delimiter, parameter sets and earlier SEI). An access unit without a slice is
    /// returned unchanged.
    public static func inserting(_ seiUnit: [UInt8], into accessUnit: [UInt8]) -> [UInt8] {
        guard let units = try? H264AnnexB.split(ByteBuffer(bytes: accessUnit)),
            let slice = units.firstIndex(where: { unit in
                unit.readableBytesView.first.map {
                    let type = H264NALUnitType.of(headerByte: $0)
                    return type == H264NALUnitType.nonIDRSlice || type == H264NALUnitType.idrSlice
                } ?? false
            })
        else { return accessUnit }
        var joined = units
        joined.insert(ByteBuffer(bytes: seiUnit), at: slice)
        return Array(buffer: H264AnnexB.join(joined))
    }

    /// ue-style coding of payloadType and payloadSize: 0xFF per 255, then the rest.
    private static func appendCoded(_ value: Int, to bytes: inout [UInt8]) {
        var rest = value
        while rest >= 255 {
            bytes.append(0xFF)
            rest -= 255
        }
        bytes.append(UInt8(rest))
    }
}
