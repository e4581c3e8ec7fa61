import LiveRoomProtocol
import Testing

@testable import LiveRoomMixer

@Suite("PublishTaskRegistry: ids, owners, conflicts, sequence numbers")
struct PublishTaskRegistryTests {
    let alice = MixUser(userId: "alice", roomId: "room1")
    let bob = MixUser(userId: "bob", roomId: "room1")

    func relay(_ url: String, mode: PublishMode = .bigStreamToCdn, user: MixUser) -> PublishTaskConfig {
        PublishTaskConfig(target: PublishTarget(mode: mode, cdnUrlList: [PublishCdnUrl(rtmpUrl: url)]), relaySource: user)
    }

    @Test func idsAreUniqueAndTasksAreFoundByRoomAndOwner() throws {
        var registry = PublishTaskRegistry(taskIdPrefix: "t-")
        let first = try registry.add(relay("rtmp://h/live/a", user: alice), roomId: "room1", owner: .user(alice))
        let second = try registry.add(mixConfig(urls: ["rtmp://h/live/mix"]), roomId: "room1", owner: .admin)
        let third = try registry.add(relay("rtmp://h/live/b", user: bob), roomId: "room2", owner: .user(bob))
        #expect([first.taskId, second.taskId, third.taskId] == ["t-1", "t-2", "t-3"])
        #expect(registry.tasks(inRoom: "room1").map(\.taskId) == ["t-1", "t-2"])
        #expect(registry.tasks(ownedBy: alice).map(\.taskId) == ["t-1"])
        #expect(registry.task("t-2")?.owner == .admin)
        #expect(registry.tasks.count == 3)
    }

    @Test func aRoomRunsAtMostItsTaskLimit() throws {
        var registry = PublishTaskRegistry(maxTasksPerRoom: 2)
        _ = try registry.add(mixConfig(urls: ["rtmp://h/live/1"]), roomId: "room1", owner: .admin)
        let second = try registry.add(mixConfig(urls: ["rtmp://h/live/2"]), roomId: "room1", owner: .admin)
        expectError(ErrorCode.tooManyTasks, "room1", "2") {
            _ = try registry.add(mixConfig(urls: ["rtmp://h/live/3"]), roomId: "room1", owner: .admin)
        }
        // Another room has its own count, and a stopped task frees its place.
        _ = try registry.add(mixConfig(urls: ["rtmp://h/live/3"]), roomId: "room2", owner: .admin)
        registry.taskEnded(second.taskId)
        _ = try registry.add(mixConfig(urls: ["rtmp://h/live/4"]), roomId: "room1", owner: .admin)
        #expect(registry.tasks(inRoom: "room1").count == 2)
    }

