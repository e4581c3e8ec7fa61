import NIOCore
import Testing
@testable import LiveRoomWire

@Suite("H.264 RTP (RFC 6184, packetization-mode 1)")
struct H264Tests {
    static let sps = hexBytes("67 42 c0 1f da 01 40 16 e8 40")
    static let pps = hexBytes("68 ce 3c 80")
    static let sei = hexBytes("06 05 02 aa bb 80")
    static func idr(_ size: Int, seed: UInt64 = 1) -> [UInt8] {
        var generator = SeededGenerator(seed: seed)
        // Avoid zero bytes so no start code emulation appears in the test data.
        return [0x65] + (1..<size).map { _ in UInt8.random(in: 1...255, using: &generator) }
    }
    static func slice(_ size: Int, seed: UInt64 = 2) -> [UInt8] {
        var generator = SeededGenerator(seed: seed)
        return [0x41] + (1..<size).map { _ in UInt8.random(in: 1...255, using: &generator) }
    }

    @Test func annexBSplitHandlesThreeAndFourByteStartCodes() throws {
        let stream = [0, 0, 0, 1] + Self.sps + [0, 0, 1] + Self.pps + [0, 0, 0, 1] + Self.idr(20) + [0, 0]
        let units = try H264AnnexB.split(ByteBuffer(bytes: stream))
        #expect(units.map(\.bytes) == [Self.sps, Self.pps, Self.idr(20)])
        #expect(H264AnnexB.join(units).bytes == [0, 0, 0, 1] + Self.sps + [0, 0, 0, 1] + Self.pps + [0, 0, 0, 1] + Self.idr(20))
        #expect(throws: WireError.self) { try H264AnnexB.split(ByteBuffer(bytes: Self.sps)) }
        #expect(throws: WireError.self) { try H264AnnexB.split(ByteBuffer(bytes: [9] + [0, 0, 1] + Self.sps)) }
        #expect(throws: WireError.self) { try H264AnnexB.split(ByteBuffer(bytes: [0, 0, 1])) }
        #expect(try H264AnnexB.split(ByteBuffer(bytes: [0, 0, 0, 0, 0, 1] + Self.pps)).map(\.bytes) == [Self.pps])
    }

    @Test func parsesSingleSTAPAAndFUA() throws {
        let single = try H264RTPPayload.parse(ByteBuffer(bytes: Self.pps))
        #expect(single == .singleNALUnit(ByteBuffer(bytes: Self.pps)))
        #expect(!single.startsKeyframe)

        let stap = hexBytes("78") + [0, UInt8(Self.sps.count)] + Self.sps + [0, UInt8(Self.pps.count)] + Self.pps
        let aggregation = try H264RTPPayload.parse(ByteBuffer(bytes: stap))
        #expect(aggregation == .aggregation([ByteBuffer(bytes: Self.sps), ByteBuffer(bytes: Self.pps)]))
        #expect(aggregation.nalUnitTypes == [7, 8])
        #expect(aggregation.startsKeyframe)
        #expect(try aggregation.serialize().bytes == stap)

        let fuStart = try H264RTPPayload.parse(ByteBuffer(bytes: [0x7C, 0x85, 1, 2, 3]))
        guard case .fragment(let fragment) = fuStart else { Issue.record("not FU-A"); return }
        #expect(fragment.isStart && !fragment.isEnd)
        #expect(fragment.nalHeader == 0x65)
        #expect(fuStart.startsKeyframe)
        #expect(try fuStart.serialize().bytes == [0x7C, 0x85, 1, 2, 3])
        let fuMiddle = try H264RTPPayload.parse(ByteBuffer(bytes: [0x7C, 0x05, 4]))
        #expect(!fuMiddle.startsKeyframe)
        #expect(fuMiddle.nalUnitTypes.isEmpty)
    }

