import Testing

@testable import LiveRoomCluster
import LiveRoomPostgres

/// A node with a load, heartbeating at `heartbeat`.
private func node(_ id: String, rooms: Int = 0, peers: Int = 0, tasks: Int = 0, cpu: Double = 0, heartbeat: Int64 = 10_000) -> ClusterNode {
    ClusterNode(
        registration: NodeRegistration(nodeId: id, signalingURL: "http://127.0.0.1:1/\(id)", mediaAddresses: []),
        load: NodeLoad(rooms: rooms, peers: peers, tasks: tasks, cpuPercent: cpu), homedRooms: rooms, lastHeartbeatMs: heartbeat)
}

@Suite struct ClusterLivenessTests {
    @Test func aNodeIsAliveForThreeSecondsAfterItsHeartbeat() {
        #expect(ClusterRules.isAlive(lastHeartbeatMs: 1000, nowMs: 1000))
        #expect(ClusterRules.isAlive(lastHeartbeatMs: 1000, nowMs: 3999))
        #expect(!ClusterRules.isAlive(lastHeartbeatMs: 1000, nowMs: 4000))
        #expect(!ClusterRules.isAlive(lastHeartbeatMs: 1000, nowMs: 60_000))
    }

    @Test func aHeartbeatFromTheFutureCountsAsFresh() {
        #expect(ClusterRules.isAlive(lastHeartbeatMs: 5000, nowMs: 4000))
    }

    @Test func noNodeIsDeadUntilTheDeadIntervalHasPassedSinceTheDatabaseStarted() {
        // The database restarted at 20 s after being down for 10: it heard nobody meanwhile.
        #expect(ClusterRules.isAlive(lastHeartbeatMs: 10_000, nowMs: 22_999, databaseStartedMs: 20_000))
        #expect(!ClusterRules.isAlive(lastHeartbeatMs: 10_000, nowMs: 23_000, databaseStartedMs: 20_000))
        // A node that heartbeats after the restart is judged on that heartbeat.
        #expect(ClusterRules.isAlive(lastHeartbeatMs: 22_000, nowMs: 24_999, databaseStartedMs: 20_000))
        let view = ClusterView(nodes: [node("a", heartbeat: 10_000), node("b", heartbeat: 21_000)], nowMs: 22_000, databaseStartedMs: 20_000)
        #expect(view.alive.map(\.nodeId) == ["a", "b"])
        #expect(ClusterView(nodes: view.nodes, nowMs: 23_500, databaseStartedMs: 20_000).alive.map(\.nodeId) == ["b"])
    }

    @Test func theViewListsOnlyLiveNodesAsAlive() {
        let view = ClusterView(nodes: [node("a", heartbeat: 9000), node("b", heartbeat: 6000), node("c", heartbeat: 7001)], nowMs: 10_000)
        #expect(view.alive.map(\.nodeId) == ["a", "c"])
        #expect(view.node("b")?.nodeId == "b")
        #expect(view.node("z") == nil)
    }
}

@Suite struct ClusterPlacementTests {
    @Test func theNodeWithFewestRoomsGetsTheRoom() {
        let view = ClusterView(nodes: [node("n1", rooms: 3), node("n2", rooms: 1), node("n3", rooms: 2)], nowMs: 10_000)
        #expect(ClusterRules.chooseHome(in: view, askingNode: "n1") == "n2")
    }

    @Test func peersThenTasksThenCPUBreakTies() {
        let peers = ClusterView(nodes: [node("n1", rooms: 1, peers: 9), node("n2", rooms: 1, peers: 4)], nowMs: 10_000)
        #expect(ClusterRules.chooseHome(in: peers, askingNode: "n1") == "n2")
        let tasks = ClusterView(nodes: [node("n1", tasks: 2), node("n2", tasks: 1)], nowMs: 10_000)
        #expect(ClusterRules.chooseHome(in: tasks, askingNode: "n1") == "n2")
        let cpu = ClusterView(nodes: [node("n1", cpu: 85), node("n2", cpu: 20)], nowMs: 10_000)
        #expect(ClusterRules.chooseHome(in: cpu, askingNode: "n1") == "n2")
    }

    @Test func aFewPercentOfCPUDoNotMoveARoomAwayFromTheAskingNode() {
        let view = ClusterView(nodes: [node("n1", cpu: 13), node("n2", cpu: 11)], nowMs: 10_000)
        #expect(ClusterRules.chooseHome(in: view, askingNode: "n1") == "n1")
    }

    @Test func onATieTheAskingNodeKeepsTheRoom() {
        let view = ClusterView(nodes: [node("n1"), node("n2"), node("n3")], nowMs: 10_000)
        #expect(ClusterRules.chooseHome(in: view, askingNode: "n2") == "n2")
        #expect(ClusterRules.chooseHome(in: view, askingNode: "n3") == "n3")
        // A node not in the view (not yet registered): the lowest id.
        #expect(ClusterRules.chooseHome(in: view, askingNode: "zz") == "n1")
    }

