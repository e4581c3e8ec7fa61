import Crypto
import LiveRoomTransport
import LiveRoomWire
import Testing

@testable import LiveRoomSFU

@Suite struct NodeRelayDatagramTests {
    let key = SFURouter.PublisherKey(roomId: "s:shop1", userId: "anchor")
    let secret = NodeRelayDatagram.secret(fromSecretKey: "the-application-secret")

    func rtp(_ sequence: UInt16, payload: Int = 100) -> [UInt8] {
        [0x80, 96, UInt8(sequence >> 8), UInt8(sequence & 0xFF), 0, 0, 0, 1, 0, 0, 0, 7] + [UInt8](repeating: 0xAB, count: payload)
    }

    var everyMessage: [NodeRelayMessage] {
        [
            .mirror(key), .stop(key), .published(key, codecs: [.opus, .vp8]), .published(key, codecs: [.h264]), .ended(key),
            .packet(key, .video, rtp(7)), .packet(key, .audio, rtp(65535, payload: 1)),
            .senderReport(key, RTCPSenderReport(ssrc: 7, ntpTimestamp: 0x1234_5678_9ABC_DEF0, rtpTimestamp: 90000, packetCount: 10, octetCount: 1000)),
            .keyframeRequest(key), .nack(key, .video, [1, 2, 65535]), .nack(key, .audio, []),
        ]
    }

    @Test func everyMessageRoundTrips() throws {
        var sealer = NodeRelaySealer(secret: secret)
        var opener = NodeRelayOpener(secret: secret)
        for message in everyMessage {
            let datagram = try sealer.seal(message)
            #expect(datagram[0] == NodeRelayDatagram.marker)
            #expect(datagram.count <= NodeRelayDatagram.maximumSize)
            #expect(try opener.open(datagram) == message)
        }
    }

    @Test func theFirstByteIsNoneOfTheMediaPortsOthers() {
        // RFC 7983: STUN 0-3, ZRTP 16-19, DTLS 20-63, TURN 64-79, RTP/RTCP 128-191.
        let taken = Array(0...3) + Array(16...79) + Array(128...191)
        #expect(!taken.contains(Int(NodeRelayDatagram.marker)))
    }

    @Test func anotherSecretIsRefused() throws {
        var sealer = NodeRelaySealer(secret: NodeRelayDatagram.secret(fromSecretKey: "another-secret"))
        var opener = NodeRelayOpener(secret: secret)
        #expect(throws: NodeRelayError.unauthenticated) { try opener.open(try sealer.seal(.mirror(key))) }
    }

    @Test func anyChangedByteIsRefused() throws {
        var sealer = NodeRelaySealer(secret: secret)
        let datagram = try sealer.seal(.packet(key, .video, rtp(9)))
        for index in datagram.indices {
            var opener = NodeRelayOpener(secret: secret)
            var tampered = datagram
            tampered[index] ^= 0x01
            #expect(throws: NodeRelayError.self) { try opener.open(tampered) }
        }
        // Cut short, or lengthened.
        var opener = NodeRelayOpener(secret: secret)
        #expect(throws: NodeRelayError.self) { try opener.open(Array(datagram.dropLast())) }
        #expect(throws: NodeRelayError.self) { try opener.open(datagram + [0]) }
    }

    @Test func shortAndForeignDatagramsAreMalformed() {
        var opener = NodeRelayOpener(secret: secret)
        #expect(throws: NodeRelayError.malformed) { try opener.open([]) }
        #expect(throws: NodeRelayError.malformed) { try opener.open([NodeRelayDatagram.marker]) }
        #expect(throws: NodeRelayError.malformed) { try opener.open([UInt8](repeating: NodeRelayDatagram.marker, count: 42)) }
        var wrongVersion = [NodeRelayDatagram.marker, 2] + [UInt8](repeating: 0, count: 60)
        #expect(throws: NodeRelayError.malformed) { try opener.open(wrongVersion) }
        wrongVersion[0] = 0x80
        wrongVersion[1] = 1
        #expect(throws: NodeRelayError.malformed) { try opener.open(wrongVersion) }
    }

    @Test func oversizedIsRefusedBothWays() throws {
        var sealer = NodeRelaySealer(secret: secret)
        #expect(throws: NodeRelayError.oversized) { try sealer.seal(.packet(key, .video, rtp(1, payload: 2048))) }
        #expect(throws: NodeRelayError.oversized) { try sealer.seal(.nack(key, .video, Array(0...300))) }
        #expect(throws: NodeRelayError.oversized) { try sealer.seal(.mirror(.init(roomId: String(repeating: "r", count: 256), userId: "u"))) }
        var opener = NodeRelayOpener(secret: secret)
        #expect(throws: NodeRelayError.oversized) { try opener.open([UInt8](repeating: NodeRelayDatagram.marker, count: NodeRelayDatagram.maximumSize + 1)) }
        // The largest packet that fits does.
        let overhead = try sealer.seal(.packet(key, .video, rtp(1, payload: 0))).count - 12
        let largest = try sealer.seal(.packet(key, .video, rtp(2, payload: NodeRelayDatagram.maximumSize - overhead - 12)))
        #expect(largest.count == NodeRelayDatagram.maximumSize)
        #expect(try opener.open(largest).key == key)
    }

