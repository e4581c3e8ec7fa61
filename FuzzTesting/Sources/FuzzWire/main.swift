import FuzzSupport
import LiveRoomWire
import NIOCore

/// Feeds the same bytes to every wire-format parser the media port and signaling meet:
/// each must parse or throw, never crash. What parses must serialize again.
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
    return 0
}

@_cdecl("FuzzWire_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv, fuzzOne)
}
