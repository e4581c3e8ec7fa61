import LiveRoomCommerce
import LiveRoomCore
import LiveRoomProtocol
import LiveRoomWebhooks
import Logging

/// The PK battles this node runs, beside the hub: each is stored, announced, scored from the
/// orders each second and finished (stored with its winner) when due; a room is in one battle
/// at a time. What the battles' rooms hear, and a starter's refusal, go to the hub that started
/// it (``RoomHub/battleEvent(_:)``), which knows the rooms.
actor PKBattles {
    /// What the hub is told.
    enum Event: Sendable {
        /// An event for everyone in the battle's rooms.
        /// An event for everyone in the battle's rooms: its sides, the starter's first.
        case announce(sides: [PKEnd], name: String, fields: [String: JSONValue])
        /// The battle could not start: for the anchor who started it.
        case refused(SessionID, LiveRoomError)
    }

    /// How often the rooms of a battle hear the score.
    static let scoreInterval = Duration.seconds(1)

    private let store: (any ShopStore)?
    private let webhooks: WebhookService?
    private let logger: Logger
    /// Battles running now, by id, and the battle each room is in.
    private var running: [String: Task<Void, Never>] = [:]
    private var ofRoom: [String: String] = [:]

    init(store: (any ShopStore)?, webhooks: WebhookService?, logger: Logger) {
        self.store = store
        self.webhooks = webhooks
        self.logger = logger
    }

    /// Starts a battle the room core checked, unless one of its rooms is in one already.
    func start(_ command: PKBattleCommand, for hub: RoomHub) async {
        let tell: @Sendable (Event) async -> Void = { [weak hub] event in await hub?.battleEvent(event) }
        guard let store else {
            let error = LiveRoomError(ErrorCode.pkBattleUnavailable, "this server keeps no catalogue, so battles cannot be scored")
            return await tell(.refused(command.session, error))
        }
        // Only an owner of the starter's room's shop starts a battle.
        do {
            try await store.requireShopOwner(command.sides[0].userId, room: command.sides[0].roomId, to: "start PK battles")
        } catch {
            return await tell(.refused(command.session, RoomShops.catalogueError(error)))
        }
        if let busy = command.sides.first(where: { ofRoom[$0.roomId] != nil }) {
            let error = LiveRoomError(ErrorCode.pkBattleRunning, "\(RoomID(key: busy.roomId)) is already in a battle")
            return await tell(.refused(command.session, error))
        }
        let now = EventTime.now().unixMillis
        let battle = PKBattle(
            battleId: "pk-" + String(UInt64.random(in: 1...UInt64(Int64.max)), radix: 36), rooms: command.sides.map { PKBattle.Side(roomId: $0.roomId, userId: $0.userId) },
            startedAt: now, endsAt: now + Int64(command.durationSec) * 1000)
        for side in battle.rooms { ofRoom[side.roomId] = battle.battleId }
        running[battle.battleId] = Task { await self.run(battle, store, startedBy: command.session, tell: tell) }
    }

    private func run(_ battle: PKBattle, _ store: any ShopStore, startedBy session: SessionID, tell: @Sendable (Event) async -> Void) async {
        defer {
            running[battle.battleId] = nil
            for side in battle.rooms where ofRoom[side.roomId] == battle.battleId { ofRoom[side.roomId] = nil }
        }
        do {
            try await store.startBattle(battle)
        } catch {
            return await tell(.refused(session, RoomShops.catalogueError(error)))
        }
        await tell(.announce(sides: battle.sides, name: "onPKBattleStarted", fields: ["battle": battle.json]))
        webhooks?.enqueue(WebhookEvents.battleStarted(battle, at: battle.startedAt))
        while EventTime.now().unixMillis < battle.endsAt {
            try? await Task.sleep(for: Self.scoreInterval)
            let now = min(EventTime.now().unixMillis, battle.endsAt)
            var scores: [PKBattle.Score] = []
            for side in battle.rooms {
                guard let score = try? await store.sales(room: side.roomId, from: battle.startedAt, to: now) else { continue }
                scores.append(score)
            }
            if scores.count == battle.rooms.count {
                await tell(
                    .announce(
                        sides: battle.sides, name: "onPKBattleScore",
                        fields: [
                            "battleId": .string(battle.battleId), "scores": .array(scores.map(\.json)),
                            "remainingSec": .number(Double(max(0, (battle.endsAt - now + 999) / 1000))),
                        ]))
            }
        }
        do {
            let finished = try await store.finishBattle(battle.battleId, endedAt: battle.endsAt)
            await tell(.announce(sides: battle.sides, name: "onPKBattleEnded", fields: ["battle": finished.json]))
            webhooks?.enqueue(WebhookEvents.battleEnded(finished, at: finished.endedAt ?? battle.endsAt))
        } catch {
            logger.warning("Finishing a PK battle failed", metadata: [LogKey.error: "\(error)"])
        }
    }

    /// Battles that were running when the server stopped are finished from the orders, as of
    /// when they were due (or now, if that is earlier). With `overdueBy` (cluster mode, where
    /// another node may be running a battle) only those due that long ago are.
    func finishInterrupted(overdueBy: Duration? = nil) async {
        guard let store else { return }
        do {
            let now = EventTime.now().unixMillis
            let overdueMs = overdueBy.map { $0.components.seconds * 1000 }
            for battle in try await store.unfinishedBattles() where running[battle.battleId] == nil {
                if let overdueMs, battle.endsAt + overdueMs > now { continue }
                let finished = try await store.finishBattle(battle.battleId, endedAt: min(now, battle.endsAt))
                webhooks?.enqueue(WebhookEvents.battleEnded(finished, at: finished.endedAt ?? now))
            }
        } catch {
            logger.warning("Finishing interrupted PK battles failed", metadata: [LogKey.error: "\(error)"])
        }
    }
}

extension PKBattle {
    /// The battle's anchors in their rooms, the starter's first.
    var sides: [PKEnd] { rooms.map { PKEnd(roomId: $0.roomId, userId: $0.userId) } }
}