    @Test func aReplayedDatagramIsRefused() throws {
        var sealer = NodeRelaySealer(secret: secret)
        var opener = NodeRelayOpener(secret: secret)
        let first = try sealer.seal(.keyframeRequest(key))
        let second = try sealer.seal(.keyframeRequest(key))
        #expect(try opener.open(second) == .keyframeRequest(key))
        // Out of order within the window is taken once.
        #expect(try opener.open(first) == .keyframeRequest(key))
        #expect(throws: NodeRelayError.replayed) { try opener.open(first) }
        #expect(throws: NodeRelayError.replayed) { try opener.open(second) }
        // Too old to tell: refused.
        var old: [[UInt8]] = []
        for _ in 0..<1100 { old.append(try sealer.seal(.keyframeRequest(key))) }
        #expect(try opener.open(old.last!) == .keyframeRequest(key))
        #expect(throws: NodeRelayError.replayed) { try opener.open(old[0]) }
        #expect(try opener.open(old[1098]) == .keyframeRequest(key))
    }

    @Test func sendersAreApartAndForgottenWhenTooMany() throws {
        var opener = NodeRelayOpener(secret: secret)
        var first = NodeRelaySealer(secret: secret)
        let kept = try first.seal(.mirror(key))
        #expect(try opener.open(kept) == .mirror(key))
        // Each sender numbers its own datagrams: another's first is taken.
        for _ in 0..<NodeRelayOpener.maximumSenders {
            var other = NodeRelaySealer(secret: secret)
            #expect(try opener.open(other.seal(.mirror(key))) == .mirror(key))
        }
        // The first sender was forgotten; its next datagrams still open.
        #expect(try opener.open(first.seal(.stop(key))) == .stop(key))
    }

    @Test func authenticMessagesThatAreNotWellFormedAreRefused() throws {
        // Sealed by hand around bad plaintexts: unknown type, trailing bytes, empty ids, short packet.
        for plain: [UInt8] in [[99], [1, 1, 0x72, 1, 0x75, 0], [1, 0, 1, 0x75], [5, 1, 0x72, 1, 0x75, 1, 0x80], [8, 1, 0x72, 1, 0x75, 1, 0x01, 0x2C]] {
            var opener = NodeRelayOpener(secret: secret)
            let salt = [UInt8](repeating: 7, count: 16)
            let header: [UInt8] = [NodeRelayDatagram.marker, NodeRelayDatagram.version] + salt + [0, 0, 0, 0, 0, 0, 0, 1]
            let box = try AES.GCM.seal(plain, using: NodeRelayDatagram.key(secret: secret, salt: salt), nonce: AES.GCM.Nonce(data: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]), authenticating: header)
            #expect(throws: NodeRelayError.badMessage) { try opener.open(header + box.ciphertext + box.tag) }
        }
    }
}

@Suite struct NodeRelayBookTests {
    let home = TransportAddress(address: IPAddress("127.0.0.1")!, port: 7882)
    let otherHome = TransportAddress(address: IPAddress("127.0.0.1")!, port: 7892)
    let key = SFURouter.PublisherKey(roomId: "s:shop1", userId: "anchor")

    @Test func onePublisherIsAskedForOnceHoweverManyViewers() throws {
        var book = MirrorBook()
        let now = ContinuousClock.now
        #expect(try book.want(key, from: home, viewer: 1, now: now))
        let result142 = book.published(key, codecs: [.opus, .vp8], from: home)
        #expect(result142)
        #expect(try !book.want(key, from: home, viewer: 2, now: now))
        #expect(try !book.want(key, from: home, viewer: 3, now: now))
        #expect(book.mirrors.count == 1)
        #expect(book.mirrors[key]?.viewers == [1, 2, 3])
        // A repeated answer changes nothing; one from elsewhere is not taken.
        let result148 = book.published(key, codecs: [.opus, .vp8], from: home)
        #expect(!result148)
        let result149 = book.published(key, codecs: [.opus], from: otherHome)
        #expect(!result149)
        #expect(book.isLive(key, from: home))
        #expect(!book.isLive(key, from: otherHome))
        // Asked for again every second.
        #expect(book.tick(now: now + .milliseconds(500)).ask.isEmpty)
        #expect(book.tick(now: now + .seconds(1)).ask.map(\.0) == [key])
    }

