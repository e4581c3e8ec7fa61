import Crypto
import Foundation
import LiveRoomProtocol
import TestTools

#if canImport(Glibc)
import Glibc
#endif

/// A tiny HTTP server for webhook tests on a loopback port: it checks each request's `Sign`
/// with the key, answers as its ``Mode`` says, and records the bodies it answered 200.
/// Blocking sockets, a thread per connection; ``stop()`` closes everything.
final class WebhookReceiver: Sendable {
    enum Mode: Sendable {
        /// 200 `{"code":0}`.
        case ok
        /// 500 for the next `count` requests, then 200.
        case fail(count: Int)
        /// Accepts, reads the request and never answers (until the client closes).
        case silent
        /// Answers 500 with a body that never ends (up to `endlessCap` bytes).
        case endless
    }

    struct Received: Sendable {
        var body: JSONValue
        var text: String
    }

    struct State: Sendable {
        var mode: Mode = .ok
        /// Bodies answered 200, in the order they arrived.
        var delivered: [Received] = []
        var requests = 0
        var badSignatures: [String] = []
        var badHeaders: [String] = []
        var refusedWith500 = 0
        var silentConnections = 0
        /// Bytes written to each endless answer before the client closed it.
        var endlessWritten: [Int] = []
    }

    static let endlessCap = 256 << 20

    let port: UInt16
    let key: String
    let sdkAppId: UInt64
    private let listener: Int32
    private let state = Locked(State())
    private let connections = Locked<Set<Int32>>([])
    private let stopped = Locked(false)
    private let listenerClosed = DispatchSemaphore(value: 0)

    /// Listens on 127.0.0.1:`port` (0: a free one).
    init(key: String, sdkAppId: UInt64, port: UInt16 = 0, mode: Mode = .ok) throws {
        self.key = key
        self.sdkAppId = sdkAppId
        let (fd, bound) = try bindLoopback(type: Int32(SOCK_STREAM.rawValue), port: port, reuseAddress: true)
        guard listen(fd, 64) == 0 else {
            close(fd)
            throw TimedOut(description: "cannot listen on port \(port): errno \(errno)")
        }
        self.port = bound
        listener = fd
        state.withLock { $0.mode = mode }
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    var snapshot: State { state.withLock { $0 } }

    func setMode(_ mode: Mode) { state.withLock { $0.mode = mode } }

    /// Stops listening and closes every open connection: the port refuses connections. (The
    /// accept thread holds the receiver, so a test stops each receiver it starts.)
    func stop() {
        guard !stopped.withLock({ let was = $0; $0 = true; return was }) else { return }
        // The accept thread closes the listener as it ends: closed here, its number could be
        // reused by another test's socket before that thread's next accept.
        shutdown(listener, Int32(SHUT_RDWR))
        _ = listenerClosed.wait(timeout: .now() + 5)
        for fd in connections.withLock({ $0 }) { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    deinit { stop() }

    private func acceptLoop() {
        defer {
            close(listener)
            listenerClosed.signal()
        }
        while !stopped.withLock({ $0 }) {
            let fd = accept(listener, nil, nil)
            if fd < 0 {
                if errno == EINTR { continue }
                return
            }
            connections.withLock { _ = $0.insert(fd) }
            Thread { [self] in
                serve(fd)
                connections.withLock { _ = $0.remove(fd) }
                close(fd)
            }.start()
        }
    }

    /// Reads one request (head and Content-Length body, at most 1 MiB) and answers it.
    private func serve(_ fd: Int32) {
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        var headEnd: Int?
        var contentLength = 0
        while buffer.count < 1 << 20 {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return }
            buffer += chunk[..<count]
            if headEnd == nil, let end = Self.find([13, 10, 13, 10], in: buffer) {
                headEnd = end + 4
                let head = String(decoding: buffer[..<end], as: UTF8.self)
                for line in head.split(separator: "\r\n") where line.lowercased().hasPrefix("content-length:") {
                    contentLength = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) ?? 0
                }
            }
            if let headEnd, buffer.count >= headEnd + contentLength { break }
        }
        guard let headEnd else { return }
        let head = String(decoding: buffer[..<headEnd], as: UTF8.self)
        let body = Array(buffer[headEnd..<min(buffer.count, headEnd + contentLength)])
        var headers: [String: String] = [:]
        for line in head.split(separator: "\r\n").dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let expected = Data(HMAC<SHA256>.authenticationCode(for: body, using: SymmetricKey(data: Array(key.utf8)))).base64EncodedString()
        let text = String(decoding: body, as: UTF8.self)
        let mode: Mode = state.withLock { state in
            state.requests += 1
            if headers["sign"] != expected { state.badSignatures.append(text) }
            if !head.hasPrefix("POST ") || headers["content-type"] != "application/json" || headers["sdkappid"] != String(sdkAppId) {
                state.badHeaders.append(head)
            }
            let mode = state.mode
            if case .fail(let count) = mode { state.mode = count > 1 ? .fail(count: count - 1) : .ok }
            return mode
        }
        switch mode {
        case .ok:
            if let json = try? JSONValue.parse(text) { state.withLock { $0.delivered.append(Received(body: json, text: text)) } }
            write(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 10\r\nConnection: close\r\n\r\n{\"code\":0}")
        case .fail:
            state.withLock { $0.refusedWith500 += 1 }
            write(fd, "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 5\r\nConnection: close\r\n\r\noops!")
        case .silent:
            state.withLock { $0.silentConnections += 1 }
            // Wait for the client to give up (read returns 0) or the receiver to stop.
            while chunk.withUnsafeMutableBytes({ recv(fd, $0.baseAddress, $0.count, 0) }) > 0 {}
        case .endless:
            var written = 0
            if write(fd, "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 999999999999\r\n\r\n") {
                let filler = [UInt8](repeating: UInt8(ascii: "x"), count: 16_384)
                while written < Self.endlessCap {
                    let sent = filler.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    guard sent > 0 else { break }
                    written += sent
                }
            }
            state.withLock { $0.endlessWritten.append(written) }
        }
    }

    @discardableResult
    private func write(_ fd: Int32, _ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count) where haystack[start..<start + needle.count].elementsEqual(needle) { return start }
        return nil
    }

    // MARK: What arrived

    /// The delivered events of each room (by `RoomId` as text), repeats (same `UniqueId`) removed,
    /// in arrival order; and how many repeats there were.
    func eventsByRoom() -> (rooms: [String: [Int]], repeats: Int) {
        var seen = Set<String>()
        var rooms: [String: [Int]] = [:]
        var repeats = 0
        for received in snapshot.delivered {
            let info = received.body["EventInfo"]
            let unique = info?["UniqueId"].map { $0.jsonText } ?? ""
            guard seen.insert(unique).inserted else {
                repeats += 1
                continue
            }
            let room = info?["RoomId"]?.stringValue ?? info?["RoomId"]?.intValue.map(String.init) ?? "?"
            rooms[room, default: []].append(received.body["EventType"]?.intValue ?? -1)
        }
        return (rooms, repeats)
    }

    /// Waits until `done` holds for what arrived, polling, for at most `timeout`.
    func waitUntil(timeout: Duration, _ what: String, _ done: (WebhookReceiver) -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if done(self) { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw TimedOut(description: "webhooks: \(what) not within \(timeout); arrived: \(eventsByRoom()); \(snapshot.requests) requests")
    }
}
