import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// Where requests are posted: the parts of an http or https URL (`--webhook-url`, a node's URL).
struct HTTPTarget: Sendable, Hashable {
    var tls: Bool
    var host: String
    var port: Int
    /// The path with its query, never empty.
    var path: String

    /// Parses an `http://` or `https://` URL with a host; nil for anything else.
    init?(url text: String) {
        guard text.utf8.count <= 2048, let url = URLComponents(string: text), let scheme = url.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = url.host, !host.isEmpty, url.user == nil, url.password == nil
        else { return nil }
        tls = scheme == "https"
        // An IPv6 literal comes back in brackets from some Foundations.
        self.host = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        let port = url.port ?? (tls ? 443 : 80)
        guard (1...65535).contains(port) else { return nil }
        self.port = port
        let path = url.percentEncodedPath.isEmpty ? "/" : url.percentEncodedPath
        self.path = path + (url.percentEncodedQuery.map { "?" + $0 } ?? "")
        guard self.path.hasPrefix("/") else { return nil }
    }

    /// The `Host` header: the host, with the port unless it is the scheme's own.
    var hostHeader: String {
        let name = host.contains(":") ? "[\(host)]" : host
        return port == (tls ? 443 : 80) ? name : "\(name):\(port)"
    }
}

/// Posts one request per connection (webhooks; admin calls forwarded to a room's home node),
/// hand-written on SwiftNIO: connect, send, read the answer's status line and at most
/// ``maxResponseBytes`` of its body, close. An attempt has ``timeout`` in all (connecting included).
struct HTTPPostClient: Sendable {
    /// Why an attempt did not get an answer.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The answer: its status, headers and body, whole unless `truncated` (past ``maxResponseBytes``).
    struct Answer: Sendable {
        var status: Int
        var headers: HTTPHeaders
        var body: ByteBuffer
        var truncated: Bool
    }

    let target: HTTPTarget
    let group: any EventLoopGroup
    let timeout: Duration
    let maxResponseBytes: Int
    private let tlsContext: NIOSSLContext?

    init(target: HTTPTarget, group: any EventLoopGroup, timeout: Duration = .seconds(5), maxResponseBytes: Int = 64 * 1024) throws {
        self.target = target
        self.group = group
        self.timeout = timeout
        self.maxResponseBytes = maxResponseBytes
        tlsContext = target.tls ? try NIOSSLContext(configuration: .makeClientConfiguration()) : nil
    }

    /// Posts `body` with `headers` (besides Host, Content-Type, Content-Length and Connection)
    /// to the target's path, or to `path` (with its query) on the target's host, and returns
    /// the answer, or throws ``Failure``.
    func post(_ body: [UInt8], headers extra: [(String, String)], path: String? = nil) async throws -> Answer {
        try await send(.POST, body, headers: extra, path: path)
    }

    /// ``post(_:headers:path:)`` with another method. The Content-Type is JSON unless `extra` names one.
    func send(_ method: HTTPMethod, _ body: [UInt8], headers extra: [(String, String)], path: String? = nil) async throws -> Answer {
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: target.hostHeader)
        headers.add(name: "User-Agent", value: "liveroom-server")
        if !extra.contains(where: { $0.0.lowercased() == "content-type" }) { headers.add(name: "Content-Type", value: "application/json") }
        headers.add(name: "Content-Length", value: String(body.count))
        headers.add(name: "Connection", value: "close")
        for (name, value) in extra { headers.add(name: name, value: value) }
        let head = HTTPRequestHead(version: .http1_1, method: method, uri: path ?? target.path, headers: headers)
        let loop = group.next()
        let answer = loop.makePromise(of: Answer.self)
        let (tlsContext, target, limit) = (self.tlsContext, self.target, maxResponseBytes)
        let serverName = target.tls && !ServerConfiguration.isIPAddress(target.host) ? target.host : nil
        let started = ContinuousClock.now
        let connectTimeout = TimeAmount(timeout)
        let bootstrap = ClientBootstrap(group: loop)
            .connectTimeout(connectTimeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tlsContext {
                        try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: tlsContext, serverHostname: serverName))
                    }
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(
                        HTTPPostAnswerHandler(request: head, body: ByteBuffer(bytes: body), limit: limit, answer: answer))
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.connect(host: target.host, port: target.port).get()
        } catch {
            answer.fail(Failure(description: "cannot connect: \(error)"))
            throw Failure(description: "cannot connect to \(target.hostHeader): \(error)")
        }
        // What is left of the attempt's time closes the connection; the handler then fails the
        // answer if no status line came.
        let left = timeout - (ContinuousClock.now - started)
        let deadline = channel.eventLoop.scheduleTask(in: TimeAmount(max(.zero, left))) {
            channel.close(promise: nil)
        }
        defer { deadline.cancel() }
        return try await withTaskCancellationHandler {
            try await answer.futureResult.get()
        } onCancel: {
            channel.close(promise: nil)
        }
    }
}

/// Sends the request when the connection is up, then reads the answer: its status, and its
/// body up to a limit. The answer is settled once: at the body's end, at the limit (the
/// connection is then closed), or when the connection closes or fails.
final class HTTPPostAnswerHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    private let request: HTTPRequestHead
    private let body: ByteBuffer
    private let limit: Int
    private let answer: EventLoopPromise<HTTPPostClient.Answer>
    private var status: Int?
    private var headers = HTTPHeaders()
    /// The answer so far is informational (1xx): the final one follows.
    private var informational = false
    private var received = ByteBuffer()
    private var truncated = false
    private var settled = false

    init(request: HTTPRequestHead, body: ByteBuffer, limit: Int, answer: EventLoopPromise<HTTPPostClient.Answer>) {
        self.request = request
        self.body = body
        self.limit = limit
        self.answer = answer
    }

    func channelActive(context: ChannelHandlerContext) {
        context.write(wrapOutboundOut(.head(request)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !settled else { return }
        switch unwrapInboundIn(data) {
        case .head(let head):
            informational = head.status.code < 200
            if !informational {
                status = Int(head.status.code)
                headers = head.headers
            }
        case .body(var part):
            guard !informational else { return }
            if received.readableBytes + part.readableBytes > limit {
                part.moveWriterIndex(to: part.readerIndex + (limit - received.readableBytes))
                received.writeBuffer(&part)
                truncated = true
                settle()
                context.close(promise: nil)
            } else {
                received.writeBuffer(&part)
            }
        case .end:
            guard !informational else { return }
            settle()
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        settle()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if status == nil { settle(HTTPPostClient.Failure(description: "\(error)")) }
        context.close(promise: nil)
    }

    private func settle(_ error: (any Error)? = nil) {
        guard !settled else { return }
        settled = true
        if let status, error == nil {
            answer.succeed(HTTPPostClient.Answer(status: status, headers: headers, body: received, truncated: truncated))
        } else {
            answer.fail(error ?? HTTPPostClient.Failure(description: "no answer (the connection closed or the time ran out)"))
        }
    }
}
