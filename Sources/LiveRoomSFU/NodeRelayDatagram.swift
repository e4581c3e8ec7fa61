import Crypto
import Foundation
import LiveRoomTransport
import LiveRoomWire

/// What the media ports of two cluster nodes tell each other about one publisher: node V
/// (the mirror) asks node H (the publisher's node) to ``mirror`` it, and H sends V the
/// publisher's tracks, packets and sender reports; V sends back keyframe requests and the
/// packets its copy lost on the way. The same messages as ``SFURouter/Relay`` between the
/// loops of one port, one level up.
public enum NodeRelayMessage: Sendable, Hashable {
    /// V → H: send me this publisher (repeated every second while V needs it).
    case mirror(SFURouter.PublisherKey)
    /// V → H: V no longer needs it.
    case stop(SFURouter.PublisherKey)
    /// H → V: the publisher publishes these tracks (the answer to ``mirror``).
    case published(SFURouter.PublisherKey, codecs: [RTPCodec])
    /// H → V: the publisher stopped (or never was).
    case ended(SFURouter.PublisherKey)
    /// H → V: one RTP packet of the publisher, decrypted.
    case packet(SFURouter.PublisherKey, MediaKind, [UInt8])
    /// H → V: a sender report of the publisher.
    case senderReport(SFURouter.PublisherKey, RTCPSenderReport)
    /// V → H: V's viewers need a keyframe.
    case keyframeRequest(SFURouter.PublisherKey)
    /// V → H: these packets (the publisher's numbers) did not reach V.
    case nack(SFURouter.PublisherKey, MediaKind, [UInt16])

    public var key: SFURouter.PublisherKey {
        switch self {
        case .mirror(let key), .stop(let key), .published(let key, _), .ended(let key), .packet(let key, _, _), .senderReport(let key, _),
            .keyframeRequest(let key), .nack(let key, _, _):
            key
        }
    }

    /// The message for a relay between routers, when it is one that crosses nodes.
    public init(_ relay: SFURouter.Relay) {
        switch relay {
        case .published(let key, let codecs): self = .published(key, codecs: codecs)
        case .ended(let key): self = .ended(key)
        case .packet(let key, let kind, let packet, _): self = .packet(key, kind, Array(buffer: packet.bytes))
        case .senderReport(let key, let report): self = .senderReport(key, report)
        case .keyframeRequest(let key): self = .keyframeRequest(key)
        case .nack(let key, let kind, let lost): self = .nack(key, kind, lost)
        }
    }

    /// The relay a router takes; nil for the control messages (``mirror``, ``stop``) and for a
    /// packet that does not parse as RTP.
    public func relay(arrival: ContinuousClock.Instant) -> SFURouter.Relay? {
        switch self {
        case .mirror, .stop: nil
        case .published(let key, let codecs): .published(key, codecs: codecs)
        case .ended(let key): .ended(key)
        case .packet(let key, let kind, let bytes): ForwardedPacket(bytes).map { .packet(key, kind, $0, arrival: arrival) }
        case .senderReport(let key, let report): .senderReport(key, report)
        case .keyframeRequest(let key): .keyframeRequest(key)
        case .nack(let key, let kind, let lost): .nack(key, kind, lost)
        }
    }
}

/// Why a node relay datagram was refused.
public enum NodeRelayError: Error, Sendable, Hashable {
    /// Shorter than a header and a tag, or not this format or version.
    case malformed
    /// Larger than ``NodeRelayDatagram/maximumSize``.
    case oversized
    /// The tag does not verify: not sealed with the cluster's key, or changed on the way.
    case unauthenticated
    /// Its number was seen before, or is too old to tell.
    case replayed
    /// It authenticated but its message is not well formed (a bug or another version).
    case badMessage
}

