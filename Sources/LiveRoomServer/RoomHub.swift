import Foundation
import LiveRoomCore
import Logging

/// Owns the room state machine and the open connections, and carries out the machine's
/// actions: messages go to connection outboxes, records to the history recorder.
actor RoomHub {
    private var machine: RoomsStateMachine
    private var outboxes: [SessionID: ConnectionOutbox] = [:]
    private var nextSession: SessionID = 1
    private let recorder: RoomRecorder
    private let logger: Logger

    init(configuration: RoomsStateMachine.Configuration, recorder: RoomRecorder, logger: Logger) {
        self.machine = RoomsStateMachine(configuration: configuration)
        self.recorder = recorder
        self.logger = logger
    }

    var sdkAppId: UInt64 { machine.configuration.sdkAppId }

    /// Registers a new signaling connection.
    func connect() -> (SessionID, ConnectionOutbox) {
        let session = nextSession
        nextSession += 1
        let outbox = ConnectionOutbox()
        outboxes[session] = outbox
        return (session, outbox)
    }

    /// The connection closed: leave its room, drop its outbox.
    func disconnect(_ session: SessionID) {
        execute(machine.disconnected(session, at: .now()))
        outboxes.removeValue(forKey: session)?.close()
    }

    /// One text frame from a connection.
    func receive(_ text: String, from session: SessionID, connectedAt: ContinuousClock.Instant) {
        let request: SignalingRequest
        do {
            request = try SignalingRequest.parse(text)
        } catch {
            logger.debug("Bad signaling message", metadata: [LogKey.session: "\(session)", LogKey.error: "\(error)"])
            send(.error(error), to: session)
            return
        }
        let now = EventTime.now()
        let elapsed = now.monotonic - connectedAt
        let elapsedMs = Int(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000)
        execute(machine.handle(request, from: session, elapsedMs: elapsedMs, at: now))
    }

    /// Tells a connection about an error that is not a request's (e.g. a binary frame).
    func send(_ event: ServerEvent, to session: SessionID) {
        outboxes[session]?.push(event.json.jsonText, priority: .normal)
    }

    // MARK: Admin

    func dismissRoom(_ roomId: String) throws(LiveRoomError) {
        execute(try machine.dismissRoom(roomId, at: .now()))
    }

    func removeUsers(_ userIds: [String], from roomId: String) throws(LiveRoomError) -> [String] {
        let (actions, notFound) = try machine.removeUsers(userIds, from: roomId, at: .now())
        execute(actions)
        return notFound
    }

    func sendGroupMessage(_ data: String, to roomId: String, priority: MessagePriority) throws(LiveRoomError) {
        execute(try machine.sendGroupMessage(data, to: roomId, priority: priority))
    }

    func describe(_ roomId: String) -> RoomSnapshot? {
        machine.describe(roomId)
    }

    /// Tells every connection the server is going away: each user in a room gets onExitRoom(2).
    func shutdown() {
        for roomId in machine.roomIds {
            _ = try? dismissRoom(roomId)
        }
        for outbox in outboxes.values { outbox.close() }
    }

    private func execute(_ actions: [RoomsStateMachine.Action]) {
        var records: [RoomRecord] = []
        for action in actions {
            switch action {
            case .send(let session, let event, let priority):
                outboxes[session]?.push(event.json.jsonText, priority: priority)
            case .record(let record):
                records.append(record)
            }
        }
        recorder.record(records)
    }
}

extension EventTime {
    static func now() -> EventTime {
        EventTime(monotonic: .now, unixMillis: Int64((Date().timeIntervalSince1970 * 1000).rounded()))
    }
}
