import NIOCore
import Testing
@testable import LiveRoomWire

@Suite("RTCP (RFC 3550, 4585, 5104, REMB)")
struct RTCPPacketTests {
    static let senderReport = hexBytes("""
        81 c8 00 0c 11 22 33 44 e1 2b 3c 4d 80 00 00 00 00 01 e2 40 00 00 00 64 00 00 27 10
        55 66 77 88 40 ff ff fe 00 01 00 05 00 00 00 20 2b 3c 4d 80 00 01 00 00
        """)
    static let sdes = hexBytes("81 ca 00 04 55 66 77 88 01 06 61 62 63 64 65 66 00 00 00 00")
    static let bye = hexBytes("81 cb 00 02 11 22 33 44 03 62 79 65")
    static let nack = hexBytes("81 cd 00 03 00 00 00 01 00 00 00 02 00 64 00 05")
    static let pli = hexBytes("81 ce 00 02 00 00 00 01 00 00 00 02")
    static let fir = hexBytes("84 ce 00 04 00 00 00 01 00 00 00 00 00 00 00 02 07 00 00 00")
    static let remb = hexBytes("8f ce 00 05 00 00 00 01 00 00 00 00 52 45 4d 42 01 0b d0 90 00 00 00 02")
    static let compound = senderReport + sdes + bye + nack + pli + fir + remb