    @Test func malformedPayloadsThrow() {
        func kind(_ bytes: [UInt8]) -> WireError.Kind? {
            do { _ = try H264RTPPayload.parse(ByteBuffer(bytes: bytes)); return nil } catch { return error.kind }
        }
        #expect(kind([]) == .truncated)
        #expect(kind([0x00, 1]) == .malformed)  // type 0
        #expect(kind([0x1E]) == .malformed)  // type 30
        #expect(kind([0xE5, 1]) == .malformed)  // forbidden bit
        #expect(kind([0x19, 0, 0]) == .unsupported)  // STAP-B
        #expect(kind([0x1D, 0x85, 1]) == .unsupported)  // FU-B
        #expect(kind([0x78]) == .truncated)  // empty STAP-A
        #expect(kind([0x78, 0]) == .truncated)
        #expect(kind([0x78, 0, 5, 0x67, 1]) == .truncated)
        #expect(kind([0x78, 0, 0]) == .malformed)
        #expect(kind([0x78, 0, 2, 0x7C, 1]) == .malformed)  // STAP-A nesting FU-A
        #expect(kind([0x7C]) == .truncated)
        #expect(kind([0x7C, 0x85]) == .truncated)
        #expect(kind([0x7C, 0xC5, 1]) == .malformed)  // S and E
        #expect(kind([0x7C, 0x98, 1]) == .malformed)  // fragments a STAP-A
    }

    @Test func packetizeAndDepacketizeRoundTrip() throws {
        let accessUnits: [[[UInt8]]] = [
            [Self.sps, Self.pps, Self.sei, Self.idr(5_000)],
            [Self.slice(900)],
            [Self.slice(1_200, seed: 5)],
            [Self.slice(3)],
        ]
        let packetizer = H264Packetizer(maxPayloadSize: 1_200)
        var depacketizer = H264Depacketizer()
        var sequence: UInt16 = 65_530
        var received: [H264AccessUnit] = []
        for (index, units) in accessUnits.enumerated() {
            let annexB = H264AnnexB.join(units.map { ByteBuffer(bytes: $0) })
            let payloads = try packetizer.packetize(annexB: annexB)
            #expect(payloads.allSatisfy { $0.readableBytes <= 1_200 })
            if index == 0 {
                #expect(payloads.count == 3 + 5)
                #expect(try H264RTPPayload.parse(payloads[0]).startsKeyframe)
            }
            for (position, payload) in payloads.enumerated() {
                received += try depacketizer.push(payload: payload, sequenceNumber: sequence, timestamp: UInt32(index) * 3_000,
                                                  marker: position == payloads.count - 1)
                sequence &+= 1
            }
        }
        #expect(received.count == accessUnits.count)
        for (unit, expected) in zip(received, accessUnits) {
            #expect(unit.isComplete)
            #expect(unit.nalUnits.map(\.bytes) == expected)
            #expect(unit.annexB == H264AnnexB.join(expected.map { ByteBuffer(bytes: $0) }))
        }
        #expect(received[0].isKeyframe)
        #expect(!received[1].isKeyframe)
        #expect(depacketizer.flush() == nil)
    }

    @Test func depacketizerDetectsLossAndTimestampChange() throws {
        let packetizer = H264Packetizer(maxPayloadSize: 500)
        let payloads = try packetizer.packetize(nalUnits: [ByteBuffer(bytes: Self.idr(1_400))])
        #expect(payloads.count == 3)
        var depacketizer = H264Depacketizer()
        // Lose the middle fragment.
        #expect(try depacketizer.push(payload: payloads[0], sequenceNumber: 10, timestamp: 90, marker: false).isEmpty)
        let lossy = try depacketizer.push(payload: payloads[2], sequenceNumber: 12, timestamp: 90, marker: true)
        #expect(lossy.count == 1)
        #expect(!lossy[0].isComplete)
        #expect(lossy[0].nalUnits.isEmpty)
        // Missing marker: the next timestamp flushes the previous unit as incomplete.
        #expect(try depacketizer.push(payload: ByteBuffer(bytes: Self.slice(10)), sequenceNumber: 13, timestamp: 180, marker: false).isEmpty)
        let flushed = try depacketizer.push(payload: ByteBuffer(bytes: Self.slice(10, seed: 9)), sequenceNumber: 14, timestamp: 270, marker: true)
        #expect(flushed.count == 2)
        #expect(flushed[0].timestamp == 180 && !flushed[0].isComplete)
        #expect(flushed[1].timestamp == 270 && flushed[1].isComplete)
        // Malformed payload marks the unit incomplete and throws.
        #expect(throws: WireError.self) { try depacketizer.push(payload: ByteBuffer(bytes: [0x19]), sequenceNumber: 15, timestamp: 360, marker: false) }
        let after = try depacketizer.push(payload: ByteBuffer(bytes: Self.slice(4)), sequenceNumber: 16, timestamp: 360, marker: true)
        #expect(after.count == 1 && !after[0].isComplete)
    }

