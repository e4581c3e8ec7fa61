import Foundation
import NIOPosix
import Synchronization
import TestTools
import Testing

@testable import LiveRoomServer

#if canImport(Glibc)
import Glibc
#endif

/// A loopback TCP server that answers each connection with a script, on a thread of its own.
final class ScriptedHTTPServer: Sendable {
    enum Script: Sendable {
        /// Writes these bytes, then closes.
        case answer(String)
        /// Writes the head, then body bytes without end (up to 64 MiB) until the client closes.
        case endless(head: String)
        /// Reads and never answers until the client closes.
        case silent
    }

    let port: UInt16
    private let listener: Int32
    /// Each request as received, and the bytes written to each endless answer.
    let requests = Mutex<[String]>([])
    let written = Mutex<[Int]>([])
    /// Set when a silent connection saw the client close it.
    let clientClosed = Mutex(0)
    private let listenerClosed = DispatchSemaphore(value: 0)

    init(_ script: Script) throws {
        let (fd, port) = try bindLoopback(type: Int32(SOCK_STREAM.rawValue))
        try #require(listen(fd, 8) == 0)
        listener = fd
        self.port = port
        Thread { [self] in
            while true {
                let connection = accept(fd, nil, nil)
                guard connection >= 0 else {
                    // Closed here, not in stop(): there its number could be reused by another
                    // test's socket before this thread's next accept.
                    close(fd)
                    listenerClosed.signal()
                    return
                }
                Thread { [self] in
                    serve(connection, script)
                    close(connection)
                }.start()
            }
        }.start()
    }

    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        _ = listenerClosed.wait(timeout: .now() + 5)
    }

    private func serve(_ fd: Int32, _ script: Script) {
        var request: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        // Reads until the body (Content-Length) is in.
        while request.count < 1 << 20 {
            let count = recv(fd, &chunk, chunk.count, 0)
            guard count > 0 else { break }
            request += chunk[..<count]
            let text = String(decoding: request, as: UTF8.self)
            if let end = text.range(of: "\r\n\r\n"), let lengthLine = text.split(separator: "\r\n").first(where: { $0.lowercased().hasPrefix("content-length:") }),
                let length = Int(lengthLine.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)),
                text.utf8.distance(from: text.utf8.startIndex, to: end.upperBound) + length <= request.count
            {
                break
            }
        }
        requests.withLock { $0.append(String(decoding: request, as: UTF8.self)) }
        func write(_ bytes: [UInt8]) -> Bool { send(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count }
        switch script {
        case .answer(let text):
            _ = write(Array(text.utf8))
        case .endless(let head):
            var total = 0
            if write(Array(head.utf8)) {
                let filler = [UInt8](repeating: 0x78, count: 16_384)
                while total < 64 << 20 {
                    let sent = send(fd, filler, filler.count, Int32(MSG_NOSIGNAL))
                    guard sent > 0 else { break }
                    total += sent
                }
            }
            written.withLock { $0.append(total) }
        case .silent:
            while recv(fd, &chunk, chunk.count, 0) > 0 {}
            clientClosed.withLock { $0 += 1 }
        }
    }
}

