import LiveRoomProtocol
import Testing

@testable import LiveRoomPublishTasks

/// Drives a ``PublishTasksStateMachine`` the way the server does, answering its start steps.
struct TaskBook {
    typealias Action = PublishTasksStateMachine.Action
    var machine: PublishTasksStateMachine
    let t0 = ContinuousClock.now
    /// The session a robot user enters as.
    let robotSession: UInt64 = 900

    init(
        prefix: String = "task-", maxTasksPerRoom: Int = 10, maxTasksPerUser: Int = 4, maxTasks: Int = 20,
        encodingBudget: Int = PublishTasksStateMachine.defaultEncodingBudget, egress: EgressPolicy = EgressPolicy(),
        task: PublishTaskStateMachine.Configuration = .init()
    ) {
        machine = PublishTasksStateMachine(
            configuration: .init(
                task: task, maxTasksPerRoom: maxTasksPerRoom, maxTasksPerUser: maxTasksPerUser, maxTasks: maxTasks, encodingBudget: encodingBudget,
                egress: egress, taskIdPrefix: prefix))
    }

    func at(_ milliseconds: Int) -> ContinuousClock.Instant { t0.advanced(by: .milliseconds(milliseconds)) }

    /// Carries a start through its runner and robot steps; all the actions, in order.
    mutating func started(_ first: [Action]) -> [Action] {
        guard case .startRunner(let taskId, _, _, _, _) = first.last else { return first }
        var actions = first + machine.runnerStarted(taskId, now: t0)
        if case .enterRobot = actions.last { actions += machine.robotEntered(taskId, session: robotSession, now: t0) }
        return actions
    }

    /// Starts an admin task; its id, or the error it was refused with.
    mutating func admin(_ config: PublishTaskConfig, room: String = "room1", anchors: [MixAnchor] = []) throws(LiveRoomError) -> String {
        try Self.answer(started(machine.startFromAdmin(config, roomId: room, anchors: anchors)))
    }

    /// Starts a client task from `user`'s session (its id number is the user's position in `sessions`).
    mutating func client(_ user: MixUser, session: UInt64, target: String, encoderParam: String? = nil, anchors: [MixAnchor] = []) throws -> String {
        let client = PublishTasksStateMachine.Client(session: session, user: user, isAnchor: true)
        return try Self.answer(started(machine.startFromClient(
            target: json(target), encoderParam: encoderParam.map(json), mixingConfig: nil, from: client, anchors: anchors)))
    }

    mutating func adminUpdate(_ request: String) throws {
        _ = try Self.answer(machine.updateFromAdmin(AdminPublishCdnStreamRequest.parseUpdate(json(request)), now: t0))
    }

    mutating func clientStop(_ taskId: String, by user: MixUser, session: UInt64) throws(LiveRoomError) -> [Action] {
        let actions = machine.stopFromClient(taskId: taskId, from: .init(session: session, user: user, isAnchor: true))
        _ = try Self.answer(actions)
        return actions
    }

    /// The answer among `actions`: the task id, or the error thrown.
    static func answer(_ actions: [Action]) throws(LiveRoomError) -> String {
        for case .answer(_, _, let taskId, let error) in actions {
            if let error { throw error }
            return taskId
        }
        throw LiveRoomError(0, "no answer in \(actions)")
    }
}

