import LiveRoomMedia
import LiveRoomTransport
import LiveRoomWire
import NIOCore
import Testing

@testable import LiveRoomClientKit

/// SEI on the publishing connection, against the in-memory server transport of ``EngineHarness``.
@Suite struct PublishConnectionTests {
    /// A connected publisher of `codec`; `withSEIExtension: false` answers without the extension.
    static func connected(_ codec: VideoCodec, withSEIExtension: Bool = true, now: ContinuousClock.Instant) throws -> (EngineHarness, PublishConnection) {
        let harness = try EngineHarness(options: MediaOptions(publish: .testCard, videoCodec: codec))
        let engine = harness.engine!
        var answer = try harness.answer(engine.makePublishOffer(), video: codec == .vp8 ? .vp8 : .h264, now: now)
        if !withSEIExtension {
            let stripped = answer.replacingOccurrences(of: "a=extmap:\(SEIHeaderExtension.defaultID) \(SEIHeaderExtension.uri)\r\n", with: "")
            #expect(stripped != answer)
            answer = stripped
        }
        try engine.startPublishing(answer: answer, connection: 1, now: now)
        harness.pump(now: now)
        let connection = try #require(engine.publisher)
        #expect(connection.isConnected)
        return (harness, connection)
    }

    /// Hands the connection's datagrams to the server; returns the RTP packets it decrypted.
    static func deliver(_ events: [PublishConnection.Event], to harness: EngineHarness, now: ContinuousClock.Instant) -> [RTPPacket] {
        harness.serverRTP.removeAll()
        for case .send(let datagram, _) in events {
            for event in harness.server!.receive(datagram, from: harness.clientAddress, now: now) { harness.handleServer(event, id: 1, now: now) }
        }
        return harness.serverRTP
    }

    static func message(_ size: Int, sequence: UInt32) -> TaggedSEIMessage {
        TaggedSEIMessage(
            message: SEIMessage(data: (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(sequence)) }),
            tag: SEITag(sequence: sequence, sentAtMilliseconds: 1_700_000_000_000))
    }

    static func vp8Frame(_ size: Int, keyframe: Bool) -> EncodedVideoFrame {
        let data = keyframe ? Array(MediaEngineLoopbackTests.keyframe.prefix(size)) : [0x31, 0x01, 0x00] + [UInt8](repeating: 0x5A, count: max(0, size - 3))
        return EncodedVideoFrame(codec: .vp8, data: data, isKeyframe: keyframe, pts: 3000)
    }

    @Test(arguments: [(3010, 1), (600, 1), (100, 1), (3010, 3), (40, 1), (40, 3)])
    func vp8SEIRidesInChunksOnTheFramesPackets(frameSize: Int, messages: Int) throws {
        let t0 = ContinuousClock.now
        let (harness, connection) = try Self.connected(.vp8, now: t0)
        let sei = (0..<messages).map { Self.message(1000, sequence: UInt32(77 + $0)) }
        let unit = H264SEI.nalUnit(sei)
        let chunks = SEIHeaderExtension.chunks(of: unit)
        #expect(chunks.count == (unit.count + 239) / 240)

        let frame = Self.vp8Frame(frameSize, keyframe: frameSize > 1000)
        let (events, carried) = connection.send(video: frame, sei: sei)
        #expect(carried)
        let datagrams = events.compactMap { if case .send(let bytes, _) = $0 { bytes } else { nil } }
        #expect(datagrams.count * 4 >= chunks.count, "at most 4 chunks on a packet")
        for datagram in datagrams { #expect(datagram.readableBytes <= 1300, "a packet of \(datagram.readableBytes) bytes") }

        let packets = Self.deliver(events, to: harness, now: t0)
        #expect(packets.count == datagrams.count)
        #expect(Set(packets.map(\.header.timestamp)).count == 1)
        #expect(packets.map(\.header.marker).filter { $0 }.count == 1)
        // Each chunk once, in order from the first packet; together they are the SEI NAL unit.
        let carriedChunks = packets.flatMap { $0.header.headerExtension?.elements.filter { $0.id == SEIHeaderExtension.defaultID }.map(\.data) ?? [] }
        #expect(carriedChunks == chunks)
        let reassembled = try #require(SEIHeaderExtension.reassemble(carriedChunks))
        #expect(reassembled == unit)
        #expect(H264SEI.messages(inNALUnit: reassembled) == sei)
        // The frame itself is intact: the packets' data in order.
        let payloads = try packets.map { try VP8RTPPayload.parse($0.payload) }
        #expect(payloads.first?.startsFrame == true)
        #expect(payloads.flatMap { Array($0.data.readableBytesView) } == frame.data)
    }

    @Test func vp8WithoutTheNegotiatedExtensionCarriesNoSEI() throws {
        let t0 = ContinuousClock.now
        let (harness, connection) = try Self.connected(.vp8, withSEIExtension: false, now: t0)
        let (events, carried) = connection.send(video: Self.vp8Frame(3010, keyframe: true), sei: [Self.message(100, sequence: 1)])
        #expect(!carried)
        let packets = Self.deliver(events, to: harness, now: t0)
        #expect(!packets.isEmpty)
        #expect(packets.allSatisfy { $0.header.headerExtension == nil })
    }

    @Test func h264SEIIsANALUnitRightBeforeTheFirstSlice() throws {
        let t0 = ContinuousClock.now
        let (harness, connection) = try Self.connected(.h264, now: t0)
        let sps: [UInt8] = [0x67, 0x42, 0xC0, 0x1F, 0xDA, 0x01, 0x40, 0x16, 0xE8, 0x40]
        let pps: [UInt8] = [0x68, 0xCE, 0x3C, 0x80]
        let idr = [0x65] + (1..<2500).map { UInt8(1 + $0 % 250) }
        let sei = [Self.message(1000, sequence: 5), TaggedSEIMessage(message: SEIMessage(payloadType: 5, uuid: SEIMessage.defaultUUID, data: [0, 0, 1, 0, 0, 3]))]
        let frame = EncodedVideoFrame(codec: .h264, data: [sps, pps, idr].flatMap { [0, 0, 0, 1] + $0 }, isKeyframe: true, pts: 3000)
        let (events, carried) = connection.send(video: frame, sei: sei)
        #expect(carried)
        for case .send(let datagram, _) in events { #expect(datagram.readableBytes <= 1300) }

        let packets = Self.deliver(events, to: harness, now: t0)
        #expect(packets.allSatisfy { $0.header.headerExtension == nil }, "H.264 SEI goes in the stream, not in an extension")
        var depacketizer = H264Depacketizer()
        var units: [H264AccessUnit] = []
        for packet in packets {
            units += try depacketizer.push(payload: packet.payload, sequenceNumber: packet.header.sequenceNumber, timestamp: packet.header.timestamp, marker: packet.header.marker)
        }
        let accessUnit = try #require(units.first)
        #expect(units.count == 1 && accessUnit.isComplete)
        #expect(accessUnit.nalUnits.map { Array($0.readableBytesView) } == [sps, pps, H264SEI.nalUnit(sei), idr])
        #expect(H264SEI.messages(inAccessUnit: Array(buffer: H264AnnexB.join(accessUnit.nalUnits))) == sei)
    }
}
