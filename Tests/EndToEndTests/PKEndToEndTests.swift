import Foundation
import LiveRoomProtocol
import TestTools
import Testing

/// Cross-room PK with real processes: anchors of different rooms link, both audiences see and
/// hear both, forward modes, disconnects, limits, three rooms, the handshake and a sales battle.
@Suite(.serialized, .timeLimit(.minutes(4)))
struct PKEndToEndTests {
    static let small = ["--resolution", "320x240", "--fps", "15", "--bitrate", "400"]

    static func anchor(_ user: String, room: String, color: String, _ server: TestServer, in scope: ProcessScope) async throws -> ChildProcess {
        let client = try server.join(user, room: room, role: "anchor", in: scope, extra: ["--publish", "color:\(color)"] + small)
        try await client.waitForEvent("onPublishAnswer", timeout: .seconds(15))
        return client
    }

    @Test(.requires(.ffprobe)) func twoRoomsSeeAndHearEachOthersAnchorsUntilEitherSideDisconnects() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope)
        let hostA = try await Self.anchor("hostA", room: "roomA", color: "FF0000", server, in: scope)
        let hostB = try await Self.anchor("hostB", room: "roomB", color: "0000FF", server, in: scope)
        let recordings = scope.dataDirectory.appendingPathComponent("rec-pk")
        let fanA = try server.join("fanA", room: "roomA", in: scope)
        let fanB = try server.join("fanB", room: "roomB", in: scope, extra: ["--record", recordings.path])
        try await fanB.waitForEvent("onFirstVideoFrame", timeout: .seconds(15)) { $0["userId"] == "hostB" }

        // The wrong callers and targets get TRTC's codes.
        fanA.send("connect-room roomB hostB")
        #expect(try await fanA.waitForEvent("onConnectOtherRoom")["errCode"]?.intValue == ErrorCode.pkCallerIsAudience)
        for (command, code) in [
            ("connect-room roomA hostB", ErrorCode.pkInvalidParameter), ("connect-room nowhere hostB", ErrorCode.pkRoomNotFound),
            ("connect-room roomB fanB", ErrorCode.pkUserNotFound),
            // hostB has not agreed: a stranger's link is refused, and room B sees nothing of it.
            ("connect-room roomB hostB", ErrorCode.pkConsentRequired),
        ] {
            let before = hostA.events(named: "onConnectOtherRoom").count
            hostA.send(command)
            let answer = try await hostA.waitForEvent("onConnectOtherRoom", count: before + 1)
            #expect(answer["errCode"]?.intValue == code, "\(command): \(answer.jsonText)")
        }

        #expect(!fanB.events(named: "onRemoteUserEnterRoom").contains { $0["userId"] == "hostA" })
        // hostB (the owner of room B's shop) allows room A: the link is made.
        try await hostB.allowPK("roomA")
        hostA.send("connect-room roomB hostB")
        let linked = try await hostA.waitForEvent("onConnectOtherRoom", count: 5)
        #expect(linked["errCode"] == 0 && linked["userId"] == "hostB", "\(linked.jsonText)")
        // Both audiences see the other room's anchor and receive its media.
        try await fanA.waitForEvent("onRemoteUserEnterRoom") { $0["userId"] == "hostB" }
        try await fanA.waitForEvent("onFirstVideoFrame", timeout: .seconds(15)) { $0["userId"] == "hostB" }
        try await fanB.waitForEvent("onUserAudioAvailable") { $0["userId"] == "hostA" && $0["available"] == true }
        try await fanB.waitForEvent("onFirstVideoFrame", timeout: .seconds(15)) { $0["userId"] == "hostA" }
        try await hostB.waitForEvent("onRemoteUserEnterRoom") { $0["userId"] == "hostA" }
        // A newcomer to room B sees the PK anchor too.
        let late = try await server.entered("late", room: "roomB", in: scope)
        try await late.waitForEvent("onRemoteUserEnterRoom") { $0["userId"] == "hostA" }

        // The PK anchor's SEI rides its video into the other room.
        hostA.send("sei pk-sei 3")
        try await fanB.waitForEvent("onRecvSEIMsg", timeout: .seconds(10)) { $0["userId"] == "hostA" && $0["message"] == "pk-sei" }

        // Custom messages stay in their room.
        hostA.send("custom 1 only-room-a")
        try await fanA.waitForEvent("onRecvCustomCmdMsg") { $0["data"] == "only-room-a" }
        try await Task.sleep(for: .milliseconds(500))
        #expect(fanB.events(named: "onRecvCustomCmdMsg").isEmpty)

        // DescribeRoom lists the link.
        let (described, _) = try await server.admin("DescribeRoom", ["SdkAppId": .number(Double(TestServer.sdkAppId)), "RoomId": "roomB"], in: scope)
        let links = described["Response"]?["PKLinks"]?.arrayValue ?? []
        #expect(links.count == 1 && links.first?["UserId"] == "hostB" && links.first?["RemoteRoomId"] == "roomA", "\(described.jsonText)")

        // Room B stops taking room A's video (a penalty), then takes it again.
        hostB.send("pk-forward roomA audio")
        #expect(try await hostB.waitForEvent("onUpdateOtherRoomForwardMode")["errCode"] == 0)
        try await fanB.waitForEvent("onUserVideoAvailable") { $0["userId"] == "hostA" && $0["available"] == false }
        // A whole statistics interval after the pause.
        try await fanB.waitForEvent("onStatistics", count: fanB.events(named: "onStatistics").count + 2, timeout: .seconds(10))
        let paused = fanB.events(named: "onStatistics").last?["remoteStatistics"]?.arrayValue?.first { $0["userId"] == "hostA" }
        #expect(paused?["frameRate"] == 0 || paused == nil, "no video while paused: \(paused?.jsonText ?? "")")
        let statisticsBefore = fanB.events(named: "onStatistics").count
        hostB.send("pk-forward roomA both")
        try await fanB.waitForEvent("onUserVideoAvailable", count: 2) { $0["userId"] == "hostA" }
        try await fanB.waitForEvent("onStatistics", count: statisticsBefore + 3, timeout: .seconds(10))
        let resumed = fanB.events(named: "onStatistics").last?["remoteStatistics"]?.arrayValue?.first { $0["userId"] == "hostA" }
        #expect((resumed?["frameRate"]?.intValue ?? 0) > 5, "video back: \(resumed?.jsonText ?? "none")")

        // Either side ends it: both audiences lose the other anchor.
        hostB.send("disconnect-room")
        #expect(try await hostB.waitForEvent("onDisconnectOtherRoom")["errCode"] == 0)
        try await fanA.waitForEvent("onRemoteUserLeaveRoom") { $0["userId"] == "hostB" }
        try await fanB.waitForEvent("onRemoteUserLeaveRoom") { $0["userId"] == "hostA" }
        hostA.send("disconnect-room")
        #expect(try await hostA.waitForEvent("onDisconnectOtherRoom")["errCode"]?.intValue == ErrorCode.pkNotConnected)

        // Room B's audience recorded room A's anchor, picture and voice.
        fanB.send("leave")
        #expect(try await fanB.waitForExit(timeout: .seconds(10)) == 0)
        let streams = try probe(recordings.appendingPathComponent("hostA.mkv").path)
        #expect((streams.first { $0.width != nil }?.frames ?? 0) > 15, "\(streams)")
        #expect((streams.first { $0.codec == "opus" }?.frames ?? 0) > 50, "\(streams)")
    }

    @Test func threeRoomsAllSeeEachOtherAndLeavingEndsTheLinks() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope)
        let hosts = try await [("hostA", "roomA"), ("hostB", "roomB"), ("hostC", "roomC")].asyncMap { try await server.entered($0.0, room: $0.1, role: "anchor", in: scope) }
        let fans = try await [("fanA", "roomA"), ("fanB", "roomB"), ("fanC", "roomC")].asyncMap { try await server.entered($0.0, room: $0.1, in: scope) }
        try await hosts[1].allowPK("roomA")
        try await hosts[2].allowPK("roomA", "roomB")
        hosts[0].send("connect-room roomB hostB")
        hosts[0].send("connect-room roomC hostC")
        hosts[1].send("connect-room roomC hostC")
        for (host, count) in [(hosts[0], 2), (hosts[1], 1)] {
            let answers = try await host.waitForEvent("onConnectOtherRoom", count: count)
            #expect(answers["errCode"] == 0, "\(answers.jsonText)")
        }
        for (index, fan) in fans.enumerated() {
            let others = Set(["hostA", "hostB", "hostC"]).subtracting(["host\(["A", "B", "C"][index])"])
            for other in others { try await fan.waitForEvent("onRemoteUserEnterRoom") { $0["userId"]?.stringValue == other } }
        }
        // hostC leaving ends its links: rooms A and B stop seeing it.
        hosts[2].send("leave")
        try await fans[0].waitForEvent("onRemoteUserLeaveRoom") { $0["userId"] == "hostC" }
        try await fans[1].waitForEvent("onRemoteUserLeaveRoom") { $0["userId"] == "hostC" }
        #expect(!fans[0].events(named: "onRemoteUserLeaveRoom").contains { $0["userId"] == "hostB" }, "A and B stay linked")
    }

    @Test func limitsAndTheHandshake() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope, extra: ["--max-pk-rooms", "1", "--max-pk-anchors", "1", "--pk-request-timeout", "2"])
        let hostA = try await server.entered("hostA", room: "roomA", role: "anchor", in: scope)
        let coA = try await server.entered("coA", room: "roomA", role: "anchor", in: scope)
        let hostB = try await server.entered("hostB", room: "roomB", role: "anchor", in: scope)
        let hostC = try await server.entered("hostC", room: "roomC", role: "anchor", in: scope)

        // The handshake: rejected, timed out, then accepted.
        hostA.send("pk-request roomB hostB")
        let asked = try await hostB.waitForEvent("onPKRequest")
        #expect(asked["userId"] == "hostA" && asked["strRoomId"] == "roomA" && asked["timeoutSec"] == 2, "\(asked.jsonText)")
        hostB.send("pk-reject roomA hostA")
        #expect(try await hostA.waitForEvent("onConnectOtherRoom")["errCode"]?.intValue == ErrorCode.pkRejected)
        hostA.send("pk-request roomB hostB")
        try await hostB.waitForEvent("onPKRequest", count: 2)
        #expect(try await hostA.waitForEvent("onConnectOtherRoom", count: 2, timeout: .seconds(6))["errCode"]?.intValue == ErrorCode.pkRequestTimeout)
        hostA.send("pk-request roomB hostB")
        try await hostB.waitForEvent("onPKRequest", count: 3)
        hostB.send("pk-accept roomA hostA")
        #expect(try await hostA.waitForEvent("onConnectOtherRoom", count: 3)["errCode"] == 0)
        #expect(try await hostB.waitForEvent("onConnectOtherRoom")["errCode"] == 0)

        // One room and one anchor each: room A can link no further, and neither can room B.
        hostA.send("connect-room roomC hostC")
        #expect(try await hostA.waitForEvent("onConnectOtherRoom", count: 4)["errCode"]?.intValue == ErrorCode.tooManyPKRooms)
        coA.send("connect-room roomB hostB")
        #expect(try await coA.waitForEvent("onConnectOtherRoom")["errCode"]?.intValue == ErrorCode.tooManyPKRooms)
        hostC.send("connect-room roomB hostB")
        #expect(try await hostC.waitForEvent("onConnectOtherRoom")["errCode"]?.intValue == ErrorCode.pkPeerRoomFull)
        // Switching to audience ends the anchor's links.
        hostA.send("switch-role audience")
        try await hostB.waitForEvent("onRemoteUserLeaveRoom") { $0["userId"] == "hostA" }
    }

    @Test func aBattleScoresBothRoomsFromRealOrdersAndItsResultSurvivesARestart() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        var server = try await TestServer.start(in: scope)
        let hostA = try await server.entered("hostA", room: "roomA", role: "anchor", in: scope)
        let hostB = try await server.entered("hostB", room: "roomB", role: "anchor", in: scope)
        let fanA = try await server.entered("fanA", room: "roomA", in: scope)
        let fanB = try await server.entered("fanB", room: "roomB", in: scope)
        hostA.send(#"product add {"itemNumber":1,"title":"Tea","price":"10.00","stock":50}"#)
        hostB.send(#"product add {"itemNumber":1,"title":"Pot","price":"50.00","stock":50}"#)
        #expect(try await hostA.waitForEvent("onProductResult")["code"] == 0)
        #expect(try await hostB.waitForEvent("onProductResult")["code"] == 0)
        // Bought before the battle: does not count.
        fanA.send("buy 1 5")
        try await fanA.waitForEvent("onBuyResult")
        hostA.send("pk-battle 5")
        let unlinked = try await hostA.waitForEvent("onError")
        #expect(unlinked["errCode"]?.intValue == ErrorCode.pkNotConnected, "\(unlinked.jsonText) \(hostA.output.suffix(5))")
        try await hostB.allowPK("roomA")
        hostA.send("connect-room roomB hostB")
        #expect(try await hostA.waitForEvent("onConnectOtherRoom")["errCode"] == 0)
        hostA.send("pk-battle 5")
        hostA.send("pk-battle 1")
        let started = try await fanB.waitForEvent("onPKBattleStarted")
        let battleId = try #require(started["battle"]?["battleId"]?.stringValue)
        #expect(try await hostA.waitForEvent("onError", count: 2)["errCode"]?.intValue == ErrorCode.invalidPKBattle)
        fanA.send("buy 1 2")
        fanB.send("buy 1 1")
        #expect(try await fanA.waitForEvent("onBuyResult", count: 2)["code"] == 0)
        #expect(try await fanB.waitForEvent("onBuyResult")["code"] == 0)
        try await fanA.waitForEvent("onPKBattleScore", timeout: .seconds(6)) { ($0["scores"]?.arrayValue ?? []).contains { $0["units"] == 2 } }
        // Room A sold more units, room B the larger amount: the amount wins.
        for fan in [fanA, fanB] {
            let ended = try await fan.waitForEvent("onPKBattleEnded", timeout: .seconds(10))
            #expect(ended["battle"]?["winnerRoomId"] == "roomB", "\(ended.jsonText)")
            let scores = ended["battle"]?["results"]?.arrayValue ?? []
            #expect(scores.first { $0["roomId"] == "roomA" }?["units"] == 2 && scores.first { $0["roomId"] == "roomB" }?["units"] == 1, "\(ended.jsonText)")
        }

        // A second battle is cut by kill -9: at the restart it is finished from the orders.
        hostA.send("pk-battle 60")
        try await fanA.waitForEvent("onPKBattleStarted", count: 2)
        fanA.send("buy 1 3")
        #expect(try await fanA.waitForEvent("onBuyResult", count: 3)["code"] == 0)
        server.process.crash()
        for client in [hostA, hostB, fanA, fanB] { client.stop() }
        server = try await TestServer.start(in: scope)
        let (answer, _) = try await server.admin("DescribePKBattles", ["SdkAppId": .number(Double(TestServer.sdkAppId)), "RoomId": "roomA"], in: scope)
        let battles = answer["Response"]?["Battles"]?.arrayValue ?? []
        #expect(battles.count == 2, "\(answer.jsonText)")
        let cut = battles.first
        #expect(cut?["endTime"] != .null && cut?["results"]?.arrayValue?.first { $0["roomId"] == "roomA" }?["units"] == 3, "\(answer.jsonText)")
        #expect(cut?["winnerRoomId"] == "roomA", "3 x 10.00 against nothing: \(answer.jsonText)")
        let first = battles.last
        #expect(first?["battleId"]?.stringValue == battleId && first?["winnerRoomId"] == "roomB", "\(answer.jsonText)")
    }
}

extension Array {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }
}

extension ChildProcess {
    /// `pk-allow rooms…` by this anchor (its room's shop owner), once its room confirms the list.
    func allowPK(_ rooms: String...) async throws {
        let before = events(named: "onPKAllowList").count
        send("pk-allow " + rooms.joined(separator: " "))
        let list = try await waitForEvent("onPKAllowList", count: before + 1)
        #expect(list["rooms"]?.arrayValue?.compactMap { $0["strRoomId"]?.stringValue } == rooms, "\(list.jsonText)")
    }
}
