import LiveRoomCommerce
import LiveRoomCore
import LiveRoomProtocol
import LiveRoomWebhooks

/// A battle the hub runs: its rooms hear the score each second until it is due.
struct RunningBattle {
    var battle: PKBattle
    var task: Task<Void, Never>?
}

extension RoomHub {
    /// How often the rooms of a battle hear the score.
    static let battleScoreInterval = Duration.seconds(1)

    /// Starts a battle the room core checked: stored first, then announced, scored each second
    /// from the orders, and finished (stored with its winner) when due.
    func startBattle(_ command: PKBattleCommand) {
        guard let catalogue else {
            let error = LiveRoomError(ErrorCode.pkBattleUnavailable, "this server keeps no catalogue, so pkBattles.running cannot be scored")
            return send(.error(error, requestType: "startPKBattle"), to: command.session)
        }
        if let busy = command.sides.first(where: { pkBattles.ofRoom[$0.roomId] != nil }) {
            let error = LiveRoomError(ErrorCode.pkBattleRunning, "\(RoomID(key: busy.roomId)) is already in a battle")
            return send(.error(error, requestType: "startPKBattle"), to: command.session)
        }
        let now = EventTime.now().unixMillis
        let battle = PKBattle(
            battleId: "pk-" + String(UInt64.random(in: 1...UInt64(Int64.max)), radix: 36), rooms: command.sides.map { PKBattle.Side(roomId: $0.roomId, userId: $0.userId) },
            startedAt: now, endsAt: now + Int64(command.durationSec) * 1000)
        for side in battle.rooms { pkBattles.ofRoom[side.roomId] = battle.battleId }
        pkBattles.running[battle.battleId] = RunningBattle(battle: battle)
        pkBattles.running[battle.battleId]?.task = Task {
            await self.runBattle(battle, catalogue, startedBy: command.session)
        }
    }

    private func runBattle(_ battle: PKBattle, _ store: any ShopStore, startedBy session: SessionID) async {
        defer {
            pkBattles.running[battle.battleId] = nil
            for side in battle.rooms where pkBattles.ofRoom[side.roomId] == battle.battleId { pkBattles.ofRoom[side.roomId] = nil }
        }
        do {
            try await store.startBattle(battle)
        } catch {
            return send(.error(Self.catalogueError(error), requestType: "startPKBattle"), to: session)
        }
        announce(battle, "onPKBattleStarted", ["battle": battle.json])
        webhooks?.enqueue(WebhookEvents.battleStarted(battle, at: battle.startedAt))
        while EventTime.now().unixMillis < battle.endsAt {
            try? await Task.sleep(for: Self.battleScoreInterval)
            let now = min(EventTime.now().unixMillis, battle.endsAt)
            var scores: [PKBattle.Score] = []
            for side in battle.rooms {
                guard let score = try? await store.sales(room: side.roomId, from: battle.startedAt, to: now) else { continue }
                scores.append(score)
            }
            if scores.count == battle.rooms.count {
                announce(battle, "onPKBattleScore", [
                    "battleId": .string(battle.battleId), "scores": .array(scores.map(\.json)),
                    "remainingSec": .number(Double(max(0, (battle.endsAt - now + 999) / 1000))),
                ])
            }
        }
        do {
            let finished = try await store.finishBattle(battle.battleId, endedAt: battle.endsAt)
            announce(battle, "onPKBattleEnded", ["battle": finished.json])
            webhooks?.enqueue(WebhookEvents.battleEnded(finished, at: finished.endedAt ?? battle.endsAt))
        } catch {
            logger.warning("Finishing a PK battle failed", metadata: [LogKey.error: "\(error)"])
        }
    }

    /// An event to everyone in the battle's rooms.
    /// A side in a room on another node (cluster mode) hears it through that room's home.
    private func announce(_ battle: PKBattle, _ name: String, _ fields: [String: JSONValue]) {
        let starter = battle.rooms[0]
        for side in battle.rooms {
            let end = PKEnd(roomId: side.roomId, userId: side.userId)
            if announceElsewhere(name, fields, to: end, from: PKEnd(roomId: starter.roomId, userId: starter.userId)) { continue }
            broadcast(.onPKBattle(name: name, fields: fields), in: side.roomId)
        }
    }

    /// Battles that were running when the server stopped are finished from the orders, as of
    /// when they were due (or now, if that is earlier). With `overdueBy` (cluster mode, where
    /// another node may be running a battle) only those due that long ago are.
    func finishInterruptedBattles(overdueBy: Duration? = nil) async {
        guard let catalogue else { return }
        do {
            let now = EventTime.now().unixMillis
            let overdueMs = overdueBy.map { $0.components.seconds * 1000 }
            for battle in try await catalogue.unfinishedBattles() where pkBattles.running[battle.battleId] == nil {
                if let overdueMs, battle.endsAt + overdueMs > now { continue }
                let finished = try await catalogue.finishBattle(battle.battleId, endedAt: min(now, battle.endsAt))
                webhooks?.enqueue(WebhookEvents.battleEnded(finished, at: finished.endedAt ?? now))
            }
        } catch {
            logger.warning("Finishing interrupted PK pkBattles.running failed", metadata: [LogKey.error: "\(error)"])
        }
    }

    /// PK requests nobody answered in time get their answer (-3326).
    func expirePKRequests() {
        let answers = machine.expirePKRequests(now: .now)
        if !answers.isEmpty { execute(answers) }
    }

    /// The PK links of a room, for DescribeRoom.
    func pkLinks(of roomId: String) -> [PKLink] {
        machine.pkLinks(of: roomId)
    }
}
