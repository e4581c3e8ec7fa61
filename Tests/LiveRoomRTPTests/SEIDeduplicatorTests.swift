import LiveRoomWire
import Testing

@testable import LiveRoomRTP

@Suite struct SEIDeduplicatorTests {
    let t0 = ContinuousClock.now

    static func tagged(_ text: String, sequence: UInt32) -> TaggedSEIMessage {
        TaggedSEIMessage(message: SEIMessage(data: Array(text.utf8)), tag: SEITag(sequence: sequence, sentAtMilliseconds: 1_700_000_000_000))
    }

    /// `isNew` outside `#expect`, which cannot call a mutating method.
    func check(_ seen: inout SEIDeduplicator, _ message: TaggedSEIMessage, from sender: String, now: ContinuousClock.Instant) -> Bool {
        seen.isNew(message, from: sender, now: now)
    }

    static func untagged(_ text: String, payloadType: Int = SEIMessage.defaultPayloadType) -> TaggedSEIMessage {
        TaggedSEIMessage(message: SEIMessage(payloadType: payloadType, data: Array(text.utf8)))
    }

    @Test func taggedMessagesAreNewOncePerSenderAndSequence() {
        var seen = SEIDeduplicator()
        func isNew(_ message: TaggedSEIMessage, _ sender: String, _ ms: Int) -> Bool {
            seen.isNew(message, from: sender, now: t0 + .milliseconds(ms))
        }
        #expect(isNew(Self.tagged("a", sequence: 1), "anchor", 0))
        #expect(!isNew(Self.tagged("a", sequence: 1), "anchor", 66))
        // The sequence is what counts: the same number with other bytes is a repeat, long after too.
        #expect(!isNew(Self.tagged("b", sequence: 1), "anchor", 60_000))
        #expect(isNew(Self.tagged("a", sequence: 2), "anchor", 100))
        // Another sender with the same sequence is a new message.
        #expect(isNew(Self.tagged("a", sequence: 1), "guest", 100))
        #expect(!isNew(Self.tagged("a", sequence: 1), "guest", 200))
        // Repeats that arrive out of order.
        #expect(isNew(Self.tagged("c", sequence: 10), "anchor", 300))
        #expect(isNew(Self.tagged("c", sequence: 9), "anchor", 300))
        #expect(!isNew(Self.tagged("c", sequence: 10), "anchor", 300))
        #expect(isNew(Self.tagged("d", sequence: .max), "anchor", 300))
        #expect(isNew(Self.tagged("d", sequence: 0), "anchor", 300))
    }

    @Test func untaggedMessagesAreKnownByTheirBytesWithinTheWindow() {
        var seen = SEIDeduplicator(window: .seconds(3))
        func isNew(_ message: TaggedSEIMessage, _ ms: Int, from sender: String = "anchor") -> Bool {
            seen.isNew(message, from: sender, now: t0 + .milliseconds(ms))
        }
        #expect(isNew(Self.untagged("pop"), 0))
        #expect(!isNew(Self.untagged("pop"), 2_999))
        #expect(isNew(Self.untagged("pop!"), 100), "other bytes")
        #expect(isNew(Self.untagged("pop", payloadType: 100), 100), "another payload type")
        #expect(isNew(Self.untagged("pop"), 100, from: "guest"), "another sender")
        // 3 s after the last sighting (2.999 s) it counts as sent again.
        #expect(!isNew(Self.untagged("pop"), 5_998))
        #expect(isNew(Self.untagged("pop"), 8_998))
    }

    @Test func aMessageRepeatedEverySecondIsReportedOnceAndAgainAfterAGap() {
        var seen = SEIDeduplicator(window: .seconds(3))
        let news = (0...20).map { check(&seen, Self.untagged("price: 42"), from: "anchor", now: t0 + .seconds($0)) }
        #expect(news == [true] + Array(repeating: false, count: 20))
        // The window slides with each repeat: 20 s after the first copy it is still a repeat,
        // and only a silence longer than the window makes it new.
        #expect(!check(&seen, Self.untagged("price: 42"), from: "anchor", now: t0 + .seconds(22)))
        #expect(check(&seen, Self.untagged("price: 42"), from: "anchor", now: t0 + .seconds(26)))
        #expect(!check(&seen, Self.untagged("price: 42"), from: "anchor", now: t0 + .seconds(27)))
    }

    @Test func memoryIsBoundedPerSender() {
        var seen = SEIDeduplicator(window: .seconds(3), memory: 4)
        for sequence in UInt32(0)..<5 { #expect(check(&seen, Self.tagged("x", sequence: sequence), from: "anchor", now: t0)) }
        #expect(!check(&seen, Self.tagged("x", sequence: 4), from: "anchor", now: t0))
        #expect(!check(&seen, Self.tagged("x", sequence: 1), from: "anchor", now: t0))
        #expect(check(&seen, Self.tagged("x", sequence: 0), from: "anchor", now: t0), "the oldest number was forgotten")

        for text in ["a", "b", "c", "d", "e"] { #expect(check(&seen, Self.untagged(text), from: "anchor", now: t0)) }
        #expect(!check(&seen, Self.untagged("e"), from: "anchor", now: t0))
        #expect(!check(&seen, Self.untagged("b"), from: "anchor", now: t0))
        #expect(check(&seen, Self.untagged("a"), from: "anchor", now: t0), "the oldest message was forgotten")
    }

    @Test func atMost64SendersAreRemembered() {
        #expect(SEIDeduplicator.maxSenders == 64)
        var seen = SEIDeduplicator()
        #expect(check(&seen, Self.tagged("x", sequence: 7), from: "sender0", now: t0))
        #expect(check(&seen, Self.untagged("y"), from: "sender0", now: t0))
        for index in 1..<64 { #expect(check(&seen, Self.tagged("x", sequence: 7), from: "sender\(index)", now: t0)) }
        // 64 senders: the first is still remembered.
        #expect(!check(&seen, Self.tagged("x", sequence: 7), from: "sender0", now: t0))
        #expect(!check(&seen, Self.untagged("y"), from: "sender0", now: t0))
        // The 65th makes it forget the oldest, tagged and untagged alike.
        #expect(check(&seen, Self.tagged("x", sequence: 7), from: "sender64", now: t0))
        #expect(check(&seen, Self.untagged("y"), from: "sender0", now: t0))
        // sender0 came back as the newest; sender1 is now the oldest and was forgotten for it.
        #expect(check(&seen, Self.tagged("x", sequence: 7), from: "sender1", now: t0))
        #expect(!check(&seen, Self.tagged("x", sequence: 7), from: "sender64", now: t0))
    }

    @Test func manySendersAndMessagesStayWithinTheBounds() {
        var seen = SEIDeduplicator(window: .seconds(3), memory: 8)
        // Thousands of distinct senders and messages: each is new once, and none is forgotten too early.
        for round in 0..<2_000 {
            let sender = "s\(round % 100)"
            #expect(check(&seen, Self.untagged("m\(round)"), from: sender, now: t0 + .milliseconds(round)))
            #expect(!check(&seen, Self.untagged("m\(round)"), from: sender, now: t0 + .milliseconds(round)))
        }
    }
}
