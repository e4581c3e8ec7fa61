import LiveRoomSFU
import LiveRoomWire
import NIOCore
import Testing

@testable import LiveRoomServer

/// The media port's packet path as the fuzz targets drive it (``MediaPortHarness``), with the
/// inputs that once stopped the server, and a bounded run of random ones.
@Suite(.serialized) struct MediaPortHarnessTests {
    static func check(_ username: String) -> [UInt8] {
        Array(buffer: STUNMessage(type: .bindingRequest, transactionID: .random(), attributes: [.username(username)]).serialize())
    }

    /// Operation 0 (a raw datagram) on loop `loop` from a stranger.
    static func raw(_ bytes: [UInt8], loop: UInt8) -> [UInt8] {
        [0x20 | loop << 3, UInt8(bytes.count)] + bytes
    }

    @Test func checksNamingALoopThePortDoesNotHaveAreDroppedAndCountedOnEitherLoop() throws {
        let harness = try MediaPortHarness()
        let before = harness.counters.droppedBy[.unknownLoop, default: 0]
        // 'C' names the third loop, 'z' the 52nd, '/' the 64th: the port has two.
        for username in ["Cq:x", "zz:x", "/x:y", ":", "q"] {
            harness.run(Self.raw(Self.check(username), loop: 0) + Self.raw(Self.check(username), loop: 1))
        }
        #expect(harness.counters.droppedBy[.unknownLoop, default: 0] == before + 10)
        // 'B' names the second loop, which has no such ufrag: handed over once, dropped there.
        let unknown = harness.counters.droppedBy[.unknownUfrag, default: 0]
        harness.run(Self.raw(Self.check("Bq:x"), loop: 0))
        #expect(harness.counters.droppedBy[.unknownUfrag, default: 0] == unknown + 1)
    }

    @Test func theHarnessReachesTheSFUAndTheRelay() throws {
        let harness = try MediaPortHarness()
        // RTP from the publisher with the negotiated payload type and SSRC: forwarded to the
        // subscriber on the other loop, and exported to the node that mirrors it.
        let forwarded = harness.counters.rtpForwarded
        let rtp: [UInt8] = [0x80, 96, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0x10, 0x00, 0x9D, 0x01, 0x2A]
        harness.run([0x12, UInt8(rtp.count)] + rtp)
        #expect(harness.counters.rtpForwarded == forwarded + 1, "\(harness.counters)")
        // A NACK from the subscriber, and timers: nothing traps, what is unknown is counted.
        harness.run([0x13, 4, 1, 2, 0, 1, 5, 0])
    }

    @Test func tenThousandRandomInputsStopNothing() throws {
        let harness = try MediaPortHarness()
        var generator = SeededGenerator(seed: 26)
        for _ in 0..<10_000 {
            let count = Int.random(in: 0...300, using: &generator)
            harness.run((0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) })
        }
        for _ in 0..<2_000 {
            let count = Int.random(in: 0...64, using: &generator)
            harness.runTCP((0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) })
        }
    }
}

/// A xorshift generator, so a failing run can be repeated.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed &* 0x9E37_79B9_7F4A_7C15 | 1 }
    mutating func next() -> UInt64 {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return state
    }
}