    @Test func depacketizerBoundsMemory() throws {
        var depacketizer = H264Depacketizer(maximumAccessUnitSize: 1_000)
        let payloads = try H264Packetizer(maxPayloadSize: 400).packetize(nalUnits: [ByteBuffer(bytes: Self.idr(2_000))])
        var threw = false
        for (index, payload) in payloads.enumerated() {
            do {
                _ = try depacketizer.push(payload: payload, sequenceNumber: UInt16(index), timestamp: 1, marker: index == payloads.count - 1)
            } catch {
                threw = true
            }
        }
        #expect(threw)
    }

    @Test func packetizerRejectsBadInput() {
        #expect(throws: WireError.self) { try H264Packetizer(maxPayloadSize: 2).packetize(nalUnits: [ByteBuffer(bytes: Self.pps)]) }
        #expect(throws: WireError.self) { try H264Packetizer(maxPayloadSize: 100).packetize(nalUnits: [ByteBuffer()]) }
        #expect(throws: WireError.self) { try H264Packetizer(maxPayloadSize: 100).packetize(nalUnits: [ByteBuffer(bytes: [0x7C, 1])]) }
    }

    @Test func keyframeDetectionOnAccessUnits() {
        func unit(_ units: [[UInt8]]) -> H264AccessUnit {
            H264AccessUnit(timestamp: 0, nalUnits: units.map { ByteBuffer(bytes: $0) }, isComplete: true)
        }
        #expect(unit([Self.idr(10)]).isKeyframe)
        #expect(unit([Self.sps, Self.pps]).isKeyframe)
        #expect(!unit([Self.sps]).isKeyframe)
        #expect(!unit([Self.slice(10)]).isKeyframe)
    }

    @Test func parsersAreTotal() throws {
        let stap = hexBytes("78") + [0, UInt8(Self.sps.count)] + Self.sps + [0, UInt8(Self.pps.count)] + Self.pps
        let seeds = [stap, [0x7C, 0x85, 1, 2, 3], Self.sps, [0, 0, 0, 1] + Self.sps + [0, 0, 1] + Self.pps]
        var depacketizer = H264Depacketizer(maximumAccessUnitSize: 4_096)
        var parsed = 0
        var sequence: UInt16 = 0
        var generator = SeededGenerator(seed: 11)
        for input in hostileInputs(seeds: seeds) {
            do {
                let payload = try H264RTPPayload.parse(input)
                parsed += 1
                _ = payload.startsKeyframe
                #expect(try H264RTPPayload.parse(try payload.serialize()) == payload)
            } catch {
                #expect(!error.message.isEmpty)
            }
            sequence &+= UInt16.random(in: 0...2, using: &generator)
            _ = try? depacketizer.push(payload: input, sequenceNumber: sequence, timestamp: UInt32(sequence / 4),
                                       marker: Bool.random(using: &generator))
            if let units = try? H264AnnexB.split(input) {
                #expect(units.allSatisfy { $0.readableBytes > 0 })
                _ = try? H264Packetizer(maxPayloadSize: 7).packetize(nalUnits: units)
            }
        }
        #expect(parsed > 100)
    }
}