/// The datagram format between the nodes' media ports.
///
/// `0xD7, version 1, salt (16 bytes), counter (8 bytes, big-endian)` then the message sealed
/// with AES-256-GCM under a key derived (HKDF-SHA256) from the application's secret key and
/// the sender's salt, a random value each sender picks when it starts; the nonce is four
/// zero bytes and the counter, so a key never sees a nonce twice. The header is authenticated
/// too. The first byte is outside RFC 7983's ranges (STUN 0–3, DTLS 20–63, RTP/RTCP 128–191),
/// so the media port tells these datagrams from its clients'.
public enum NodeRelayDatagram {
    public static let marker: UInt8 = 0xD7
    public static let version: UInt8 = 1
    static let saltLength = 16
    public static let headerLength = 2 + saltLength + 8
    static let tagLength = 16
    /// The largest datagram, what the media port reads in one message.
    public static let maximumSize = 2048
    /// Room and user ids longer than this are not relayed.
    static let maximumIdLength = 255
    /// The most sequence numbers in one NACK.
    public static let maximumNackCount = 256

    /// Whether `first` is the first byte of a node relay datagram.
    public static func isRelay(firstByte first: UInt8) -> Bool { first == marker }

    static func key(secret: SymmetricKey, salt: [UInt8]) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: secret, salt: salt, info: Array("liveroom-node-media-relay-v1".utf8), outputByteCount: 32)
    }

    /// The cluster's shared secret from the application's secret key.
    public static func secret(fromSecretKey secretKey: String) -> SymmetricKey {
        SymmetricKey(data: Array(secretKey.utf8))
    }

    // MARK: Messages

    static func encode(_ message: NodeRelayMessage) throws(NodeRelayError) -> [UInt8] {
        var out: [UInt8] = []
        func key(_ key: SFURouter.PublisherKey) throws(NodeRelayError) {
            try string(key.roomId)
            try string(key.userId)
        }
        func string(_ text: String) throws(NodeRelayError) {
            let bytes = Array(text.utf8)
            guard bytes.count <= maximumIdLength else { throw .oversized }
            out.append(UInt8(bytes.count))
            out += bytes
        }
        func u16(_ value: UInt16) { out += [UInt8(value >> 8), UInt8(value & 0xFF)] }
        func u32(_ value: UInt32) { u16(UInt16(value >> 16)); u16(UInt16(value & 0xFFFF)) }
        func kind(_ kind: MediaKind) { out.append(kind == .audio ? 0 : 1) }
        switch message {
        case .mirror(let k):
            out.append(1)
            try key(k)
        case .stop(let k):
            out.append(2)
            try key(k)
        case .published(let k, let codecs):
            out.append(3)
            try key(k)
            guard codecs.count <= 4 else { throw .oversized }
            out.append(UInt8(codecs.count))
            // Every codec a publisher sends is one of those the server speaks: named by its place.
            for codec in codecs {
                guard let index = RTPCodec.supported.firstIndex(of: codec) else { throw .badMessage }
                out.append(UInt8(index))
            }
        case .ended(let k):
            out.append(4)
            try key(k)
        case .packet(let k, let mediaKind, let bytes):
            out.append(5)
            try key(k)
            kind(mediaKind)
            out += bytes
        case .senderReport(let k, let report):
            out.append(6)
            try key(k)
            u32(report.ssrc)
            u32(UInt32(report.ntpTimestamp >> 32))
            u32(UInt32(report.ntpTimestamp & 0xFFFF_FFFF))
            u32(report.rtpTimestamp)
            u32(report.packetCount)
            u32(report.octetCount)
        case .keyframeRequest(let k):
            out.append(7)
            try key(k)
        case .nack(let k, let mediaKind, let lost):
            out.append(8)
            try key(k)
            kind(mediaKind)
            guard lost.count <= maximumNackCount else { throw .oversized }
            u16(UInt16(lost.count))
            for sequence in lost { u16(sequence) }
        }
        return out
    }

    static func decode(_ bytes: [UInt8]) throws(NodeRelayError) -> NodeRelayMessage {
        var at = 0
        func byte() throws(NodeRelayError) -> UInt8 {
            guard at < bytes.count else { throw .badMessage }
            defer { at += 1 }
            return bytes[at]
        }
        func u16() throws(NodeRelayError) -> UInt16 { UInt16(try byte()) << 8 | UInt16(try byte()) }
        func u32() throws(NodeRelayError) -> UInt32 { UInt32(try u16()) << 16 | UInt32(try u16()) }
        func string() throws(NodeRelayError) -> String {
            let count = Int(try byte())
            guard at + count <= bytes.count else { throw .badMessage }
            defer { at += count }
            guard let text = String(validating: bytes[at..<(at + count)], as: UTF8.self) else { throw .badMessage }
            return text
        }
        func key() throws(NodeRelayError) -> SFURouter.PublisherKey {
            let room = try string()
            let user = try string()
            guard !room.isEmpty, !user.isEmpty else { throw .badMessage }
            return SFURouter.PublisherKey(roomId: room, userId: user)
        }
        func kind() throws(NodeRelayError) -> MediaKind {
            switch try byte() {
            case 0: .audio
            case 1: .video
            default: throw .badMessage
            }
        }
        let message: NodeRelayMessage
        switch try byte() {
        case 1: message = .mirror(try key())
        case 2: message = .stop(try key())
        case 3:
            let k = try key()
            let count = Int(try byte())
            guard count <= 4 else { throw .badMessage }
            var codecs: [RTPCodec] = []
            for _ in 0..<count {
                let index = Int(try byte())
                guard index < RTPCodec.supported.count else { throw .badMessage }
                codecs.append(RTPCodec.supported[index])
            }
            message = .published(k, codecs: codecs)
        case 4: message = .ended(try key())
        case 5:
            let k = try key()
            let mediaKind = try kind()
            // At least a fixed RTP header.
            guard bytes.count - at >= 12 else { throw .badMessage }
            let packet = Array(bytes[at...])
            at = bytes.count
            message = .packet(k, mediaKind, packet)
        case 6:
            let k = try key()
            let ssrc = try u32()
            let ntp = UInt64(try u32()) << 32 | UInt64(try u32())
            message = .senderReport(
                k, RTCPSenderReport(ssrc: ssrc, ntpTimestamp: ntp, rtpTimestamp: try u32(), packetCount: try u32(), octetCount: try u32()))
        case 7: message = .keyframeRequest(try key())
        case 8:
            let k = try key()
            let mediaKind = try kind()
            let count = Int(try u16())
            guard count <= maximumNackCount else { throw .badMessage }
            var lost: [UInt16] = []
            for _ in 0..<count { lost.append(try u16()) }
            message = .nack(k, mediaKind, lost)
        default:
            throw .badMessage
        }
        guard at == bytes.count else { throw .badMessage }
        return message
    }
}