func relayTarget(_ url: String) -> String { #"{"mode":"bigStreamToCdn","cdnUrlList":[{"rtmpUrl":"\#(url)"}]}"# }
func mixTarget(_ url: String) -> String { #"{"mode":"mixStreamToCdn","cdnUrlList":[{"rtmpUrl":"\#(url)"}]}"# }
let mixEncoder = #"{"videoEncodedWidth":540,"videoEncodedHeight":960}"#

@Suite("PublishTasksStateMachine: ids, owners, conflicts, sequence numbers")
struct PublishTaskRulesTests {
    let alice = MixUser(userId: "alice", roomId: "room1")
    let bob = MixUser(userId: "bob", roomId: "room1")

    @Test func idsAreUniqueAndTasksAreFoundByRoomAndOwner() throws {
        var book = TaskBook(prefix: "t-")
        let first = try book.client(alice, session: 1, target: relayTarget("rtmp://h/live/a"))
        let second = try book.admin(mixConfig(urls: ["rtmp://h/live/mix"]))
        let third = try book.client(MixUser(userId: "bob", roomId: "room2"), session: 2, target: relayTarget("rtmp://h/live/b"))
        #expect([first, second, third] == ["t-1", "t-2", "t-3"])
        #expect(book.machine.tasks(inRoom: "room1").map(\.taskId) == ["t-1", "t-2"])
        #expect(book.machine.tasks(ownedBy: alice).map(\.taskId) == ["t-1"])
        #expect(book.machine.task("t-2")?.owner == .admin)
        #expect(book.machine.task("t-1")?.session == 1)
        #expect(book.machine.task("t-2")?.session == nil)
        #expect(book.machine.tasks.count == 3)
        #expect(book.machine.roomIds == ["room1", "room2"])
    }

    @Test func aRoomRunsAtMostItsTaskLimit() throws {
        var book = TaskBook(maxTasksPerRoom: 2)
        _ = try book.admin(mixConfig(urls: ["rtmp://h/live/1"]))
        let second = try book.admin(mixConfig(urls: ["rtmp://h/live/2"]))
        expectError(ErrorCode.tooManyTasks, "room1", "2") {
            _ = try book.admin(mixConfig(urls: ["rtmp://h/live/3"]))
        }
        // Another room has its own count, and a stopped task frees its place.
        _ = try book.admin(mixConfig(urls: ["rtmp://h/live/3"]), room: "room2")
        _ = book.machine.stopFromAdmin(taskId: second)
        _ = try book.admin(mixConfig(urls: ["rtmp://h/live/4"]))
        #expect(book.machine.tasks(inRoom: "room1").count == 2)
    }

    @Test func aUserAndTheServerRunAtMostTheirTaskLimits() throws {
        var book = TaskBook(maxTasksPerUser: 2, maxTasks: 4)
        _ = try book.client(alice, session: 1, target: relayTarget("rtmp://h/live/a1"))
        _ = try book.client(MixUser(userId: "alice", roomId: "room2"), session: 3, target: relayTarget("rtmp://h/live/a2"))
        expectError(ErrorCode.tooManyTasksForUser, "alice", "2") {
            _ = try book.client(MixUser(userId: "alice", roomId: "room3"), session: 4, target: relayTarget("rtmp://h/live/a3"))
        }
        _ = try book.client(bob, session: 2, target: relayTarget("rtmp://h/live/b1"))
        _ = try book.admin(mixConfig(urls: ["rtmp://h/live/admin1"]))
        expectError(ErrorCode.tooManyTasksOnServer, "4") { _ = try book.admin(mixConfig(urls: ["rtmp://h/live/admin2"])) }
        #expect(ErrorCode.cloudErrorName(for: LiveRoomError(ErrorCode.tooManyTasksOnServer, "")) == "LimitExceeded.Task")
    }

    @Test func theEncodingBudgetBoundsStartsAndUpdates() throws {
        // Room for two 540x960@15 mixes (7.8 million pixels a second each) and a bit.
        var book = TaskBook(encodingBudget: 2 * 540 * 960 * 15 + 1000)
        let first = try book.admin(mixConfig(urls: ["rtmp://h/live/1"]))
        _ = try book.admin(mixConfig(urls: ["rtmp://h/live/2"]))
        expectError(ErrorCode.encodingBudgetExceeded, "7.8 million pixels a second", "0.0 million left") {
            _ = try book.admin(mixConfig(urls: ["rtmp://h/live/3"]))
        }
        // Audio-only output encodes no video and fits.
        _ = try book.admin(mixConfig(urls: ["rtmp://h/live/audio"], width: 0, height: 0))
        // An update may not raise the frame rate past the budget; lowering it frees room.
        expectError(ErrorCode.encodingBudgetExceeded, "15.6 million") {
            try book.adminUpdate(#"{"SdkAppId":1,"TaskId":"\#(first)","SequenceNumber":1,"VideoParams":{"VideoEncode":{"Width":540,"Height":960,"Fps":30,"BitRate":1300,"Gop":2}}}"#)
        }
        try book.adminUpdate(#"{"SdkAppId":1,"TaskId":"\#(first)","SequenceNumber":2,"VideoParams":{"VideoEncode":{"Width":540,"Height":960,"Fps":5,"BitRate":1300,"Gop":2}}}"#)
        expectError(ErrorCode.encodingBudgetExceeded, "5.2 million left") {
            _ = try book.client(alice, session: 1, target: relayTarget("rtmp://h/live/relay"))
        }
        _ = try book.admin(mixConfig(urls: ["rtmp://h/live/small"], width: 320, height: 240))
        #expect(book.machine.tasks.count == 4)
    }

    /// A relay counts as the default publishing size until its runner knows its path: one that
    /// passes an H.264 anchor on encodes nothing and frees its share; one that transcodes a VP8
    /// anchor of 720x1280 at the task's 30 fps counts that (27.6 million pixels a second), and
    /// later starts are admitted against it. Eight such relays were counted as 62 million and
    /// encoded 221.
    @Test func aRelayCountsWhatItsRunnerReallyEncodes() throws {
        var book = TaskBook(encodingBudget: 3 * 540 * 960 * 15)
        let passed = try book.client(alice, session: 1, target: relayTarget("rtmp://h/live/passed"))
        let transcoded = try book.client(alice, session: 1, target: relayTarget("rtmp://h/live/transcoded"))
        #expect(book.machine.encodingUsed == 2 * 540 * 960 * 15, "counted at the default size until known")
        _ = book.machine.encodingMeasured(passed, pixelsPerSecond: 0)
        #expect(book.machine.encodingUsed == 540 * 960 * 15)
        // The relay passed through becomes a mix: counted at the mix's size, not its old 0.
        let mixed = book.machine.updateFromClient(
            taskId: passed, target: try json(mixTarget("rtmp://h/live/passed")),
            encoderParam: try json(#"{"videoEncodedWidth":320,"videoEncodedHeight":240,"videoEncodedFPS":15,"videoEncodedKbps":400}"#), mixingConfig: nil,
            from: .init(session: 1, user: alice, isAnchor: true), now: book.t0)
        #expect(try TaskBook.answer(mixed) == passed)
        #expect(book.machine.task(passed)?.encodingCost == 320 * 240 * 15)
        // The VP8 anchor is 720x1280, transcoded at 30 fps: the budget is past full, and later
        // starts are refused against what it really encodes.
        _ = book.machine.encodingMeasured(transcoded, pixelsPerSecond: 720 * 1280 * 30)
        #expect(book.machine.encodingUsed == 720 * 1280 * 30 + 320 * 240 * 15)
        expectError(ErrorCode.encodingBudgetExceeded, "7.8 million pixels a second", "0.0 million left") {
            _ = try book.admin(mixConfig(urls: ["rtmp://h/live/mix"]))
        }
        // A report out of range is held to the budget's range; an unknown task's is ignored.
        _ = book.machine.encodingMeasured(transcoded, pixelsPerSecond: -5)
        _ = book.machine.encodingMeasured("task-none", pixelsPerSecond: 1)
        #expect(book.machine.task(transcoded)?.encodingCost == 0)
    }

    /// Cluster mode: a task another node runs is not checked against, nor counted in, this
    /// server's budget; it is still a task here (its id, its limits, its claims).
    @Test func aTaskHostedOnAnotherNodeLeavesThisServersBudgetAlone() throws {
        var book = TaskBook(encodingBudget: 540 * 960 * 15 + 1000)
        _ = try book.admin(mixConfig(urls: ["rtmp://h/live/1"]))
        expectError(ErrorCode.encodingBudgetExceeded) { _ = try book.admin(mixConfig(urls: ["rtmp://h/live/2"])) }
        let hosted = book.machine.startFromAdmin(mixConfig(urls: ["rtmp://h/live/2"]), roomId: "room1", anchors: [], hostedOn: "n2")
        guard case .startRunner(let taskId, _, _, _, _)? = hosted.last else {
            Issue.record("not started: \(hosted)")
            return
        }
        #expect(book.machine.task(taskId)?.host == "n2")
        #expect(book.machine.encodingUsed == 540 * 960 * 15, "only this server's own runner counts")
        // Its claims still hold: the same URL again is refused, hosted or not.
        let again = book.machine.startFromAdmin(mixConfig(urls: ["rtmp://h/live/2"]), roomId: "room1", anchors: [], hostedOn: "n3")
        #expect(Self.errorCode(again) == ErrorCode.conflictingTask)
    }

    static func errorCode(_ actions: [PublishTasksStateMachine.Action]) -> Int? {
        for case .answer(_, _, _, let error?) in actions { return error.code }
        return nil
    }

    @Test func theSameModeAndURLTwiceIsRefused() throws {
        var book = TaskBook()
        let first = try book.client(alice, session: 1, target: mixTarget("rtmp://cdn.example.com/live/shop"), encoderParam: mixEncoder)
        expectError(ErrorCode.conflictingTask, first, "mixStreamToCdn", "rtmp://cdn.example.com/live/shop") {
            _ = try book.admin(mixConfig(urls: ["rtmp://other.example.com/live/x", "RTMP://CDN.EXAMPLE.COM/live/shop"]))
        }
        // Another mode may use the URL.
        #expect(throws: Never.self) {
            _ = try book.client(alice, session: 1, target: relayTarget("rtmp://cdn.example.com/live/shop"))
        }
        // An update may not take another task's URL, but keeping its own is fine.
        let second = try book.admin(mixConfig(urls: ["rtmp://cdn.example.com/live/two"]))
        expectError(ErrorCode.conflictingTask) {
            try book.adminUpdate(#"{"TaskId":"\#(second)","SequenceNumber":1,"PublishCdnParams":[{"PublishCdnUrl":"rtmp://cdn.example.com/live/shop"}]}"#)
        }
        let keep = book.machine.updateFromClient(
            taskId: first, target: nil, encoderParam: try json(#"{"videoEncodedWidth":540,"videoEncodedHeight":960,"videoEncodedKbps":900}"#), mixingConfig: nil,
            from: .init(session: 1, user: alice, isAnchor: true), now: book.t0)
        #expect(try TaskBook.answer(keep) == first)
    }

    @Test func oneRobotIdentityPerRoom() throws {
        var book = TaskBook()
        let toRoom = PublishTaskConfig(
            target: PublishTarget(mode: .mixStreamToRoom, mixStreamIdentity: MixUser(userId: "mix_robot")),
            encoderParam: StreamEncoderParam(videoEncodedWidth: 640, videoEncodedHeight: 360))
        _ = try book.admin(toRoom)
        expectError(ErrorCode.conflictingTask, "mix_robot") {
            var same = toRoom
            same.target.mixStreamIdentity = MixUser(userId: "mix_robot", roomId: "room1")
            _ = try book.admin(same)
        }
        #expect(throws: Never.self) { _ = try book.admin(toRoom, room: "room2") }
    }

    @Test func aRobotPublishesOnlyIntoItsTasksRoomAndNeverAsAReservedUser() throws {
        var book = TaskBook()
        var toRoom = PublishTaskConfig(
            target: PublishTarget(mode: .mixStreamToRoom, mixStreamIdentity: MixUser(userId: "mix_robot", roomId: "elsewhere")),
            encoderParam: StreamEncoderParam(videoEncodedWidth: 640, videoEncodedHeight: 360))
        expectError(ErrorCode.invalidPublishTarget, "mixStreamIdentity names room \"elsewhere\", not the task's room \"room1\"") { _ = try book.admin(toRoom) }
        toRoom.target.mixStreamIdentity = MixUser(userId: "Administrator")
        expectError(ErrorCode.invalidPublishTarget, "reserved") { _ = try book.admin(toRoom) }
        #expect(book.machine.tasks.isEmpty, "a refused task starts nothing")

        // In its own room it starts; an update cannot move it out either.
        let taskId = try book.client(
            alice, session: 1, target: #"{"mode":"mixStreamToRoom","mixStreamIdentity":{"userId":"mix_robot"}}"#, encoderParam: mixEncoder)
        let moved = book.machine.updateFromClient(
            taskId: taskId, target: try json(#"{"mode":"mixStreamToRoom","mixStreamIdentity":{"userId":"mix_robot","strRoomId":"room2"}}"#),
            encoderParam: nil, mixingConfig: nil, from: .init(session: 1, user: alice, isAnchor: true), now: book.t0)
        expectError(ErrorCode.invalidPublishTarget, "not the task's room") { _ = try TaskBook.answer(moved) }
    }

    @Test func clientsStopTheirOwnTasks() throws {
        var book = TaskBook()
        let a1 = try book.client(alice, session: 1, target: relayTarget("rtmp://h/live/a1"))
        let a2 = try book.client(alice, session: 1, target: mixTarget("rtmp://h/live/a2"), encoderParam: mixEncoder)
        let b1 = try book.client(bob, session: 2, target: relayTarget("rtmp://h/live/b1"))
        let admin = try book.admin(mixConfig(urls: ["rtmp://h/live/admin"]))
        expectError(ErrorCode.notTaskOwner, b1, "alice") {
            _ = try book.clientStop(b1, by: alice, session: 1)
        }
        let update = book.machine.updateFromClient(
            taskId: admin, target: nil, encoderParam: nil, mixingConfig: nil, from: .init(session: 1, user: alice, isAnchor: true), now: book.t0)
        expectError(ErrorCode.notTaskOwner) { _ = try TaskBook.answer(update) }
        expectError(ErrorCode.taskNotFound, "nope") {
            _ = try book.clientStop("nope", by: alice, session: 1)
        }
        // An empty task id stops every task the user started, and only those.
        let stopped = try book.clientStop("", by: alice, session: 1)
        #expect(stopped.compactMap { if case .stopRunner(let taskId, .requested) = $0 { taskId } else { nil } } == [a1, a2])
        #expect(book.machine.tasks.map(\.taskId) == [b1, admin])
        #expect(try book.clientStop("", by: alice, session: 1).count == 1, "only the answer")
        // The admin API may stop anyone's task.
        #expect(try TaskBook.answer(book.machine.stopFromAdmin(taskId: b1)) == b1)
        #expect(book.machine.task(b1) == nil)
    }

    @Test func sequenceNumbersMustGrow() throws {
        var book = TaskBook()
        let task = try book.admin(mixConfig(urls: ["rtmp://h/live/s"]))
        try book.adminUpdate(#"{"TaskId":"\#(task)","SequenceNumber":5}"#)
        expectError(ErrorCode.staleSequenceNumber, "5", "not above") {
            try book.adminUpdate(#"{"TaskId":"\#(task)","SequenceNumber":5}"#)
        }
        expectError(ErrorCode.staleSequenceNumber) {
            try book.adminUpdate(#"{"TaskId":"\#(task)","SequenceNumber":4}"#)
        }
        // A refused update does not consume its number.
        _ = try book.admin(mixConfig(urls: ["rtmp://h/live/other"]))
        expectError(ErrorCode.conflictingTask) {
            try book.adminUpdate(#"{"TaskId":"\#(task)","SequenceNumber":6,"PublishCdnParams":[{"PublishCdnUrl":"rtmp://h/live/other"}]}"#)
        }
        #expect(book.machine.task(task)?.sequenceNumber == 5)
        try book.adminUpdate(#"{"TaskId":"\#(task)","SequenceNumber":6}"#)
        #expect(book.machine.task(task)?.sequenceNumber == 6)
        // An update that would break the stream is refused too, and changes nothing.
        expectError(ErrorCode.resolutionChange) {
            try book.adminUpdate(#"{"TaskId":"\#(task)","SequenceNumber":7,"WithTranscoding":1,"VideoParams":{"VideoEncode":{"Width":1280,"Height":720,"Fps":15,"BitRate":1300,"Gop":2}}}"#)
        }
        #expect(book.machine.task(task)?.sequenceNumber == 6)
        #expect(book.machine.task(task)?.config.effectiveEncoderParam.videoEncodedWidth == 540)
    }

    @Test func roomDismissedAndEndedTasks() throws {
        var book = TaskBook()
        let r1 = try book.admin(mixConfig(urls: ["rtmp://h/live/1"]))
        let r2 = try book.client(alice, session: 1, target: relayTarget("rtmp://h/live/2"))
        let other = try book.client(MixUser(userId: "bob", roomId: "room2"), session: 2, target: relayTarget("rtmp://h/live/3"))
        let dismissed = book.machine.roomDismissed("room1")
        #expect(dismissed.compactMap { if case .stopRunner(let taskId, .roomDismissed) = $0 { taskId } else { nil } } == [r1, r2])
        #expect(book.machine.tasks.map(\.taskId) == [other])
        #expect(book.machine.roomIds == ["room2"])
        #expect(book.machine.roomDismissed("room1") == [])
        // The URL is free again.
        #expect(throws: Never.self) { _ = try book.admin(mixConfig(urls: ["rtmp://h/live/1"])) }
    }

    @Test func idsStayUniqueAfterRemovals() throws {
        var book = TaskBook(prefix: "x")
        let first = try book.admin(mixConfig(urls: ["rtmp://h/live/1"]), room: "r")
        _ = book.machine.stopFromAdmin(taskId: first)
        let second = try book.admin(mixConfig(urls: ["rtmp://h/live/1"]), room: "r")
        #expect(second != first)
        expectError(ErrorCode.missingParameter, "taskId") { _ = try TaskBook.answer(book.machine.stopFromAdmin(taskId: "")) }
    }
}

@Suite("PublishTasksStateMachine: runners, inputs, taps, robots, timers")
struct PublishTaskOrchestrationTests {
    let host = MixUser(userId: "host", roomId: "room1")
    let guest = MixUser(userId: "guest", roomId: "room1")
    let url = "rtmp://cdn.example.com/live/s"
    var both: [MixAnchor] { anchors([host, guest]) }

    func anchors(_ users: [MixUser]) -> [MixAnchor] {
        users.map { MixAnchor(user: $0, hasVideo: true, hasAudio: true, videoMuted: false) }
    }

    @Test func aClientStartRunsItsRunnerFeedsItAndAnswersLast() throws {
        var book = TaskBook()
        let client = PublishTasksStateMachine.Client(session: 7, user: host, isAnchor: true)
        let first = book.machine.startFromClient(
            target: try json(mixTarget(url)), encoderParam: try json(mixEncoder), mixingConfig: nil, from: client, anchors: both)
        let config = try #require(book.machine.task("task-1")?.config)
        #expect(first == [.startRunner(taskId: "task-1", roomId: "room1", config: config, tap: 1, robot: nil)])
        #expect(book.machine.task("task-1")?.phase == .startingRunner)
        #expect(book.machine.runnerStarted("task-1", now: book.t0) == [
            .setAnchors(taskId: "task-1", anchors([host, guest])), .setTap(1, taskId: "task-1", publishers: [host, guest]),
            .connect(taskId: "task-1", url: url), .reportState(taskId: "task-1", url: url, .connecting, owner: 7),
            .answer(.client(7), .start, taskId: "task-1", error: nil),
        ])
        #expect(book.machine.runnerStarted("task-1", now: book.t0) == [], "a second report changes nothing")
        #expect(book.machine.rtmpConnected("task-1", url: url) == [.reportState(taskId: "task-1", url: url, .pushing, owner: 7)])
    }

    @Test func clientsOutsideARoomOrInTheAudienceAreRefused() throws {
        var book = TaskBook()
        let outside = book.machine.startFromClient(
            target: try json(mixTarget(url)), encoderParam: nil, mixingConfig: nil, from: .init(session: 3, user: nil, isAnchor: false), anchors: [])
        #expect(outside.count == 1)
        expectError(ErrorCode.notInRoom) { _ = try TaskBook.answer(outside) }
        let audience = book.machine.stopFromClient(taskId: "", from: .init(session: 3, user: host, isAnchor: false))
        #expect(audience == [.answer(.client(3), .stop, taskId: "", error: LiveRoomError(ErrorCode.anchorOnly, "only anchors may start, update or stop publish media stream tasks"))])
        let malformed = book.machine.startFromClient(
            target: try json(#"{"mode":"mixStreamToCdn","cdnUrlList":[{"rtmpUrl":"http://not-rtmp"}]}"#), encoderParam: try json(mixEncoder),
            mixingConfig: nil, from: .init(session: 3, user: host, isAnchor: true), anchors: [])
        expectError(ErrorCode.invalidCdnUrl) { _ = try TaskBook.answer(malformed) }
        #expect(book.machine.tasks.isEmpty)
    }

    @Test func anAdminTaskNeedsAnExistingRoomAndARunner() throws {
        var book = TaskBook()
        expectError(ErrorCode.roomNotFound, "nowhere") {
            _ = try TaskBook.answer(book.machine.startFromAdmin(mixConfig(urls: [url]), roomId: "nowhere", anchors: nil))
        }
        // The call's reply travels with the task: the runner's failure, later, answers it.
        let reply = AdminReply()
        _ = book.machine.startFromAdmin(mixConfig(urls: [url]), roomId: "room1", anchors: [], reply: reply)
        let failed = book.machine.runnerFailed("task-1", error: LiveRoomError(ErrorCode.invalidVideoEncoding, "no encoder"))
        #expect(failed == [.answer(.admin(reply), .start, taskId: "", error: LiveRoomError(ErrorCode.invalidVideoEncoding, "no encoder"))])
        #expect(book.machine.tasks.isEmpty && book.machine.roomIds.isEmpty)
    }

    @Test func inputsComeAndGoThenTheIdleTimeStopsTheTask() throws {
        var book = TaskBook(task: .init(idleTimeout: .seconds(30)))
        let taskId = try book.admin(mixConfig(urls: [url]), anchors: [both[0]])
        #expect(book.machine.task(taskId)?.anchors == anchors([host]))
        // Nothing changed: nothing to do.
        #expect(book.machine.anchorsChanged(in: "room1", anchors: [both[0]], now: book.at(10)) == [])
        #expect(book.machine.anchorsChanged(in: "elsewhere", anchors: both, now: book.at(10)) == [])
        #expect(book.machine.anchorsChanged(in: "room1", anchors: both, now: book.at(20)) == [
            .setAnchors(taskId: taskId, anchors([host, guest])), .setTap(1, taskId: taskId, publishers: [host, guest]),
        ])
        // Muted audio is no audio input; the tap stays.
        let muted = [both[0], MixAnchor(user: guest, hasVideo: true, hasAudio: false, videoMuted: false)]
        #expect(book.machine.anchorsChanged(in: "room1", anchors: muted, now: book.at(30)) == [
            .setAnchors(taskId: taskId, [anchors([host])[0], MixAnchor(user: guest, hasVideo: true, hasAudio: false, videoMuted: false)]),
            .setTap(1, taskId: taskId, publishers: [host, guest]),
        ])
        // Everyone leaves: the idle time starts; someone coming back cancels it.
        #expect(book.machine.anchorsChanged(in: "room1", anchors: [], now: book.at(1000)) == [
            .setAnchors(taskId: taskId, []), .setTap(1, taskId: taskId, publishers: []), .scheduleTimer(taskId: taskId, at: book.at(31_000)),
        ])
        _ = book.machine.anchorsChanged(in: "room1", anchors: [both[1]], now: book.at(2000))
        #expect(book.machine.timerFired(taskId, now: book.at(31_000)) == [])
        _ = book.machine.anchorsChanged(in: "room1", anchors: [], now: book.at(40_000))
        #expect(book.machine.timerFired(taskId, now: book.at(69_999)) == [])
        #expect(book.machine.timerFired(taskId, now: book.at(70_000)) == [
            .disconnect(taskId: taskId, url: url), .reportState(taskId: taskId, url: url, .stopped, owner: nil),
            .stopRunner(taskId: taskId, reason: .idleTimeout), .setTap(1, taskId: taskId, publishers: []),
        ])
        #expect(book.machine.tasks.isEmpty && book.machine.roomIds.isEmpty)
        #expect(book.machine.timerFired(taskId, now: book.at(80_000)) == [])
    }

    @Test func aRelayTapsOnlyItsSource() throws {
        var book = TaskBook()
        let taskId = try book.client(guest, session: 2, target: relayTarget(url), anchors: both)
        #expect(book.machine.task(taskId)?.phase == .running)
        let actions = book.machine.anchorsChanged(in: "room1", anchors: [both[1]], now: book.t0)
        #expect(actions == [.setAnchors(taskId: taskId, anchors([guest])), .setTap(1, taskId: taskId, publishers: [guest])])
    }

    @Test func aFailingURLIsRetriedThenTheTaskFails() throws {
        var book = TaskBook(task: .init(retryCount: 1, retryInterval: .milliseconds(250)))
        let taskId = try book.client(host, session: 4, target: mixTarget(url), encoderParam: mixEncoder, anchors: both)
        #expect(book.machine.rtmpFailed(taskId, url: url, message: "refused", now: book.at(0)) == [
            .reportState(taskId: taskId, url: url, .reconnecting(attempt: 1), owner: 4), .scheduleTimer(taskId: taskId, at: book.at(250)),
        ])
        #expect(book.machine.timerFired(taskId, now: book.at(250)) == [.connect(taskId: taskId, url: url)])
        let message = "\(url): refused (gave up after 1 retries)"
        #expect(book.machine.rtmpFailed(taskId, url: url, message: "refused", now: book.at(300)) == [
            .reportState(taskId: taskId, url: url, .failed(message: message), owner: 4),
            .stopRunner(taskId: taskId, reason: .failed(message: message)), .setTap(1, taskId: taskId, publishers: []),
        ])
        #expect(book.machine.rtmpConnected(taskId, url: url) == [])
        // The task ended by itself: stopping it finds nothing.
        expectError(ErrorCode.taskNotFound) { _ = try book.clientStop(taskId, by: host, session: 4) }
    }

    @Test func updatesApplyTheConfigAndFeedAgain() throws {
        var book = TaskBook()
        let taskId = try book.client(host, session: 4, target: relayTarget(url), anchors: both)
        let update = book.machine.updateFromClient(
            taskId: taskId, target: try json(mixTarget(url)), encoderParam: try json(mixEncoder), mixingConfig: nil,
            from: .init(session: 4, user: host, isAnchor: true), now: book.t0)
        let config = try #require(book.machine.task(taskId)?.config)
        #expect(config.target.mode == .mixStreamToCdn)
        #expect(update == [
            .applyConfig(taskId: taskId, config), .setAnchors(taskId: taskId, anchors([host, guest])),
            .setTap(1, taskId: taskId, publishers: [host, guest]), .answer(.client(4), .update, taskId: taskId, error: nil),
        ])
        expectError(ErrorCode.taskNotFound, "gone") {
            _ = try TaskBook.answer(book.machine.updateFromAdmin(AdminPublishCdnStreamRequest.parseUpdate(json(#"{"TaskId":"gone","SequenceNumber":1}"#)), now: book.t0))
        }
    }

    @Test func twoRoomMixesDoNotKeepEachOtherAliveAfterEveryoneLeaves() throws {
        var book = TaskBook(task: .init(idleTimeout: .seconds(30)))
        func roomMix(_ robot: String) -> PublishTaskConfig {
            PublishTaskConfig(
                target: PublishTarget(mode: .mixStreamToRoom, mixStreamIdentity: MixUser(userId: robot)),
                encoderParam: StreamEncoderParam(videoEncodedWidth: 320, videoEncodedHeight: 240))
        }
        let (mixA, mixB) = (MixUser(userId: "mixA", roomId: "room1"), MixUser(userId: "mixB", roomId: "room1"))
        let first = try book.admin(roomMix("mixA"), anchors: [both[0]])
        _ = book.machine.anchorsChanged(in: "room1", anchors: [both[0]] + anchors([mixA]), now: book.t0)
        let second = try book.admin(roomMix("mixB"), anchors: [both[0]] + anchors([mixA]))
        _ = book.machine.anchorsChanged(in: "room1", anchors: [both[0]] + anchors([mixA, mixB]), now: book.t0)
        // Each mix draws the other's robot, but only the host keeps them running.
        let left = book.machine.anchorsChanged(in: "room1", anchors: anchors([mixA, mixB]), now: book.at(1000))
        #expect(left.contains(.scheduleTimer(taskId: first, at: book.at(31_000))), "\(left)")
        #expect(left.contains(.scheduleTimer(taskId: second, at: book.at(31_000))), "\(left)")
        #expect(left.contains(.setTap(1, taskId: first, publishers: [mixB])), "the robot is still drawn")
        let stopped = book.machine.timerFired(first, now: book.at(31_000)) + book.machine.timerFired(second, now: book.at(31_000))
        #expect(stopped.filter { if case .stopRunner(_, .idleTimeout) = $0 { true } else { false } }.count == 2)

        // A relay of a room mix's robot lives as long as the mix has people in it.
        let third = try book.admin(roomMix("mixA"), anchors: [both[0]])
        _ = book.machine.anchorsChanged(in: "room1", anchors: [both[0]] + anchors([mixA]), now: book.at(40_000))
        var relay = PublishTaskConfig(target: PublishTarget(mode: .bigStreamToCdn, cdnUrlList: [PublishCdnUrl(rtmpUrl: "rtmp://h/live/relay")]))
        relay.relaySource = mixA
        let relayId = try book.admin(relay, anchors: [both[0]] + anchors([mixA]))
        let hostLeft = book.machine.anchorsChanged(in: "room1", anchors: anchors([mixA]), now: book.at(50_000))
        #expect(hostLeft.contains(.scheduleTimer(taskId: third, at: book.at(80_000))))
        #expect(hostLeft.contains(.scheduleTimer(taskId: relayId, at: book.at(80_000))), "\(hostLeft)")
    }

    @Test func aRoomTaskEntersItsRobotAndTakesItOutAgain() throws {
        var book = TaskBook()
        let config = PublishTaskConfig(
            target: PublishTarget(mode: .mixStreamToRoom, mixStreamIdentity: MixUser(userId: "mix")),
            encoderParam: StreamEncoderParam(videoEncodedWidth: 640, videoEncodedHeight: 360))
        let robot = MixUser(userId: "mix", roomId: "room1")
        let (started, stopped) = (AdminReply(), AdminReply())
        #expect(book.machine.startFromAdmin(config, roomId: "room1", anchors: both, reply: started) == [
            .startRunner(taskId: "task-1", roomId: "room1", config: config, tap: 1, robot: robot)
        ])
        #expect(book.machine.runnerStarted("task-1", now: book.t0) == [.enterRobot(taskId: "task-1", robot, hasVideo: true)])
        // While the robot enters, the room changes (it publishes): the task is not fed yet.
        let withRobot = both + anchors([robot])
        #expect(book.machine.anchorsChanged(in: "room1", anchors: withRobot, now: book.t0) == [])
        // Running, the mix takes every anchor but its own robot.
        #expect(book.machine.robotEntered("task-1", session: 900, now: book.t0) == [
            .setAnchors(taskId: "task-1", anchors([host, guest, robot])), .setTap(1, taskId: "task-1", publishers: [host, guest]),
            .answer(.admin(started), .start, taskId: "task-1", error: nil),
        ])
        #expect(book.machine.task("task-1")?.robotSession == 900)
        #expect(book.machine.stopFromAdmin(taskId: "task-1", reply: stopped) == [
            .stopRunner(taskId: "task-1", reason: .requested), .setTap(1, taskId: "task-1", publishers: []),
            .leaveRobot(taskId: "task-1", robot, session: 900), .answer(.admin(stopped), .stop, taskId: "task-1", error: nil),
        ])
    }

    @Test func aRefusedRobotStopsTheRunnerAndTheCallerHearsWhy() throws {
        var book = TaskBook()
        let client = PublishTasksStateMachine.Client(session: 5, user: host, isAnchor: true)
        let target = #"{"mode":"mixStreamToRoom","mixStreamIdentity":{"userId":"guest"}}"#
        _ = book.machine.startFromClient(target: try json(target), encoderParam: try json(mixEncoder), mixingConfig: nil, from: client, anchors: both)
        _ = book.machine.runnerStarted("task-1", now: book.t0)
        #expect(book.machine.robotRefused("task-1", .userPresent) == [
            .stopRunner(taskId: "task-1", reason: nil),
            .answer(
                .client(5), .start, taskId: "",
                error: LiveRoomError(ErrorCode.conflictingTask, "guest is already in room \"room1\"; mixStreamIdentity needs a user id of its own")),
        ])
        #expect(book.machine.tasks.isEmpty)

        _ = book.machine.startFromClient(target: try json(target), encoderParam: try json(mixEncoder), mixingConfig: nil, from: client, anchors: both)
        _ = book.machine.runnerStarted("task-2", now: book.t0)
        let refused = book.machine.robotRefused("task-2", .refused(LiveRoomError(ErrorCode.tooManyAnchors, "room \"room1\" already has 2 anchors")))
        expectError(ErrorCode.tooManyAnchors, "the mix's user guest cannot enter room \"room1\": room \"room1\" already has 2 anchors") {
            _ = try TaskBook.answer(refused)
        }
        #expect(book.machine.robotRefused("task-2", .userPresent) == [], "the task is gone")
    }

    @Test func shutdownStopsEveryTaskAndTasksNotYetRunningJustEnd() throws {
        var book = TaskBook()
        let running = try book.admin(mixConfig(urls: [url]), anchors: both)
        _ = book.machine.startFromAdmin(mixConfig(urls: ["rtmp://cdn.example.com/live/other"]), roomId: "room2", anchors: [])
        #expect(book.machine.shutdown() == [
            .disconnect(taskId: running, url: url), .reportState(taskId: running, url: url, .stopped, owner: nil),
            .stopRunner(taskId: running, reason: .requested), .setTap(1, taskId: running, publishers: []),
            .stopRunner(taskId: "task-2", reason: nil),
        ])
        #expect(book.machine.tasks.isEmpty && book.machine.roomIds.isEmpty)
    }

    @Test func cdnStatesAsTheClientHearsThem() {
        #expect(CdnStreamState.connecting.report(retryCount: 5) == (1, 0, "connecting"))
        #expect(CdnStreamState.reconnecting(attempt: 2).report(retryCount: 5) == (3, 0, "reconnecting, attempt 2 of 5"))
        #expect(CdnStreamState.failed(message: "gone").report(retryCount: 5) == (4, ErrorCode.cdnPushFailed, "gone"))
        #expect(CdnStreamState.stopped.report(retryCount: 5) == (0, 0, "stopped"))
        #expect(CdnStreamState.pushing.report(retryCount: 5) == (2, 0, "pushing"))
    }
}
