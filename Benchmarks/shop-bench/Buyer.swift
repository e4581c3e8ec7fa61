import BenchSupport
import Foundation
import HummingbirdWSClient
import LiveRoomAuth
import LiveRoomProtocol
import Logging

/// What became of one buy request.
struct BuyOutcome: Sendable {
    var requestId: String
    /// onBuyResult's code; nil when no answer came (the connection closed first, or the time ran out).
    var code: Int?
    var orderId: String?
    var quantity: Int
    /// From sending the request to its answer.
    var latency: Duration?
    /// When it was sent.
    var sentAt: ContinuousClock.Instant?
    /// Unanswered: how the buyer's connection ended.
    var end: String?
}

/// Connects as audience member `userId`, enters `room`, and once `onEnterRoom` says it is in,
/// runs `body` with the server's next messages and the writer. Refused, it returns without `body`.
/// Returns the close frame the server sent, if it closed the connection.
@discardableResult func inRoom(
    as userId: String, of room: RoomID, role: Role = .audience, url: String, sdkAppId: UInt64, secretKey: String, logger: Logger,
    _ body: @escaping @Sendable (inout WebSocketInboundMessageStream.AsyncIterator, WebSocketOutboundWriter) async throws -> Void
) async throws -> WebSocketCloseFrame? {
    let sig = UserSig.make(sdkAppId: sdkAppId, secretKey: secretKey, identifier: userId, time: Int64(Date().timeIntervalSince1970), expire: 3600)
    let enter = EnterRoomParams(sdkAppId: sdkAppId, userId: userId, userSig: sig.encoded(), room: room, role: role)
    return try await WebSocketClient.connect(url: url, configuration: .init(maxFrameSize: 1 << 20), logger: logger) { inbound, outbound, _ in
        try await outbound.write(.text(RoomRequest.enterRoom(enter).json.jsonText))
        var messages = inbound.messages(maxSize: 1 << 20).makeAsyncIterator()
        while let message = try await messages.next() {
            guard case .text(let text) = message, case .onEnterRoom(let result, _)? = try? ServerEvent.parse(text) else { continue }
            guard result >= 0 else { return }
            break
        }
        try await body(&messages, outbound)
    }
}

/// Counts buyers who have every answer, for the bench to wait until all have.
actor Arrivals {
    private var count = 0
    private var waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []

    func arrive() {
        count += 1
        waiters.removeAll { waiter in
            guard waiter.count <= count else { return false }
            waiter.continuation.resume()
            return true
        }
    }

    /// Returns once `expected` have arrived.
    func wait(for expected: Int) async {
        if count >= expected { return }
        await withCheckedContinuation { waiters.append((expected, $0)) }
    }

    /// One buyer's arrival, counted once however many paths arrive.
    final class Once: @unchecked Sendable {
        private let arrivals: Arrivals
        private let lock = NSLock()
        private var arrived = false

        init(_ arrivals: Arrivals) { self.arrivals = arrivals }

        func arrive() async {
            guard lock.withLock({ () -> Bool in
                defer { arrived = true }
                return !arrived
            }) else { return }
            await arrivals.arrive()
        }
    }
}

/// Opens once: every buyer waits on it after entering, so the requests go out in one burst.
actor Gate {
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func wait() async {
        if isOpen { return }
        await withCheckedContinuation { waiters.append($0) }
    }

    func open() {
        isOpen = true
        for waiter in waiters { waiter.resume() }
        waiters = []
    }
}

/// One audience member on its own WebSocket: enters the room, says so, waits for the gate,
/// sends its buy requests (spread over `spread`, or at once), and collects the answers.
struct Buyer: Sendable {
    var url: String
    var room: RoomID
    var userId: String
    var sdkAppId: UInt64
    var secretKey: String
    var itemNumber: Int
    /// The request ids to send, one buy of 1 unit each.
    var requestIds: [String]
    var spread: Duration
    var timeout: Duration