/// Seals one sender's datagrams: its own random salt, and a counter that never repeats.
/// Confined to one thread (a media loop has its own).
public struct NodeRelaySealer {
    private let salt: [UInt8]
    private let key: SymmetricKey
    private var counter: UInt64 = 0

    public init(secret: SymmetricKey) {
        var generator = SystemRandomNumberGenerator()
        salt = (0..<NodeRelayDatagram.saltLength).map { _ in UInt8.random(in: 0...255, using: &generator) }
        key = NodeRelayDatagram.key(secret: secret, salt: salt)
    }

    /// The datagram carrying `message`.
    public mutating func seal(_ message: NodeRelayMessage) throws(NodeRelayError) -> [UInt8] {
        try seal(body: try NodeRelayDatagram.encode(message))
    }

    /// The datagram carrying `plain` as its message's bytes, whatever they are: how the fuzz
    /// targets reach the decoding of authenticated datagrams.
    public mutating func seal(body plain: [UInt8]) throws(NodeRelayError) -> [UInt8] {
        guard NodeRelayDatagram.headerLength + plain.count + NodeRelayDatagram.tagLength <= NodeRelayDatagram.maximumSize else { throw .oversized }
        counter += 1
        var header: [UInt8] = [NodeRelayDatagram.marker, NodeRelayDatagram.version] + salt
        for shift in stride(from: 56, through: 0, by: -8) { header.append(UInt8(truncatingIfNeeded: counter >> UInt64(shift))) }
        let nonce = try! AES.GCM.Nonce(data: [0, 0, 0, 0] + header[(2 + NodeRelayDatagram.saltLength)...])
        guard let box = try? AES.GCM.seal(plain, using: key, nonce: nonce, authenticating: header) else { throw .badMessage }
        return header + box.ciphertext + box.tag
    }
}