    @Test func theMirrorStopsAGraceAfterItsLastViewer() throws {
        var book = MirrorBook(grace: .seconds(5))
        let now = ContinuousClock.now
        _ = try book.want(key, from: home, viewer: 1, now: now)
        _ = try book.want(key, from: home, viewer: 2, now: now)
        _ = book.published(key, codecs: [.vp8], from: home)
        book.release(viewer: 1, now: now)
        #expect(book.tick(now: now + .seconds(60)).stop.isEmpty)
        book.release(viewer: 2, now: now + .seconds(61)) { $0.userId == "someone else" }
        #expect(book.tick(now: now + .seconds(62)).stop.isEmpty)
        book.release(viewer: 2, now: now + .seconds(62)) { $0 == key }
        #expect(book.tick(now: now + .seconds(66)).stop.isEmpty)
        // A viewer back within the grace keeps it.
        #expect(try !book.want(key, from: home, viewer: 4, now: now + .seconds(66)))
        book.release(viewer: 4, now: now + .seconds(67))
        let (_, stop) = book.tick(now: now + .seconds(72))
        #expect(stop.map(\.0) == [key])
        #expect(book.mirrors.isEmpty)
    }

    @Test func anEndedPublisherIsWaitedForAgain() throws {
        var book = MirrorBook()
        let now = ContinuousClock.now
        _ = try book.want(key, from: home, viewer: 1, now: now)
        let result180 = book.ended(key, from: home)
        #expect(!result180)
        _ = book.published(key, codecs: [.vp8], from: home)
        let result182 = book.ended(key, from: otherHome)
        #expect(!result182)
        let result183 = book.ended(key, from: home)
        #expect(result183)
        #expect(!book.isLive(key, from: home))
        #expect(book.codecs(of: key) == nil)
        #expect(try book.want(key, from: home, viewer: 2, now: now))
        let result187 = book.published(key, codecs: [.vp8], from: home)
        #expect(result187)
    }

    @Test func aPublisherWhoseRoomMovedIsMirroredFromItsNewHomeForEveryViewer() throws {
        var book = MirrorBook()
        let now = ContinuousClock.now
        _ = try book.want(key, from: home, viewer: 1, now: now)
        _ = book.published(key, codecs: [.vp8], from: home)
        #expect(try book.want(key, from: otherHome, viewer: 2, now: now))
        #expect(book.mirrors[key]?.home == otherHome && book.mirrors[key]?.viewers == [1, 2])
        #expect(!book.isLive(key, from: home) && !book.isLive(key, from: otherHome))
        let taken = book.published(key, codecs: [.vp8], from: otherHome)
        #expect(taken)
    }

    @Test func mirrorsAreBoundedAndEachHomeHasItsOrigin() throws {
        var book = MirrorBook(maximumMirrors: 2)
        let now = ContinuousClock.now
        _ = try book.want(key, from: home, viewer: 1, now: now)
        _ = try book.want(.init(roomId: "r2", userId: "a"), from: otherHome, viewer: 1, now: now)
        #expect(throws: MirrorBook.Refusal.tooManyMirrors) { try book.want(.init(roomId: "r3", userId: "a"), from: home, viewer: 1, now: now) }
        let first = try #require(book.mirrors[key]?.origin)
        let second = try #require(book.mirrors[.init(roomId: "r2", userId: "a")]?.origin)
        #expect(first != second && first.isNode && second.isNode)
        #expect(book.home(ofOrigin: first) == home)
        #expect(book.home(ofOrigin: second) == otherHome)
    }

    @Test func exportsAreOnePerPublisherPerNodeAndExpire() {
        var book = ExportBook(maximumExports: 2, expiry: .seconds(5))
        let now = ContinuousClock.now
        #expect(book.mirror(key, to: home, now: now) == true)
        #expect(book.mirror(key, to: home, now: now + .seconds(1)) == false)
        #expect(book.mirror(key, to: home, now: now + .seconds(2)) == false)
        #expect(book.count == 1)
        #expect(book.mirror(key, to: otherHome, now: now) == true)
        #expect(book.mirror(.init(roomId: "r", userId: "u"), to: home, now: now) == nil)
        #expect(book.isMirrored(key, by: otherHome))
        let gone = book.expire(now: now + .seconds(6))
        #expect(gone.map(\.1) == [otherHome])
        #expect(book.isMirrored(key, by: home))
        let result216 = book.stop(key, to: home)
        #expect(result216)
        let result217 = book.stop(key, to: home)
        #expect(!result217)
        #expect(book.count == 0)
    }
}
