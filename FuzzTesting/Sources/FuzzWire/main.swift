import FuzzSupport
import LiveRoomWire
import NIOCore

/// Feeds the same bytes to every wire-format parser the media port and signaling meet:
/// each must parse or throw, never crash. What parses must serialize again, and the SEI
/// readers must keep their promises (``fuzzSEI(_:)``).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let raw = UnsafeRawBufferPointer(start: data, count: size)
    let buffer = ByteBuffer(bytes: raw)
    _ = DatagramKind(datagram: buffer)
    if let message = try? STUNMessage.parse(buffer) { _ = message.serialize() }
    if let packet = try? RTPPacket.parse(buffer) { _ = try? packet.serialize() }
    if let packets = try? RTCPPacket.parseCompound(buffer) { _ = try? RTCPPacket.serializeCompound(packets) }
    _ = try? VP8RTPPayload.parse(buffer)
    _ = try? VP8FrameHeader.parse(buffer)
    _ = try? H264RTPPayload.parse(buffer)
    var depacketizer = H264Depacketizer()
    _ = try? depacketizer.push(payload: buffer, sequenceNumber: 1, timestamp: 0, marker: true)
    if let sdp = try? SessionDescription.parse(String(decoding: raw, as: UTF8.self)) { _ = sdp.serialize() }
    fuzzSEI(Array(raw))
    return 0
}

/// The SEI readers: an SEI NAL unit, an access unit, a frame's chunks and renumbering in place.
/// Besides not crashing, what they return must hold what they promise.
func fuzzSEI(_ bytes: [UInt8]) {
    // What is read from a unit is read back the same from the unit built of it.
    let messages = H264SEI.messages(inNALUnit: bytes)
    precondition(messages.allSatisfy { SEIMessage.isAllowedPayloadType($0.message.payloadType) })
    precondition(H264SEI.messages(inNALUnit: H264SEI.nalUnit(messages)) == messages)
    _ = H264SEI.messages(inAccessUnit: bytes)
    _ = H264SEI.inserting(H264SEI.nalUnit([SEIMessage(data: [0, 0, 1])]), into: bytes)

    // The input as chunks, each after a byte giving its length; in order, reversed and without the first.
    var chunks: [[UInt8]] = []
    var index = 0
    while index < bytes.count {
        let length = Int(bytes[index])
        chunks.append(Array(bytes[(index + 1)..<min(index + 1 + length, bytes.count)]))
        index += 1 + length
    }
    for candidate in [chunks, chunks.reversed(), Array(chunks.dropFirst())] {
        guard let whole = SEIHeaderExtension.reassemble(candidate) else { continue }
        // A whole is made of the chunks' bytes: every byte of it came from one.
        precondition((1...SEIHeaderExtension.maxLength).contains(whole.count))
        var covered = [Bool](repeating: false, count: whole.count)
        for chunk in candidate {
            let offset = Int(chunk[2]) << 8 | Int(chunk[3])
            for position in offset..<(offset + chunk.count - 4) { covered[position] = true }
        }
        precondition(!covered.contains(false), "reassembled \(whole.count) bytes that no chunk gave")
    }
    // The input as a frame's SEI: chunked and put back together, in any order.
    let own = SEIHeaderExtension.chunks(of: bytes)
    precondition(own.isEmpty == (bytes.isEmpty || bytes.count > SEIHeaderExtension.maxLength))
    if !own.isEmpty { precondition(SEIHeaderExtension.reassemble(own.reversed()) == bytes) }

    // Renumbering in place changes ids only: what parsed before parses after with the same data.
    let from = bytes.count > 1 ? bytes[1] & 0x0F : 12
    for to in [UInt8(1), 14, 200] {
        var copy = bytes
        let changed = RTPHeaderExtension.renumber(from, to: to, inPacket: &copy)
        precondition(copy.count == bytes.count && (changed || copy == bytes))
        if let before = try? RTPPacket.parse(ByteBuffer(bytes: bytes)), let elements = before.header.headerExtension?.elements {
            let after = try? RTPPacket.parse(ByteBuffer(bytes: copy))
            precondition(after?.header.headerExtension?.elements.map(\.data) == elements.map(\.data))
            precondition(after?.payload == before.payload)
        }
    }
}

@_cdecl("FuzzWire_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv, fuzzOne)
}