/// Opens datagrams from any sender of the cluster: each sender's key is derived once it has
/// proved itself (a datagram authenticated), and its counters are checked against a window
/// of the newest 1024, so a datagram is taken at most once. Remembers at most
/// ``maximumSenders`` senders (the least recently heard is forgotten).
public struct NodeRelayOpener {
    struct Sender {
        var key: SymmetricKey
        var window: ReplayWindow
        var lastHeard: UInt64
    }

    public static let maximumSenders = 256
    private let secret: SymmetricKey
    private var senders: [[UInt8]: Sender] = [:]
    private var clock: UInt64 = 0

    public init(secret: SymmetricKey) {
        self.secret = secret
    }

    public mutating func open(_ datagram: [UInt8]) throws(NodeRelayError) -> NodeRelayMessage {
        guard datagram.count <= NodeRelayDatagram.maximumSize else { throw .oversized }
        guard datagram.count >= NodeRelayDatagram.headerLength + NodeRelayDatagram.tagLength + 1, datagram[0] == NodeRelayDatagram.marker,
            datagram[1] == NodeRelayDatagram.version
        else { throw .malformed }
        let header = Array(datagram[0..<NodeRelayDatagram.headerLength])
        let salt = Array(header[2..<(2 + NodeRelayDatagram.saltLength)])
        var counter: UInt64 = 0
        for byte in header[(2 + NodeRelayDatagram.saltLength)...] { counter = counter << 8 | UInt64(byte) }
        let known = senders[salt]
        if let known, !known.window.mayAccept(counter) { throw .replayed }
        let key = known?.key ?? NodeRelayDatagram.key(secret: secret, salt: salt)
        let tagStart = datagram.count - NodeRelayDatagram.tagLength
        guard let nonce = try? AES.GCM.Nonce(data: [0, 0, 0, 0] + header[(2 + NodeRelayDatagram.saltLength)...]),
            let box = try? AES.GCM.SealedBox(
                nonce: nonce, ciphertext: datagram[NodeRelayDatagram.headerLength..<tagStart], tag: datagram[tagStart...]),
            let plain = try? AES.GCM.open(box, using: key, authenticating: header)
        else { throw .unauthenticated }
        clock += 1
        var sender = known ?? Sender(key: key, window: ReplayWindow(), lastHeard: clock)
        guard sender.window.accept(counter) else { throw .replayed }
        sender.lastHeard = clock
        if known == nil, senders.count >= Self.maximumSenders, let oldest = senders.min(by: { $0.value.lastHeard < $1.value.lastHeard })?.key {
            senders[oldest] = nil
        }
        senders[salt] = sender
        return try NodeRelayDatagram.decode(Array(plain))
    }
}

/// The counters seen of one sender: the newest, and which of the 1024 before it.
struct ReplayWindow {
    static let size: UInt64 = 1024
    private var newest: UInt64 = 0
    private var seen = [UInt64](repeating: 0, count: Int(size / 64))

    func mayAccept(_ counter: UInt64) -> Bool {
        guard counter > 0 else { return false }
        if counter > newest { return true }
        let age = newest - counter
        guard age < Self.size else { return false }
        return !bit(counter)
    }

    /// Records `counter`; false when it was seen or is too old.
    mutating func accept(_ counter: UInt64) -> Bool {
        guard mayAccept(counter) else { return false }
        if counter > newest {
            let shift = counter - newest
            if shift >= Self.size {
                for index in seen.indices { seen[index] = 0 }
            } else {
                for step in 1...shift { clear(newest + step) }
            }
            newest = counter
        }
        set(counter)
        return true
    }

    private func bit(_ counter: UInt64) -> Bool {
        let slot = counter % Self.size
        return seen[Int(slot / 64)] & (1 << (slot % 64)) != 0
    }

    private mutating func set(_ counter: UInt64) {
        let slot = counter % Self.size
        seen[Int(slot / 64)] |= 1 << (slot % 64)
    }

    private mutating func clear(_ counter: UInt64) {
        let slot = counter % Self.size
        seen[Int(slot / 64)] &= ~(1 << (slot % 64))
    }
}