    @Test func theSameModeAndURLTwiceIsRefused() throws {
        var registry = PublishTaskRegistry()
        let first = try registry.add(mixConfig(urls: ["rtmp://cdn.example.com/live/shop"]), roomId: "room1", owner: .user(alice))
        expectError(ErrorCode.conflictingTask, first.taskId, "mixStreamToCdn", "rtmp://cdn.example.com/live/shop") {
            _ = try registry.add(mixConfig(urls: ["rtmp://other.example.com/live/x", "RTMP://CDN.EXAMPLE.COM/live/shop"]), roomId: "room1", owner: .admin)
        }
        // Another mode may use the URL.
        #expect(throws: Never.self) {
            _ = try registry.add(relay("rtmp://cdn.example.com/live/shop", user: alice), roomId: "room1", owner: .user(alice))
        }
        // An update may not take another task's URL, but keeping its own is fine.
        let second = try registry.add(mixConfig(urls: ["rtmp://cdn.example.com/live/two"]), roomId: "room1", owner: .admin)
        expectError(ErrorCode.conflictingTask) {
            try registry.update(taskId: second.taskId, config: mixConfig(urls: ["rtmp://cdn.example.com/live/shop"]), by: .admin)
        }
        #expect(throws: Never.self) {
            try registry.update(taskId: first.taskId, config: mixConfig(urls: ["rtmp://cdn.example.com/live/shop"], width: 540, height: 960), by: .user(alice))
        }
    }

    @Test func oneRobotIdentityPerRoom() throws {
        var registry = PublishTaskRegistry()
        let toRoom = PublishTaskConfig(
            target: PublishTarget(mode: .mixStreamToRoom, mixStreamIdentity: MixUser(userId: "mix_robot")),
            encoderParam: StreamEncoderParam(videoEncodedWidth: 640, videoEncodedHeight: 360))
        _ = try registry.add(toRoom, roomId: "room1", owner: .admin)
        expectError(ErrorCode.conflictingTask, "mix_robot") {
            var same = toRoom
            same.target.mixStreamIdentity = MixUser(userId: "mix_robot", roomId: "room1")
            _ = try registry.add(same, roomId: "room1", owner: .user(alice))
        }
        #expect(throws: Never.self) { _ = try registry.add(toRoom, roomId: "room2", owner: .admin) }
    }

    @Test func clientsStopTheirOwnTasks() throws {
        var registry = PublishTaskRegistry()
        let a1 = try registry.add(relay("rtmp://h/live/a1", user: alice), roomId: "room1", owner: .user(alice))
        let a2 = try registry.add(mixConfig(urls: ["rtmp://h/live/a2"]), roomId: "room1", owner: .user(alice))
        let b1 = try registry.add(relay("rtmp://h/live/b1", user: bob), roomId: "room1", owner: .user(bob))
        let admin = try registry.add(mixConfig(urls: ["rtmp://h/live/admin"]), roomId: "room1", owner: .admin)
        expectError(ErrorCode.notTaskOwner, b1.taskId, "alice") {
            _ = try registry.stop(taskId: b1.taskId, by: alice)
        }
        expectError(ErrorCode.notTaskOwner) {
            try registry.update(taskId: admin.taskId, config: mixConfig(urls: ["rtmp://h/live/admin"]), by: .user(alice))
        }
        expectError(ErrorCode.taskNotFound, "nope") {
            _ = try registry.stop(taskId: "nope", by: alice)
        }
        // An empty task id stops every task the user started, and only those.
        #expect(try registry.stop(taskId: "", by: alice).map(\.taskId) == [a1.taskId, a2.taskId])
        #expect(registry.tasks.map(\.taskId) == [b1.taskId, admin.taskId])
        #expect(try registry.stop(taskId: "", by: alice).isEmpty)
        // The admin API may stop anyone's task.
        #expect(try registry.remove(b1.taskId, by: .admin).owner == .user(bob))
    }

    @Test func sequenceNumbersMustGrow() throws {
        var registry = PublishTaskRegistry()
        let task = try registry.add(mixConfig(urls: ["rtmp://h/live/s"]), roomId: "room1", owner: .admin)
        let config = mixConfig(urls: ["rtmp://h/live/s"])
        try registry.update(taskId: task.taskId, config: config, by: .admin, sequenceNumber: 5)
        expectError(ErrorCode.staleSequenceNumber, "5", "not above") {
            try registry.update(taskId: task.taskId, config: config, by: .admin, sequenceNumber: 5)
        }
        expectError(ErrorCode.staleSequenceNumber) {
            try registry.checkUpdate(taskId: task.taskId, config: config, by: .admin, sequenceNumber: 4)
        }
        // A refused update does not consume its number.
        expectError(ErrorCode.conflictingTask) {
            let other = try registry.add(mixConfig(urls: ["rtmp://h/live/other"]), roomId: "room1", owner: .admin)
            try registry.update(taskId: task.taskId, config: mixConfig(urls: ["rtmp://h/live/other"]), by: .admin, sequenceNumber: 6)
            _ = other
        }
        try registry.update(taskId: task.taskId, config: config, by: .admin, sequenceNumber: 6)
        #expect(registry.task(task.taskId)?.sequenceNumber == 6)
        // checkUpdate changes nothing.
        try registry.checkUpdate(taskId: task.taskId, config: config, by: .admin, sequenceNumber: 9)
        #expect(registry.task(task.taskId)?.sequenceNumber == 6)
    }

    @Test func roomDismissedAndEndedTasks() throws {
        var registry = PublishTaskRegistry()
        let r1 = try registry.add(mixConfig(urls: ["rtmp://h/live/1"]), roomId: "room1", owner: .admin)
        let r2 = try registry.add(relay("rtmp://h/live/2", user: alice), roomId: "room1", owner: .user(alice))
        let other = try registry.add(relay("rtmp://h/live/3", user: bob), roomId: "room2", owner: .user(bob))
        #expect(registry.roomDismissed("room1").map(\.taskId) == [r1.taskId, r2.taskId])
        #expect(registry.tasks.map(\.taskId) == [other.taskId])
        #expect(registry.taskEnded(other.taskId)?.taskId == other.taskId)
        #expect(registry.taskEnded(other.taskId) == nil)
        // The URL is free again.
        #expect(throws: Never.self) { _ = try registry.add(mixConfig(urls: ["rtmp://h/live/1"]), roomId: "room1", owner: .admin) }
    }

    @Test func idsStayUniqueAfterRemovals() throws {
        var registry = PublishTaskRegistry(taskIdPrefix: "x")
        let first = try registry.add(mixConfig(urls: ["rtmp://h/live/1"]), roomId: "r", owner: .admin)
        _ = try registry.remove(first.taskId, by: .admin)
        let second = try registry.add(mixConfig(urls: ["rtmp://h/live/1"]), roomId: "r", owner: .admin)
        #expect(second.taskId != first.taskId)
        expectError(ErrorCode.missingParameter, "taskId") { _ = try registry.remove("", by: .admin) }
    }
}