    /// Runs the buyer; `entered` is called once it is in the room (or could not get in). Once
    /// every answer is in (or the connection ended) it says so to `done` and stays in the room
    /// until `leave` opens: buyers do not leave while others still wait for their answers.
    func run(gate: Gate, done: Arrivals, leave: Gate, logger: Logger, entered: @escaping @Sendable (Bool) -> Void) async -> [BuyOutcome] {
        let outcomes = Outcomes(requestIds: requestIds)
        let arrived = Arrivals.Once(done)
        do {
            let close = try await withTimeout(timeout, "buyer \(userId) timed out") { [self] in
                try await inRoom(as: userId, of: room, url: url, sdkAppId: sdkAppId, secretKey: secretKey, logger: logger) { messages, outbound in
                    outcomes.entered = true
                    entered(true)
                    await gate.wait()
                    let sender = Task {
                        let pause = spread / max(requestIds.count, 1)
                        // Buyers start at different points of the spread, not all together.
                        if pause > .zero { try await Task.sleep(for: pause * Double.random(in: 0..<1)) }
                        for requestId in requestIds {
                            outcomes.sent(requestId, at: .now)
                            let request = RoomRequest.buyProduct(itemNumber: itemNumber, quantity: 1, requestId: requestId)
                            try await outbound.write(.text(request.json.jsonText))
                            if pause > .zero { try await Task.sleep(for: pause) }
                        }
                    }
                    defer { sender.cancel() }
                    while outcomes.waiting > 0, let message = try await messages.next() {
                        // Only answers are read as JSON. A buyer hears every message of the room
                        // (the anchor's custom messages, the sales), and parsing each one, for a
                        // thousand buyers in one process, kept this client's pongs waiting behind
                        // its reading for over a ping interval (seen on the wire: no pong within
                        // 20 s of the server's ping), so the server rightly closed it. A browser
                        // answers pings apart from its page's work.
                        guard case .text(let text) = message, text.contains(#""event":"onBuyResult""#),
                            case .onBuyResult(_, let quantity, let code, _, let orderId, _, let requestId?)? = try? ServerEvent.parse(text)
                        else { continue }
                        outcomes.answered(requestId, code: code, orderId: orderId, quantity: quantity, at: .now)
                    }
                    // Stays in the room, not reading (a second or so: far within a ping
                    // interval), until every buyer has its answers.
                    await arrived.arrive()
                    await leave.wait()
                    try? await outbound.close(.normalClosure, reason: "shop-bench done")
                }
            }
            if outcomes.waiting > 0 {
                outcomes.end = close.map { "closed by the server (\($0.closeCode)): \($0.reason ?? "")" } ?? "the connection ended"
            }
        } catch {
            // A lost connection (the server was killed) or the time running out: what was
            // answered stays answered, the rest has no code.
            if outcomes.waiting > 0 { outcomes.end = "\(error)" }
        }
        await arrived.arrive()
        if !outcomes.entered { entered(false) }
        return outcomes.all.map { outcome in
            var outcome = outcome
            if outcome.code == nil { outcome.end = outcomes.end }
            return outcome
        }
    }
}

/// The outcomes of one buyer's requests, filled in as answers come.
final class Outcomes: @unchecked Sendable {
    private let lock = NSLock()
    private var byId: [String: BuyOutcome]
    private var sentAt: [String: ContinuousClock.Instant] = [:]
    private let order: [String]
    private var isIn = false
    private var ending: String?

    /// How the connection ended while answers were still due.
    var end: String? {
        get { lock.withLock { ending } }
        set { lock.withLock { ending = newValue } }
    }

    /// Whether the buyer got into the room.
    var entered: Bool {
        get { lock.withLock { isIn } }
        set { lock.withLock { isIn = newValue } }
    }

    init(requestIds: [String]) {
        order = requestIds
        byId = Dictionary(uniqueKeysWithValues: requestIds.map { ($0, BuyOutcome(requestId: $0, quantity: 1)) })
    }

    var waiting: Int { lock.withLock { byId.values.count { $0.code == nil } } }

    func sent(_ requestId: String, at instant: ContinuousClock.Instant) {
        lock.withLock { sentAt[requestId] = instant }
    }

    func answered(_ requestId: String, code: Int, orderId: String?, quantity: Int, at instant: ContinuousClock.Instant) {
        lock.withLock {
            guard byId[requestId]?.code == nil else { return }
            byId[requestId] = BuyOutcome(
                requestId: requestId, code: code, orderId: orderId, quantity: quantity, latency: sentAt[requestId].map { instant - $0 },
                sentAt: sentAt[requestId])
        }
    }

    var all: [BuyOutcome] { lock.withLock { order.compactMap { byId[$0] } } }
}
