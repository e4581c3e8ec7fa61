import NIOCore
import Testing
@testable import LiveRoomWire

@Suite("VP8 RTP payload (RFC 7741)")
struct VP8Tests {
    // Keyframe: tag (P=0, show, first partition 100), start code, 640x480.
    static let keyframeStart: [UInt8] = hexBytes("90 0c 00 9d 01 2a 80 02 e0 01") + Array(repeating: 0xAA, count: 20)
    static let interframeStart: [UInt8] = hexBytes("91 0c 00") + Array(repeating: 0xBB, count: 20)

    @Test func parsesMinimalDescriptor() throws {
        let payload = try VP8RTPPayload.parse(ByteBuffer(bytes: [0x10] + Self.keyframeStart))
        #expect(payload.descriptor == VP8PayloadDescriptor(startOfPartition: true))
        #expect(payload.startsFrame)
        #expect(payload.startsKeyframe)
        #expect(payload.data.bytes == Self.keyframeStart)
        let header = try VP8FrameHeader.parse(payload.data)
        #expect(header.isKeyframe && header.showFrame && header.version == 0)
        #expect(header.firstPartitionSize == 100)
        #expect(header.width == 640 && header.height == 480)
    }

    @Test func parsesAllExtensions() throws {
        // X=1 N=1 S=1 PID=0 | I L T K | M=1 PictureID 0x1234 | TL0PICIDX 5 | TID=2 Y=1 KEYIDX=17
        let bytes = hexBytes("b0 f0 92 34 05 b1") + Self.interframeStart
        let payload = try VP8RTPPayload.parse(ByteBuffer(bytes: bytes))
        let descriptor = payload.descriptor
        #expect(descriptor.nonReference)
        #expect(descriptor.startOfPartition)
        #expect(descriptor.partitionIndex == 0)
        #expect(descriptor.pictureID == .fifteenBit(0x1234))
        #expect(descriptor.pictureID?.value == 0x1234)
        #expect(descriptor.tl0PictureIndex == 5)
        #expect(descriptor.temporalLayerID == 2)
        #expect(descriptor.layerSync)
        #expect(descriptor.keyIndex == 17)
        #expect(descriptor.size == 6)
        #expect(payload.startsFrame)
        #expect(!payload.startsKeyframe)  // P bit set
        #expect(try payload.serialize().bytes == bytes)
        #expect(try VP8FrameHeader.parse(payload.data).isKeyframe == false)
    }

    @Test func sevenBitPictureIDAndKeyIndexOnly() throws {
        let bytes = hexBytes("93 80 7f") + Self.keyframeStart  // X=1, S=1, PID=3; I; 7-bit id 127
        let payload = try VP8RTPPayload.parse(ByteBuffer(bytes: bytes))
        #expect(payload.descriptor.pictureID == .sevenBit(127))
        #expect(payload.descriptor.partitionIndex == 3)
        #expect(!payload.startsFrame)
        #expect(!payload.startsKeyframe)  // not partition 0
        #expect(try payload.serialize().bytes == bytes)
        let keyOnly = hexBytes("90 10 0c") + Self.interframeStart  // K only: KEYIDX 12
        let parsed = try VP8RTPPayload.parse(ByteBuffer(bytes: keyOnly))
        #expect(parsed.descriptor.keyIndex == 12)
        #expect(parsed.descriptor.temporalLayerID == nil)
        #expect(try parsed.serialize().bytes == keyOnly)
    }

    @Test func continuationPacketIsNotKeyframeStart() throws {
        let payload = try VP8RTPPayload.parse(ByteBuffer(bytes: [0x00] + Self.keyframeStart))
        #expect(!payload.startsFrame)
        #expect(!payload.startsKeyframe)
    }

    @Test func pictureIDWraps() {
        #expect(VP8PayloadDescriptor.PictureID.fifteenBit(0x7FFF).next == .fifteenBit(0))
        #expect(VP8PayloadDescriptor.PictureID.sevenBit(0x7F).next == .sevenBit(0))
    }

