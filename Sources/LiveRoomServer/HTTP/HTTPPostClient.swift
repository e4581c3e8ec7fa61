import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

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

/// Posts requests (webhooks; admin calls forwarded to a room's home node; node-to-node
/// messages) through AsyncHTTPClient: one request per connection, no redirects followed, the
/// answer's status and at most ``maxResponseBytes`` of its body. An attempt has ``timeout`` in
/// all, connecting included.
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
    let timeout: Duration
    let maxResponseBytes: Int

    /// The process's one client: on NIO's shared event loops, never following a redirect (a
    /// target names where its answer comes from), failing an attempt at once when the target
    /// refuses the connection (webhook delivery and node calls retry on their own schedules), at
    /// most 64 connections to one host at a time, never shut down.
    private static let client: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        configuration.decompression = .disabled
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 64
        return HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
    }()

    init(target: HTTPTarget, timeout: Duration = .seconds(5), maxResponseBytes: Int = 64 * 1024) {
        self.target = target
        self.timeout = timeout
        self.maxResponseBytes = maxResponseBytes
    }

    /// Posts `body` with `headers` (besides Host, Content-Type, Content-Length and Connection)
    /// to the target's path, or to `path` (with its query) on the target's host, and returns
    /// the answer, or throws ``Failure``.
    func post(_ body: [UInt8], headers extra: [(String, String)], path: String? = nil) async throws -> Answer {
        try await send(.POST, body, headers: extra, path: path)
    }

    /// ``post(_:headers:path:)`` with another method. The Content-Type is JSON unless `extra` names one.
    func send(_ method: HTTPMethod, _ body: [UInt8], headers extra: [(String, String)], path: String? = nil) async throws -> Answer {
        var request = HTTPClientRequest(url: (target.tls ? "https://" : "http://") + target.hostHeader + (path ?? target.path))
        request.method = method
        request.headers.add(name: "Host", value: target.hostHeader)
        request.headers.add(name: "User-Agent", value: "liveroom-server")
        if !extra.contains(where: { $0.0.lowercased() == "content-type" }) { request.headers.add(name: "Content-Type", value: "application/json") }
        request.headers.add(name: "Connection", value: "close")
        for (name, value) in extra { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(bytes: body))
        let deadline = NIODeadline.now() + TimeAmount(timeout)
        do {
            let response = try await Self.client.execute(request, deadline: deadline)
            var received = ByteBuffer()
            var truncated = false
            // Past the limit the rest is not read: leaving the loop cancels the request and
            // closes the connection.
            for try await var part in response.body {
                if received.readableBytes + part.readableBytes > maxResponseBytes {
                    part.moveWriterIndex(to: part.readerIndex + (maxResponseBytes - received.readableBytes))
                    received.writeBuffer(&part)
                    truncated = true
                    break
                }
                received.writeBuffer(&part)
            }
            return Answer(status: Int(response.status.code), headers: response.headers, body: received, truncated: truncated)
        } catch {
            throw Failure(description: "no answer from \(target.hostHeader): \(error)")
        }
    }
}
