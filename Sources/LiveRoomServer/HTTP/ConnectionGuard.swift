import HummingbirdCore
import LiveRoomProtocol
import Logging
import NIOCore
import NIOSSL

/// Every TCP connection to the HTTP port (signaling, WHIP/WHEP, the admin API, the watch page),
/// before any of its bytes is read: admitted under the per-address and total caps or refused
/// at once, and closed unless its first request head (TLS handshake included) is complete
/// within ``ConnectionGuard/headTimeout``. Wraps the child channel the rest of the server sets
/// up, so a connection that never sends a request holds nothing for long.
struct ConnectionGuard: Sendable {
    /// Connections open now, by address (``ConnectionLimits/key(_:)``).
    let gate: ConnectionGate
    /// How long a connection may take to send its first request head, TLS handshake included.
    let headTimeout: Duration
    /// The server's TLS context, when it serves https.
    let tls: NIOSSLContext?

    init(maxTotal: Int, maxPerAddress: Int, headTimeout: Duration, tls: TLSConfiguration?) throws {
        gate = ConnectionGate(maxTotal: maxTotal, maxPerAddress: maxPerAddress)
        self.headTimeout = headTimeout
        self.tls = try tls.map { try NIOSSLContext(configuration: $0) }
    }

    /// `base`'s child channels behind the guard (and TLS, when the server has a context).
    func wrap<Base: ServerChildChannel>(_ base: Base) -> Guarded<Base> {
        Guarded(base: base, guard: self)
    }

    /// A child channel set up behind the guard.
    struct Guarded<Base: ServerChildChannel>: ServerChildChannel {
        typealias Value = Base.Value
        let base: Base
        let `guard`: ConnectionGuard

        func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(
                    ConnectionAdmission(gate: `guard`.gate, answersRefusals: `guard`.tls == nil, logger: logger))
                if let tls = `guard`.tls { try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls)) }
                try channel.pipeline.syncOperations.addHandler(RequestHeadDeadline(timeout: `guard`.headTimeout))
            }.flatMap {
                base.setup(channel: channel, logger: logger)
            }
        }

        func handle(value: Value, logger: Logger) async {
            await base.handle(value: value, logger: logger)
        }
    }

    /// What a refused plain-HTTP connection reads before it is closed: 429 for its address,
    /// 503 when the server is full, with the code and the reason as JSON.
    static func refusalResponse(_ refusal: LiveRoomError) -> ByteBuffer {
        let body = JSONValue.object(["ErrorCode": .number(Double(refusal.code)), "ErrorMessage": .string(refusal.message)]).jsonText
        let status = refusal.code == ErrorCode.serverFull ? "503 Service Unavailable" : "429 Too Many Requests"
        let head = "HTTP/1.1 \(status)\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n"
        return ByteBuffer(string: head + body)
    }
}

/// The first handler of every connection: counts it in under the caps when it becomes active,
/// before any byte of it is read, or refuses it (plain HTTP first reads why, with the code);
/// counts it out when it closes.
final class ConnectionAdmission: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let gate: ConnectionGate
    private let answersRefusals: Bool
    private let logger: Logger
    /// The address the connection is counted under, once admitted.
    private var admitted: String?

    init(gate: ConnectionGate, answersRefusals: Bool, logger: Logger) {
        self.gate = gate
        self.answersRefusals = answersRefusals
        self.logger = logger
    }

    func channelActive(context: ChannelHandlerContext) {
        let address = ConnectionLimits.key(context.channel.remoteAddress)
        if let refusal = gate.admit(address) {
            logger.debug("Connection refused before its request", metadata: [LogKey.address: "\(address)", LogKey.error: "\(refusal.message)"])
            if answersRefusals {
                context.writeAndFlush(wrapOutboundOut(ConnectionGuard.refusalResponse(refusal)), promise: nil)
            }
            context.close(promise: nil)
            return
        }
        admitted = address
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // A refused connection reads nothing; an admitted one passes everything on.
        guard admitted != nil else { return }
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let address = admitted.take() { gate.release(address) }
        context.fireChannelInactive()
    }
}

/// Closes the connection unless the end of its first request head (the blank line) has been
/// read within `timeout` of its opening; behind TLS it sees the decrypted bytes, so a handshake
/// that never ends is cut by the same deadline. Removes itself once the head is in.
final class RequestHeadDeadline: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let timeout: Duration
    private var deadline: Scheduled<Void>?
    /// How much of "\r\n\r\n" the bytes read so far end with.
    private var matched = 0

    init(timeout: Duration) {
        self.timeout = timeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        deadline = context.eventLoop.scheduleTask(in: TimeAmount(timeout)) {
            channel.close(promise: nil)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        let complete = bytes.withUnsafeReadableBytes { Self.scan($0, matched: &matched) }
        context.fireChannelRead(data)
        if complete {
            deadline?.cancel()
            deadline = nil
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        }
    }

    /// The blank line that ends a request head.
    private static let end: [UInt8] = [13, 10, 13, 10]

    /// Whether `bytes`, read after bytes that ended with `matched` characters of the blank line
    /// ending a request head, complete it; updates `matched`.
    static func scan(_ bytes: UnsafeRawBufferPointer, matched: inout Int) -> Bool {
        for byte in bytes {
            if byte == end[matched] {
                matched += 1
                if matched == end.count { return true }
            } else {
                matched = byte == 13 ? 1 : 0
            }
        }
        return false
    }
}