    @Test func parsesCompoundPacket() throws {
        let packets = try RTCPPacket.parseCompound(ByteBuffer(bytes: Self.compound))
        #expect(packets.count == 7)
        guard case .senderReport(let sr) = packets[0] else { Issue.record("not SR"); return }
        #expect(sr.ssrc == 0x1122_3344)
        #expect(sr.ntpTimestamp == 0xE12B_3C4D_8000_0000)
        #expect(sr.compactNTP == 0x3C4D_8000)
        #expect(sr.rtpTimestamp == 123_456)
        #expect(sr.packetCount == 100)
        #expect(sr.octetCount == 10_000)
        #expect(sr.reportBlocks == [RTCPReportBlock(
            ssrc: 0x5566_7788, fractionLost: 0x40, cumulativeLost: -2, extendedHighestSequenceNumber: 0x0001_0005,
            jitter: 32, lastSenderReport: 0x2B3C_4D80, delaySinceLastSenderReport: 0x0001_0000)])
        guard case .sourceDescription(let sdes) = packets[1] else { Issue.record("not SDES"); return }
        #expect(sdes.chunks.count == 1)
        #expect(sdes.chunks[0].ssrc == 0x5566_7788)
        #expect(sdes.chunks[0].cname == "abcdef")
        #expect(packets[2] == .goodbye(RTCPGoodbye(ssrcs: [0x1122_3344], reason: "bye")))
        guard case .genericNACK(let nack) = packets[3] else { Issue.record("not NACK"); return }
        #expect(nack.senderSSRC == 1 && nack.mediaSSRC == 2)
        #expect(nack.lostSequenceNumbers == [100, 101, 103])
        #expect(packets[4] == .pictureLossIndication(RTCPPictureLossIndication(senderSSRC: 1, mediaSSRC: 2)))
        #expect(packets[5] == .fullIntraRequest(RTCPFullIntraRequest(senderSSRC: 1, entries: [.init(ssrc: 2, sequenceNumber: 7)])))
        #expect(packets[6] == .receiverEstimatedMaximumBitrate(RTCPReceiverEstimatedMaximumBitrate(senderSSRC: 1, bitrate: 1_000_000, ssrcs: [2])))
        #expect(try RTCPPacket.serializeCompound(packets).bytes == Self.compound)
    }

    @Test func eachPacketSerializesByteIdentical() throws {
        for bytes in [Self.senderReport, Self.sdes, Self.bye, Self.nack, Self.pli, Self.fir, Self.remb] {
            let packets = try RTCPPacket.parseCompound(ByteBuffer(bytes: bytes))
            #expect(packets.count == 1)
            #expect(try packets[0].serialize().bytes == bytes)
        }
    }

    @Test func receiverReportWithPaddingAndUnknownTypes() throws {
        let bytes = hexBytes("a0 c9 00 02 de ad be ef 00 00 00 04  80 cc 00 01 01 02 03 04  83 cd 00 02 00 00 00 01 00 00 00 02")
        let packets = try RTCPPacket.parseCompound(ByteBuffer(bytes: bytes))
        #expect(packets == [
            .receiverReport(RTCPReceiverReport(ssrc: 0xDEAD_BEEF)),
            .unknown(packetType: 204, count: 0, body: [1, 2, 3, 4]),
            .unknown(packetType: 205, count: 3, body: [0, 0, 0, 1, 0, 0, 0, 2]),
        ])
        #expect(try RTCPPacket.serializeCompound(Array(packets[1...])).bytes == Array(bytes[12...]))
    }

    @Test func sdesWithSeveralChunksAndItems() throws {
        let description = RTCPSourceDescription(chunks: [
            .init(ssrc: 1, items: [.cname("a")]),
            .init(ssrc: 2, items: [.cname("user@example"), .init(type: 6, value: Array("LiveRoom".utf8))]),
            .init(ssrc: 3, items: []),
        ])
        let bytes = try RTCPPacket.sourceDescription(description).serialize()
        #expect(bytes.readableBytes % 4 == 0)
        #expect(try RTCPPacket.parseCompound(bytes) == [.sourceDescription(description)])
    }

    @Test func nackBuildingPacksRanges() {
        let nack = RTCPGenericNACK(senderSSRC: 1, mediaSSRC: 2, lostSequenceNumbers: [100, 101, 103, 116, 117, 200])
        #expect(nack.entries == [.init(packetID: 100, bitmask: 0b1000_0000_0000_0101), .init(packetID: 117, bitmask: 0), .init(packetID: 200, bitmask: 0)])
        #expect(nack.lostSequenceNumbers == [100, 101, 103, 116, 117, 200])
        // Across the wrap, with duplicates and out of order input.
        let wrapped = RTCPGenericNACK(senderSSRC: 1, mediaSSRC: 2, lostSequenceNumbers: [65_534, 1, 65_535, 0, 1])
        #expect(wrapped.entries == [.init(packetID: 65_534, bitmask: 0b111)])
        #expect(wrapped.lostSequenceNumbers == [65_534, 65_535, 0, 1])
        #expect(RTCPGenericNACK(senderSSRC: 1, mediaSSRC: 2, lostSequenceNumbers: []).entries.isEmpty)
    }

    @Test func nackExpansionRoundTripsRandomLossSets() throws {
        var generator = SeededGenerator(seed: 99)
        for _ in 0..<200 {
            let base = UInt16.random(in: 0...UInt16.max, using: &generator)
            let lost = Set((0..<Int.random(in: 1...40, using: &generator)).map { _ in base &+ UInt16.random(in: 0...300, using: &generator) })
            let ordered = lost.sorted { ($0 &- base) < ($1 &- base) }
            let nack = RTCPGenericNACK(senderSSRC: 9, mediaSSRC: 10, lostSequenceNumbers: ordered)
            #expect(nack.lostSequenceNumbers == ordered)
            let parsed = try RTCPPacket.parseCompound(try RTCPPacket.genericNACK(nack).serialize())
            #expect(parsed == [.genericNACK(nack)])
        }
    }

    @Test func rembBitrateEncoding() throws {
        for bitrate: UInt64 in [0, 1, 262_143, 262_144, 1_000_000, 2_500_000, 123_456_789, 1 << 40] {
            let remb = RTCPReceiverEstimatedMaximumBitrate(senderSSRC: 1, bitrate: bitrate, ssrcs: [1, 2, 3])
            let parsed = try RTCPPacket.parseCompound(try RTCPPacket.receiverEstimatedMaximumBitrate(remb).serialize())
            guard case .receiverEstimatedMaximumBitrate(let decoded) = parsed.first else { Issue.record("not REMB"); continue }
            #expect(decoded.bitrate <= bitrate)
            #expect(Double(bitrate - decoded.bitrate) <= Double(bitrate) / 131_072 + 1)
            #expect(decoded.ssrcs == [1, 2, 3])
        }
        // Exponent 63 with a wide mantissa saturates instead of overflowing.
        let huge = hexBytes("8f ce 00 04 00 00 00 01 00 00 00 00 52 45 4d 42 00 ff ff ff")
        guard case .receiverEstimatedMaximumBitrate(let decoded) = try RTCPPacket.parseCompound(ByteBuffer(bytes: huge)).first else {
            Issue.record("not REMB"); return
        }
        #expect(decoded.bitrate == .max)
    }

    @Test func otherAFBIsUnknown() throws {
        let bytes = hexBytes("8f ce 00 03 00 00 00 01 00 00 00 00 41 42 43 44")
        #expect(try RTCPPacket.parseCompound(ByteBuffer(bytes: bytes)) == [.unknown(packetType: 206, count: 15, body: Array(bytes[4...]))])
    }

    @Test func cumulativeLostIsClampedAndSignExtended() throws {
        let block = RTCPReportBlock(ssrc: 1, fractionLost: 0, cumulativeLost: -10_000_000, extendedHighestSequenceNumber: 0,
                                    jitter: 0, lastSenderReport: 0, delaySinceLastSenderReport: 0)
        let report = RTCPPacket.receiverReport(RTCPReceiverReport(ssrc: 5, reportBlocks: [block]))
        guard case .receiverReport(let parsed) = try RTCPPacket.parseCompound(try report.serialize()).first else {
            Issue.record("not RR"); return
        }
        #expect(parsed.reportBlocks[0].cumulativeLost == -0x80_0000)
    }

    @Test func malformedPacketsThrow() {
        func kind(_ bytes: [UInt8]) -> WireError.Kind? {
            do { _ = try RTCPPacket.parseCompound(ByteBuffer(bytes: bytes)); return nil } catch { return error.kind }
        }
        #expect(kind([]) == .truncated)
        #expect(kind([0x81, 0xC8]) == .truncated)
        #expect(kind(Array(Self.senderReport.dropLast(4))) == .truncated)
        #expect(kind([0x41] + Array(Self.pli.dropFirst())) == .malformed)  // version 1
        #expect(kind(hexBytes("a1 ce 00 02 00 00 00 01 00 00 00 00")) == .malformed)  // padding count 0
        #expect(kind(hexBytes("a1 ce 00 02 00 00 00 01 00 00 00 09")) == .malformed)  // padding > body
        #expect(kind(hexBytes("81 ce 00 03 00 00 00 01 00 00 00 02 00 00 00 00")) == .malformed)  // PLI with FCI
        #expect(kind(hexBytes("84 ce 00 03 00 00 00 01 00 00 00 00 00 00 00 02")) == .malformed)  // FIR FCI half
        #expect(kind(hexBytes("82 c8 00 06 11 22 33 44 e1 2b 3c 4d 80 00 00 00 00 01 e2 40 00 00 00 64 00 00 27 10")) == .truncated)
        #expect(kind(hexBytes("81 ca 00 02 55 66 77 88 01 06 61 62")) == .truncated)  // SDES item overruns
        #expect(kind(hexBytes("81 cb 00 02 11 22 33 44 09 62 79 65")) == .truncated)  // BYE reason overruns
        #expect(kind(hexBytes("8f ce 00 04 00 00 00 01 00 00 00 00 52 45 4d 42 02 0b d0 90 00 00 00 02")) == .truncated)
    }

    @Test func serializeRejectsOutOfRangeValues() {
        let tooMany = RTCPReceiverReport(ssrc: 1, reportBlocks: Array(repeating: RTCPReportBlock(
            ssrc: 1, fractionLost: 0, cumulativeLost: 0, extendedHighestSequenceNumber: 0, jitter: 0,
            lastSenderReport: 0, delaySinceLastSenderReport: 0), count: 32))
        #expect(throws: WireError.self) { try RTCPPacket.receiverReport(tooMany).serialize() }
        #expect(throws: WireError.self) { try RTCPPacket.unknown(packetType: 204, count: 0, body: [1]).serialize() }
        let badItem = RTCPSourceDescription(chunks: [.init(ssrc: 1, items: [.init(type: 0, value: [])])])
        #expect(throws: WireError.self) { try RTCPPacket.sourceDescription(badItem).serialize() }
    }

    @Test func parserIsTotal() throws {
        var parsed = 0
        let seeds = [Self.compound, Self.senderReport, Self.sdes, Self.bye, Self.nack, Self.remb, Self.fir]
        for input in hostileInputs(seeds: seeds, mutationsPerSeed: 500) {
            do {
                let packets = try RTCPPacket.parseCompound(input)
                parsed += 1
                let again = try RTCPPacket.parseCompound(try RTCPPacket.serializeCompound(packets))
                #expect(again == packets)
            } catch {
                #expect(!error.message.isEmpty)
            }
        }
        #expect(parsed > 100)
    }
}
