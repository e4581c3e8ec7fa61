import Foundation
import HummingbirdWSClient
import LiveRoomProtocol
import Logging
import TestTools

/// Debian's Chromium, headless, started by a test on a DevTools port it picks itself and
/// stopped with the test's other processes (its profile lives in the scope's data directory).
struct HeadlessChromium {
    let process: ChildProcess
    /// The browser's DevTools WebSocket (`ws://127.0.0.1:PORT/devtools/browser/ID`).
    let browserURL: String

    /// - Parameters:
    ///   - arguments: more command-line switches (fake media devices, say).
    ///   - url: the page it opens.
    static func start(in scope: ProcessScope, arguments: [String] = [], url: String = "about:blank") async throws -> HeadlessChromium {
        let profile = scope.dataDirectory.appendingPathComponent("chromium-profile-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: profile, withIntermediateDirectories: true)
        let process = try scope.start(
            RequiredTool.chromium.path,
            [
                "--headless=new", "--no-sandbox", "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1",
                "--user-data-dir=\(profile.path)", "--autoplay-policy=no-user-gesture-required", "--allow-loopback-in-peer-connection",
                "--remote-allow-origins=*", "--disable-gpu", "--no-first-run", "--no-default-browser-check", "--disable-background-networking", "--disable-extensions",
                "--disable-dev-shm-usage", "--mute-audio", "--disable-renderer-backgrounding", "--disable-background-timer-throttling",
            ] + arguments + [url],
            name: "chromium")
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            let text = process.standardError
            if let start = text.range(of: "DevTools listening on ") {
                let rest = text[start.upperBound...]
                if let end = rest.firstIndex(where: \.isNewline) {
                    return HeadlessChromium(process: process, browserURL: String(rest[..<end]).trimmingCharacters(in: .whitespaces))
                }
            }
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw TimedOut(description: "chromium printed no DevTools address; stderr:\n\(process.standardError)")
    }
}

/// A Chrome DevTools Protocol connection to the browser: commands by id, answers matched to
/// them; events are not kept. Pages are reached through flat sessions (`Target.attachToTarget`).
final class DevTools: Sendable {
    struct ProtocolError: Error, CustomStringConvertible {
        let description: String
    }

    private let outbound: WebSocketOutboundWriter
    private let pending = Locked<[Int: CheckedContinuation<JSONValue, any Error>]>([:])
    private let lastId = Locked(0)

    private init(outbound: WebSocketOutboundWriter) {
        self.outbound = outbound
    }

