import Foundation
import Logging
import PostgresTestSupport
import TestTools
import Testing

import LiveRoomCluster
@testable import LiveRoomPostgres

/// The PostgreSQL cluster store against a real PostgreSQL server.
@Suite(.requires(.postgreSQL), .serialized, .timeLimit(.minutes(2))) struct PostgresClusterStoreTests {
    /// Starts PostgreSQL and a store on it, runs `body`, stops both.
    func withStore(_ body: (PostgresClusterStore) async throws -> Void) async throws {
        let database = try PostgresTestServer()
        try database.start()
        defer { database.stop() }
        let store = PostgresClusterStore(url: try ClusterDatabaseURL(database.url), logger: Logger(label: "cluster-test"))
        let pool = Task { await store.run() }
        defer { pool.cancel() }
        try await store.prepare()
        // A second prepare (another node starting) finds the tables there.
        try await store.prepare()
        try await body(store)
    }

    func registration(_ id: String) -> NodeRegistration {
        NodeRegistration(nodeId: id, signalingURL: "http://127.0.0.1:1/\(id)", mediaAddresses: ["127.0.0.1:7882"])
    }

    @Test func nodesRegisterHeartbeatAndDie() async throws {
        try await withStore { store in
            try await store.register(registration("n1"), load: NodeLoad(rooms: 1, peers: 2, tasks: 3, cpuPercent: 4.5))
            try await store.register(registration("n2"), load: NodeLoad())
            var view = try await store.view()
            #expect(view.nodes.map(\.nodeId) == ["n1", "n2"])
            #expect(view.alive.count == 2)
            #expect(view.node("n1")?.load == NodeLoad(rooms: 1, peers: 2, tasks: 3, cpuPercent: 4.5))
            #expect(view.node("n1")?.registration.mediaAddresses == ["127.0.0.1:7882"])
            // n1 heartbeats, n2 stops: n2 is dead after 3 s, n1 is not.
            let deadline = ContinuousClock.now + .seconds(3.5)
            while ContinuousClock.now < deadline {
                try await store.heartbeat(nodeId: "n1", load: NodeLoad(rooms: 7))
                try await Task.sleep(for: .milliseconds(500))
            }
            view = try await store.view()
            #expect(view.alive.map(\.nodeId) == ["n1"])
            #expect(view.node("n1")?.load.rooms == 7)
            #expect(view.nodes.count == 2)
        }
    }

    @Test func racingClaimsAgreeAndADeadHomeIsClaimedAgain() async throws {
        try await withStore { store in
            for id in ["n1", "n2", "n3"] { try await store.register(registration(id), load: NodeLoad()) }
            // Thirty claims at once, each for another candidate: one wins, all see it.
            let homes = try await withThrowingTaskGroup(of: String.self) { group in
                for i in 0..<30 { group.addTask { try await store.claim(roomKey: "R", candidate: "n\(i % 3 + 1)") } }
                return try await group.reduce(into: [String]()) { $0.append($1) }
            }
            #expect(Set(homes).count == 1)
            let winner = try #require(homes.first)
            #expect(try await store.home(of: "R") == winner)
            #expect(try await store.homes() == [RoomHome(roomKey: "R", nodeId: winner)])
            #expect(try await store.view().node(winner)?.homedRooms == 1)
            // Only the home releases it.
            let other = winner == "n1" ? "n2" : "n1"
            try await store.release(roomKey: "R", nodeId: other)
            #expect(try await store.home(of: "R") == winner)
            try await store.release(roomKey: "R", nodeId: winner)
            #expect(try await store.home(of: "R") == nil)

            // A live home keeps its room; once it is dead, the next claim takes it.
            #expect(try await store.claim(roomKey: "S", candidate: "n1") == "n1")
            #expect(try await store.claim(roomKey: "S", candidate: "n2") == "n1")
            let deadline = ContinuousClock.now + .seconds(3.3)
            while ContinuousClock.now < deadline {
                try await store.heartbeat(nodeId: "n2", load: NodeLoad())
                try await Task.sleep(for: .milliseconds(500))
            }
            #expect(try await store.claim(roomKey: "S", candidate: "n2") == "n2")
            // A room claimed for a node that never registered has no live home either.
            #expect(try await store.claim(roomKey: "T", candidate: "ghost") == "ghost")
            #expect(try await store.claim(roomKey: "T", candidate: "n2") == "n2")
        }
    }

    /// PostgreSQL down for 4 s and started again: the pool reconnects, and no node is judged
    /// dead (nor its rooms claimable) before the dead interval has passed since the restart,
    /// though nobody could heartbeat meanwhile.
    @Test func aDatabaseRestartDoesNotMakeEveryNodeDead() async throws {
        let database = try PostgresTestServer()
        try database.start()
        defer { database.stop() }
        let store = PostgresClusterStore(url: try ClusterDatabaseURL(database.url), logger: Logger(label: "cluster-test"))
        let pool = Task { await store.run() }
        defer { pool.cancel() }
        try await store.prepare()
        try await store.register(registration("n1"), load: NodeLoad())
        try await store.register(registration("n2"), load: NodeLoad())
        #expect(try await store.claim(roomKey: "R", candidate: "n1") == "n1")

        database.stop()
        await #expect(throws: (any Error).self) { try await store.prepare(timeout: .seconds(2)) }
        try await Task.sleep(for: .seconds(2))
        try database.start()
        // The pool finds the server again (bounded: 10 s).
        var view: ClusterView?
        let deadline = ContinuousClock.now + .seconds(10)
        while view == nil, ContinuousClock.now < deadline {
            view = try? await store.view()
            if view == nil { try await Task.sleep(for: .milliseconds(200)) }
        }
        let restarted = try #require(view, "the store did not reconnect within 10 s")
        #expect(restarted.nowMs - restarted.databaseStartedMs < ClusterRules.deadAfterMs)
        #expect(restarted.alive.map(\.nodeId) == ["n1", "n2"], "last heartbeats are older than 4 s, but the database just started")
        #expect(try await store.claim(roomKey: "R", candidate: "n2") == "n1")

        // n2 heartbeats again, n1 does not: n1 is dead 3 s after the restart, and R goes to n2.
        let after = ContinuousClock.now + .seconds(3.3)
        while ContinuousClock.now < after {
            try await store.heartbeat(nodeId: "n2", load: NodeLoad())
            try await Task.sleep(for: .milliseconds(500))
        }
        #expect(try await store.view().alive.map(\.nodeId) == ["n2"])
        #expect(try await store.claim(roomKey: "R", candidate: "n2") == "n2")
    }

    @Test func aRestartedNodeForgetsItsRoomsAndALeavingNodeIsRemoved() async throws {
        try await withStore { store in
            try await store.register(registration("n1"), load: NodeLoad())
            _ = try await store.claim(roomKey: "A", candidate: "n1")
            _ = try await store.claim(roomKey: "B", candidate: "n1")
            #expect(try await store.homes().count == 2)
            try await store.register(registration("n1"), load: NodeLoad())
            #expect(try await store.homes().isEmpty)
            _ = try await store.claim(roomKey: "A", candidate: "n1")
            try await store.deregister(nodeId: "n1")
            #expect(try await store.homes().isEmpty)
            #expect(try await store.view().nodes.isEmpty)
        }
    }

    @Test func staleClaimsOfRoomsThatNeverOpenedAreReleased() async throws {
        try await withStore { store in
            try await store.register(registration("n1"), load: NodeLoad())
            try await store.register(registration("n2"), load: NodeLoad())
            _ = try await store.claim(roomKey: "open", candidate: "n1")
            _ = try await store.claim(roomKey: "refused", candidate: "n1")
            _ = try await store.claim(roomKey: "elsewhere", candidate: "n2")
            // Too fresh to be stale.
            try await store.releaseStale(nodeId: "n1", keeping: ["open"], olderThanMs: 60_000)
            #expect(try await store.homes().count == 3)
            try await Task.sleep(for: .milliseconds(300))
            try await store.releaseStale(nodeId: "n1", keeping: ["open"], olderThanMs: 200)
            #expect(try await store.homes() == [RoomHome(roomKey: "elsewhere", nodeId: "n2"), RoomHome(roomKey: "open", nodeId: "n1")])
            // Keeping nothing (an empty array parameter) releases every old claim of the node.
            try await store.releaseStale(nodeId: "n1", keeping: [], olderThanMs: 200)
            #expect(try await store.homes() == [RoomHome(roomKey: "elsewhere", nodeId: "n2")])
        }
    }

    @Test func hostileRoomKeysAreDataNotSQL() async throws {
        try await withStore { store in
            try await store.register(registration("n1"), load: NodeLoad())
            let key = "x'); DROP TABLE liveroom_rooms; --"
            #expect(try await store.claim(roomKey: key, candidate: "n1") == "n1")
            #expect(try await store.home(of: key) == "n1")
        }
    }
}

/// An unreachable database fails `prepare()` instead of hanging.
@Suite(.timeLimit(.minutes(1))) struct UnreachableClusterDatabaseTests {
    @Test func prepareFailsWhenNothingListens() async throws {
        let port = try PostgresTestServer.freeLoopbackPort()
        let store = PostgresClusterStore(
            url: try ClusterDatabaseURL("postgres://u@127.0.0.1:\(port)/d?sslmode=disable"), logger: Logger(label: "cluster-test"))
        let pool = Task { await store.run() }
        defer { pool.cancel() }
        let start = ContinuousClock.now
        await #expect(throws: (any Error).self) { try await store.prepare(timeout: .seconds(3)) }
        #expect(ContinuousClock.now - start < .seconds(10))
    }
}