    @Test func packetizerSplitsAndReassembles() throws {
        var generator = SeededGenerator(seed: 3)
        var packetizer = VP8Packetizer(maxPayloadSize: 100, firstPictureID: .fifteenBit(0x7FFE))
        for frameSize in [1, 95, 96, 97, 500, 1_234] {
            let frame = Self.keyframeStart + (0..<max(0, frameSize - Self.keyframeStart.count)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let expectedID = packetizer.nextPictureID
            let payloads = try packetizer.packetize(frame: ByteBuffer(bytes: Array(frame.prefix(frameSize))))
            var reassembled: [UInt8] = []
            for (index, bytes) in payloads.enumerated() {
                #expect(bytes.readableBytes <= 100)
                let payload = try VP8RTPPayload.parse(bytes)
                #expect(payload.descriptor.startOfPartition == (index == 0))
                #expect(payload.descriptor.partitionIndex == 0)
                #expect(payload.descriptor.pictureID == expectedID)
                reassembled += payload.data.bytes
            }
            #expect(reassembled == Array(frame.prefix(frameSize)))
            if frameSize >= 1 { #expect(try VP8RTPPayload.parse(payloads[0]).startsKeyframe == (frame[0] & 1 == 0)) }
            let sizes = payloads.map(\.readableBytes)
            #expect(sizes.max()! - sizes.min()! <= 1)
        }
        #expect(packetizer.nextPictureID == .fifteenBit(4))
    }

    @Test func packetizerRejectsBadArguments() {
        var tiny = VP8Packetizer(maxPayloadSize: 4)  // 4-byte descriptor, no room
        #expect(throws: WireError.self) { try tiny.packetize(frame: ByteBuffer(bytes: [1])) }
        var fine = VP8Packetizer(maxPayloadSize: 100, firstPictureID: nil)
        #expect(throws: WireError.self) { try fine.packetize(frame: ByteBuffer()) }
        #expect(throws: WireError.self) {
            var buffer = ByteBuffer()
            try VP8PayloadDescriptor(startOfPartition: true, temporalLayerID: 4).write(into: &buffer)
        }
    }

    @Test func malformedPayloadsThrow() {
        func kind(_ bytes: [UInt8]) -> WireError.Kind? {
            do { _ = try VP8RTPPayload.parse(ByteBuffer(bytes: bytes)); return nil } catch { return error.kind }
        }
        #expect(kind([]) == .truncated)
        #expect(kind([0x10]) == .truncated)
        #expect(kind([0x90]) == .truncated)
        #expect(kind([0x90, 0x80, 0x81]) == .truncated)  // 15-bit id missing low byte
        #expect(kind([0x90, 0x40]) == .truncated)
        #expect(kind([0x90, 0x20]) == .truncated)
        #expect(throws: WireError.self) { try VP8FrameHeader.parse(ByteBuffer(bytes: hexBytes("90 0c 00 9d 01 2b 80 02 e0 01"))) }
        #expect(throws: WireError.self) { try VP8FrameHeader.parse(ByteBuffer(bytes: hexBytes("90 0c 00 9d 01 2a 80"))) }
    }

    @Test func parserIsTotal() throws {
        var parsed = 0
        let seeds = [[0x10] + Self.keyframeStart, hexBytes("b0 f0 92 34 05 b1") + Self.interframeStart]
        for input in hostileInputs(seeds: seeds) {
            do {
                let payload = try VP8RTPPayload.parse(input)
                parsed += 1
                _ = payload.startsKeyframe
                #expect(try VP8RTPPayload.parse(try payload.serialize()) == payload)
                if payload.startsFrame { _ = try? VP8FrameHeader.parse(payload.data) }
            } catch {
                #expect(!error.message.isEmpty)
            }
        }
        #expect(parsed > 100)
    }
}