    /// Connects to `url`, runs `body`, and closes the connection.
    static func connect<T: Sendable>(_ url: String, _ body: @escaping @Sendable (DevTools) async throws -> T) async throws -> T {
        let result = Locked<Result<T, any Error>?>(nil)
        let maxSize = 64 << 20  // screenshots come as base64 in one message
        _ = try await WebSocketClient.connect(url: url, configuration: .init(maxFrameSize: maxSize), logger: Logger(label: "devtools")) {
            inbound, outbound, _ in
            let devtools = DevTools(outbound: outbound)
            await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for try await message in inbound.messages(maxSize: maxSize) {
                        if case .text(let text) = message { devtools.deliver(text) }
                    }
                    devtools.failAll("the DevTools connection closed")
                }
                let outcome: Result<T, any Error>
                do { outcome = .success(try await body(devtools)) } catch { outcome = .failure(error) }
                result.withLock { $0 = outcome }
                group.cancelAll()
                devtools.failAll("the test ended")
            }
        }
        guard let outcome = result.withLock({ $0 }) else { throw ProtocolError(description: "the DevTools connection ended before the test") }
        return try outcome.get()
    }

    /// Sends a command and waits (at most `timeout`) for its answer's `result`.
    @discardableResult
    func call(_ method: String, _ params: [String: JSONValue] = [:], session: String? = nil, timeout: Duration = .seconds(30)) async throws -> JSONValue {
        let id = lastId.withLock { $0 += 1; return $0 }
        var message: [String: JSONValue] = ["id": .number(Double(id)), "method": .string(method), "params": .object(params)]
        if let session { message["sessionId"] = .string(session) }
        let text = JSONValue.object(message).jsonText
        return try await withThrowingTaskGroup(of: JSONValue.self) { group in
            group.addTask { try await self.answer(to: id, text) }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw ProtocolError(description: "\(method): no answer in \(timeout)")
            }
            defer { group.cancelAll() }
            return try await group.next()!
        }
    }

    /// Sends command `id` and waits for its answer; cancelled, it stops waiting.
    private func answer(to id: Int, _ text: String) async throws -> JSONValue {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                // Registered before sending, so that no answer can come first.
                pending.withLock { $0[id] = continuation }
                if Task.isCancelled { finish(id, .failure(CancellationError())) }
                Task { [outbound] in
                    do { try await outbound.write(.text(text)) } catch { self.finish(id, .failure(error)) }
                }
            }
        } onCancel: {
            finish(id, .failure(CancellationError()))
        }
    }

    private func finish(_ id: Int, _ result: Result<JSONValue, any Error>) {
        pending.withLock { $0.removeValue(forKey: id) }?.resume(with: result)
    }

    private func deliver(_ text: String) {
        guard let message = try? JSONValue.parse(text), let id = message["id"]?.intValue else { return }
        if let error = message["error"] {
            finish(id, .failure(ProtocolError(description: "DevTools error: \(error.jsonText)")))
        } else {
            finish(id, .success(message["result"] ?? .object([:])))
        }
    }

    private func failAll(_ why: String) {
        let waiting = pending.withLock { all in
            defer { all = [:] }
            return all
        }
        for continuation in waiting.values { continuation.resume(throwing: ProtocolError(description: why)) }
    }

    /// Opens a new page (tab) with a phone-sized portrait viewport.
    func openPage(width: Int = 390, height: Int = 844) async throws -> BrowserPage {
        let target = try await call("Target.createTarget", ["url": "about:blank"])
        guard let targetId = target["targetId"]?.stringValue else { throw ProtocolError(description: "no targetId: \(target.jsonText)") }
        let attached = try await call("Target.attachToTarget", ["targetId": .string(targetId), "flatten": true])
        guard let session = attached["sessionId"]?.stringValue else { throw ProtocolError(description: "no sessionId: \(attached.jsonText)") }
        let page = BrowserPage(devtools: self, session: session, width: width, height: height)
        try await call("Page.enable", session: session)
        try await call("Runtime.enable", session: session)
        try await call(
            "Emulation.setDeviceMetricsOverride",
            ["width": .number(Double(width)), "height": .number(Double(height)), "deviceScaleFactor": 1, "mobile": true], session: session)
        return page
    }
}

/// One page of the browser, driven through its DevTools session.
struct BrowserPage: Sendable {
    let devtools: DevTools
    let session: String
    let width: Int
    let height: Int

    /// Opens `url` in the page and waits until its document has loaded.
    func navigate(_ url: String) async throws {
        let answer = try await devtools.call("Page.navigate", ["url": .string(url)], session: session)
        if let error = answer["errorText"]?.stringValue { throw DevTools.ProtocolError(description: "navigating to \(url): \(error)") }
        // Page.navigate answers once the navigation starts; wait for the new document to load.
        try await waitFor("\(url) loads", "location.protocol !== 'about:' && document.readyState === 'complete'")
    }

    /// Evaluates a JavaScript expression in the page (awaiting a promise) and returns its value.
    @discardableResult
    func evaluate(_ expression: String) async throws -> JSONValue {
        let answer = try await devtools.call(
            "Runtime.evaluate", ["expression": .string(expression), "returnByValue": true, "awaitPromise": true], session: session)
        if let exception = answer["exceptionDetails"] {
            throw DevTools.ProtocolError(description: "\(expression) threw: \(exception.jsonText)")
        }
        return answer["result"]?["value"] ?? .null
    }

    /// Evaluates `expression` every 50 ms until it gives something other than null, false, 0 or
    /// "" (at most `timeout`), and returns that.
    @discardableResult
    func waitFor(_ what: String, timeout: Duration = .seconds(15), _ expression: String) async throws -> JSONValue {
        let deadline = ContinuousClock.now + timeout
        var last: JSONValue = .null
        while ContinuousClock.now < deadline {
            last = try await evaluate(expression)
            switch last {
            case .null, .bool(false), .number(0), .string(""): break
            default: return last
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        let state = (try? await evaluate("document.getElementById('state')?.textContent ?? ''"))?.stringValue ?? "?"
        throw TimedOut(description: "\(what): not within \(timeout) (last \(last.jsonText); the page's state: \(state))")
    }

    /// A PNG of the viewport, written to `path`.
    func screenshot(to path: URL) async throws {
        let answer = try await devtools.call("Page.captureScreenshot", ["format": "png"], session: session)
        guard let base64 = answer["data"]?.stringValue, let png = Data(base64Encoded: base64) else {
            throw DevTools.ProtocolError(description: "no screenshot data")
        }
        try png.write(to: path)
    }
}