    @Test func deadNodesGetNoRoomsHoweverIdle() {
        let view = ClusterView(nodes: [node("n1", rooms: 5), node("n2", heartbeat: 1000)], nowMs: 10_000)
        #expect(ClusterRules.chooseHome(in: view, askingNode: "n2") == "n1")
        #expect(ClusterRules.chooseHome(in: ClusterView(nodes: [node("n2", heartbeat: 1000)], nowMs: 10_000), askingNode: "n2") == nil)
        #expect(ClusterRules.chooseHome(in: ClusterView(nodes: [], nowMs: 0), askingNode: "n1") == nil)
    }

    @Test func absurdCPUFiguresDoNotBreakTheChoice() {
        let view = ClusterView(nodes: [node("n1", cpu: .nan), node("n2", cpu: .infinity), node("n3", cpu: -5)], nowMs: 10_000)
        #expect(ClusterRules.chooseHome(in: view, askingNode: "n2") == "n2")
    }
}

@Suite struct ClusterClaimTests {
    @Test func aLiveHomeIsKeptWhoeverAsks() {
        #expect(ClusterRules.claim(current: "n1", currentIsAlive: true, candidate: "n2") == .kept(home: "n1"))
    }

    @Test func aNewRoomOrADeadHomeGoesToTheCandidate() {
        #expect(ClusterRules.claim(current: nil, currentIsAlive: false, candidate: "n2") == .claimed(home: "n2"))
        #expect(ClusterRules.claim(current: "n1", currentIsAlive: false, candidate: "n3") == .claimed(home: "n3"))
    }

    /// Two nodes race for one room: the database applies one claim, then the other against
    /// what the first wrote. Whatever the order, both end with the same home.
    @Test func twoRacingClaimsAgree() {
        for first in ["n1", "n2"] {
            let second = first == "n1" ? "n2" : "n1"
            for startingHome in [nil, "dead"] as [String?] {
                let one = ClusterRules.claim(current: startingHome, currentIsAlive: false, candidate: first)
                let two = ClusterRules.claim(current: one.home, currentIsAlive: true, candidate: second)
                #expect(one.home == first)
                #expect(two == .kept(home: first))
            }
        }
    }
}

@Suite struct NodeIdTests {
    @Test func nodeIdsAreShortAndPlain() {
        #expect(ClusterRules.isValidNodeId("node-1"))
        #expect(ClusterRules.isValidNodeId("eu.west_2"))
        #expect(!ClusterRules.isValidNodeId(""))
        #expect(!ClusterRules.isValidNodeId(String(repeating: "a", count: 65)))
        #expect(!ClusterRules.isValidNodeId("a b"))
        #expect(!ClusterRules.isValidNodeId("a/b"))
        #expect(!ClusterRules.isValidNodeId("nöde"))
    }

    @Test func randomNodeIdsAreValidAndDiffer() {
        let a = ClusterRules.randomNodeId()
        let b = ClusterRules.randomNodeId()
        #expect(ClusterRules.isValidNodeId(a))
        #expect(a.count == 17)
        #expect(a != b)
    }
}

@Suite struct ClusterDatabaseURLTests {
    @Test func aFullURL() throws {
        let url = try ClusterDatabaseURL("postgres://live%40room:p%2Fss@db.example:6543/liveroom?sslmode=require")
        #expect(url.host == "db.example")
        #expect(url.port == 6543)
        #expect(url.username == "live@room")
        #expect(url.password == "p/ss")
        #expect(url.database == "liveroom")
        #expect(url.tls == .require)
        #expect(!url.redacted.contains("p/ss"))
        #expect(!url.redacted.contains("p%2Fss"))
    }

    @Test func defaultsAndIPv6() throws {
        let url = try ClusterDatabaseURL("postgresql://u@[::1]/d")
        #expect(url.host == "::1")
        #expect(url.port == 5432)
        #expect(url.password == nil)
        #expect(url.tls == .prefer)
        #expect(try ClusterDatabaseURL("postgres://u:@127.0.0.1:5/d?sslmode=disable").tls == .disable)
    }

    @Test(arguments: [
        "", "mysql://u@h/d", "postgres://h/d", "postgres://u@h", "postgres://u@h/", "postgres://@h/d", "postgres://u@:5/d",
        "postgres://u@h:0/d", "postgres://u@h:70000/d", "postgres://u@h:x/d", "postgres://u@h/d?sslmode=verify-full",
        "postgres://u@h/d?host=/tmp", "postgres://u:%zz@h/d", "postgres://u@[::1/d", "postgres://u%00@h/d", "postgres://u@h/a/b",
    ])
    func badURLsAreRefused(_ text: String) {
        #expect(throws: ClusterDatabaseURL.Problem.self) { try ClusterDatabaseURL(text) }
    }

    @Test func aHugeURLIsRefused() {
        #expect(throws: ClusterDatabaseURL.Problem.self) { try ClusterDatabaseURL("postgres://u@h/" + String(repeating: "d", count: 5000)) }
    }
}