@Suite(.timeLimit(.minutes(1))) struct HTTPPostClientTests {
    func client(_ port: UInt16, timeout: Duration = .seconds(5), path: String = "/hook?x=1") throws -> HTTPPostClient {
        HTTPPostClient(target: try #require(HTTPTarget(url: "http://127.0.0.1:\(port)\(path)")), timeout: timeout)
    }

    @Test func postsTheBodyWithItsHeadersAndReturnsTheStatus() async throws {
        let server = try ScriptedHTTPServer(.answer("HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n"))
        defer { server.stop() }
        let body = Array(#"{"EventType":103}"#.utf8)
        let status = try await client(server.port).post(body, headers: [("Sign", "c2lnbg=="), ("SdkAppId", "1400000000")]).status
        #expect(status == 204)
        let request = try #require(server.requests.withLock { $0.first })
        #expect(request.hasPrefix("POST /hook?x=1 HTTP/1.1\r\n"), "\(request)")
        for header in ["Host: 127.0.0.1:\(server.port)", "Content-Type: application/json", "Content-Length: \(body.count)", "Sign: c2lnbg==", "SdkAppId: 1400000000"] {
            #expect(request.contains("\r\n" + header + "\r\n"), "no \(header) in \(request)")
        }
        #expect(request.hasSuffix("\r\n\r\n" + #"{"EventType":103}"#))
    }

    @Test func aContinueBeforeTheAnswerIsSkippedAndAnErrorStatusComesBack() async throws {
        let server = try ScriptedHTTPServer(.answer("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
        defer { server.stop() }
        let answer = try await client(server.port).post([1], headers: [])
        #expect(answer.status == 200 && String(buffer: answer.body) == "ok" && !answer.truncated)
        let failing = try ScriptedHTTPServer(.answer("HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n"))
        defer { failing.stop() }
        #expect(try await client(failing.port).post([1], headers: []).status == 503)
    }

    @Test func anEndlessAnswerIsReadUpToTheLimitAndClosed() async throws {
        let server = try ScriptedHTTPServer(.endless(head: "HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n"))
        defer { server.stop() }
        let started = ContinuousClock.now
        let answer = try await client(server.port).post([1], headers: [])
        #expect(answer.status == 200, "the status line decides")
        #expect(answer.truncated && answer.body.readableBytes == 64 * 1024, "\(answer.body.readableBytes) bytes kept")
        #expect(ContinuousClock.now - started < .seconds(4), "closed at the limit, not at the deadline")
        try await waitFor { server.written.withLock { !$0.isEmpty } }
        let written = server.written.withLock { $0 }
        #expect(written.allSatisfy { $0 < 64 << 20 }, "the client read to the end: \(written)")
    }

    @Test func aCallMayNameItsOwnPathOnTheTargetsHost() async throws {
        let server = try ScriptedHTTPServer(.answer("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"))
        defer { server.stop() }
        _ = try await client(server.port).post([1], headers: [], path: "/v1/DescribeRoom?sdkappid=1&usersig=a%2Bb")
        let request = try #require(server.requests.withLock { $0.first })
        #expect(request.hasPrefix("POST /v1/DescribeRoom?sdkappid=1&usersig=a%2Bb HTTP/1.1\r\n"), "\(request)")
    }

    @Test func noAnswerInTimeIsAFailureAndTheConnectionIsClosed() async throws {
        let server = try ScriptedHTTPServer(.silent)
        defer { server.stop() }
        let started = ContinuousClock.now
        await #expect(throws: HTTPPostClient.Failure.self) { try await client(server.port, timeout: .milliseconds(400)).post([1], headers: []) }
        let took = ContinuousClock.now - started
        #expect(took >= .milliseconds(350) && took < .seconds(3), "\(took)")
        try await waitFor { server.clientClosed.withLock { $0 } == 1 }
    }

    @Test func garbageAndRefusedConnectionsAreFailures() async throws {
        let garbage = try ScriptedHTTPServer(.endless(head: "NOT HTTP AT ALL\r\n"))
        defer { garbage.stop() }
        let started = ContinuousClock.now
        await #expect(throws: HTTPPostClient.Failure.self) { try await client(garbage.port).post([1], headers: []) }
        #expect(ContinuousClock.now - started < .seconds(2), "garbage fails the attempt at once")
        let closed = try ScriptedHTTPServer(.silent)
        let port = closed.port
        closed.stop()
        let refusedAt = ContinuousClock.now
        await #expect(throws: HTTPPostClient.Failure.self) { try await client(port).post([1], headers: []) }
        #expect(ContinuousClock.now - refusedAt < .seconds(2), "a refused connection fails the attempt at once, not at the deadline")
    }

    @Test func targetsAreHttpOrHttpsWithAHost() throws {
        let https = try #require(HTTPTarget(url: "https://shop.example.com/cb"))
        #expect(https.tls && https.port == 443 && https.path == "/cb" && https.hostHeader == "shop.example.com")
        let plain = try #require(HTTPTarget(url: "http://10.0.0.5:8080"))
        #expect(!plain.tls && plain.port == 8080 && plain.path == "/" && plain.hostHeader == "10.0.0.5:8080")
        let v6 = try #require(HTTPTarget(url: "http://[::1]:9000/a?b=c%20d"))
        #expect(v6.host == "::1" && v6.hostHeader == "[::1]:9000" && v6.path == "/a?b=c%20d")
        for bad in ["ftp://x/y", "http://", "/relative", "http://user:pw@host/", "javascript:alert(1)", "http://host:70000/", ""] {
            #expect(HTTPTarget(url: bad) == nil, "\(bad) was taken")
        }
    }

    func waitFor(_ condition: () -> Bool) async throws {
        for _ in 0..<100 where !condition() { try await Task.sleep(for: .milliseconds(20)) }
        #expect(condition())
    }
}
