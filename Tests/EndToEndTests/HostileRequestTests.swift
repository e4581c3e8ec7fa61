import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LiveRoomAuth
import LiveRoomProtocol
import Testing

/// Hostile admin calls and task requests against a real server: each gets its documented
/// answer, the server's memory stays bounded, and a normal room keeps working.
@Suite(.serialized, .timeLimit(.minutes(2))) struct HostileRequestTests {
    static let rssBoundMiB = 200

    @Test func adminOverflowsAndGarbageGetErrorsWithRSSUnder200MiB() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope)
        let now = Int64(Date().timeIntervalSince1970)
        let adminSig = UserSig.make(sdkAppId: TestServer.sdkAppId, secretKey: TestServer.secretKey, identifier: "administrator", time: now, expire: 600).encoded()
        func post(_ action: String, _ body: String) async throws -> JSONValue {
            var request = URLRequest(url: URL(string: "\(server.url)/v1/\(action)?sdkappid=\(TestServer.sdkAppId)&identifier=administrator&usersig=\(adminSig)")!)
            request.httpMethod = "POST"
            request.httpBody = Data(body.utf8)
            let (data, _) = try await URLSession.shared.data(for: request)
            return try JSONValue.parse(String(decoding: data, as: UTF8.self))
        }
        let app = TestServer.sdkAppId
        let hostile: [(String, String, String)] = [
            ("DescribeRoomInfo", #"{"SdkAppId":\#(app),"EndTime":9223372036854775807}"#, "InvalidParameter.EndTime"),
            ("DescribeRoomInfo", #"{"SdkAppId":\#(app),"StartTime":-9223372036854775808}"#, "InvalidParameter.StartTime"),
            ("DescribeRoomInfo", #"{"SdkAppId":\#(app),"PageNumber":9223372036854775807,"PageSize":100}"#, "InvalidParameter.PageNumber"),
            ("DescribeRoomInfo", #"{"SdkAppId":\#(app),"PageSize":1e308}"#, "InvalidParameter.PageSize"),
            ("RemoveUserByStrRoomId", #"{"SdkAppId":\#(app),"RoomId":"r","UserIds":[\#(Array(repeating: "\"u\"", count: 5000).joined(separator: ","))]}"#, "InvalidParameter.UserIds"),
            ("StartPublishCdnStream", String(repeating: "[", count: 100_000), "InvalidParameter.JsonParseError"),
            ("DescribeRoom", #"{"SdkAppId":\#(app),"RoomId":"\#(String(repeating: "x", count: 500_000))"}"#, "FailedOperation.RoomNotExist"),
        ]
        for round in 0..<20 {
            for (action, body, code) in hostile {
                let answer = try await post(action, body)
                #expect(answer["Response"]?["Error"]?["Code"]?.stringValue == code, "round \(round) \(action): \(answer.jsonText.prefix(300))")
                #expect((answer["Response"]?["Error"]?["Message"]?.stringValue?.utf8.count ?? 0) < 400, "\(action) echoes its input")
            }
        }
        #expect(server.process.isRunning)
        #expect(server.residentMiB < Self.rssBoundMiB, "\(server.residentMiB) MiB")
        try await server.checkServesANormalRoom(in: scope)
        await server.checkAlive("at the end")
        try await server.checkStopsCleanly()
    }

    @Test func aRobotForAnotherRoomIsRefusedAndThatRoomIsNotCreated() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope)
        let host = try await server.enteredWithMedia(
            "host", role: "anchor", media: ["--publish", "color:FF0000"] + PublishTaskEndToEndTests.small, in: scope)
        try await host.waitForEvent("onPublishAnswer")
        for (index, identity) in [#"{"userId":"mix","strRoomId":"victim"}"#, #"{"userId":"administrator","strRoomId":"room1"}"#].enumerated() {
            host.send(
                "start-publish " + #"{"target":{"mode":"mixStreamToRoom","mixStreamIdentity":\#(identity)},"#
                    + #""encoderParam":{"videoEncodedWidth":320,"videoEncodedHeight":240,"videoEncodedFPS":15,"videoEncodedGOP":1,"videoEncodedKbps":300},"#
                    + #""mixingConfig":{"videoLayoutList":[{"fixedVideoUser":{"userId":"host","strRoomId":"room1"},"#
                    + #""rect":{"left":0,"top":0,"right":320,"bottom":240},"zOrder":0}]}}"#)
            let refused = try await host.waitForEvent("onStartPublishMediaStream", count: index + 1)
            #expect(refused["code"] == .number(Double(ErrorCode.invalidPublishTarget)), "\(refused.jsonText)")
        }
        let (answer, _) = try await server.admin("DescribeRoom", ["SdkAppId": .number(Double(TestServer.sdkAppId)), "RoomId": "victim"], in: scope)
        #expect(answer["Response"]?["Error"]?["Code"] == "FailedOperation.RoomNotExist", "\(answer.jsonText)")
        try await server.checkServesANormalRoom(in: scope)
        await server.checkAlive("at the end")
        try await server.checkStopsCleanly()
    }

    @Test func fiveHundredMuteTogglesAreRateLimitedAndTheRoomHearsOnlyWhatWasAdmitted() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope)
        let host = try await server.enteredWithMedia(
            "host", role: "anchor", media: ["--publish", "color:FF0000"] + PublishTaskEndToEndTests.small, in: scope)
        let watcher = try await server.entered("watcher", in: scope)
        try await watcher.waitForEvent("onUserVideoAvailable") { $0["userId"] == "host" && $0["available"] == true }
        let started = ContinuousClock.now
        for index in 0..<500 { host.send("mute-video \(index % 2 == 0 ? "on" : "off")") }
        // The last toggle turns video back on; wait until the refusals have arrived.
        let deadline = ContinuousClock.now + .seconds(15)
        while host.events(named: "onError").count < 400, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
        }
        let elapsed = ContinuousClock.now - started
        // Refusals still on their way from the client's output are counted too: until none has
        // come for 300 ms (at most 5 s). Counting at the 400th left some out when the client's
        // events lagged (452 of the 470 due, seen once).
        var arrived = host.events(named: "onError").count
        let settled = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < settled {
            try await Task.sleep(for: .milliseconds(300))
            let now = host.events(named: "onError").count
            if now == arrived { break }
            arrived = now
        }
        let refused = host.events(named: "onError").filter { $0["errCode"] == .number(Double(ErrorCode.roomChangeRateLimited)) }
        try await Task.sleep(for: .milliseconds(500))
        let heard = watcher.events(named: "onUserVideoAvailable").filter { $0["userId"] == "host" }.count - 1
        // A burst of 20, then 10 a second for as long as the toggles took to arrive.
        let admitted = 20 + Int(10 * Double(elapsed.components.seconds + 1))
        #expect(refused.count >= 500 - admitted, "\(refused.count) refused in \(elapsed)")
        // The burst's first token went to the host's publish, so 19 alternating toggles surely
        // change something; a refilled token may repeat the current state and change nothing.
        #expect(heard <= admitted && heard >= 19, "the watcher heard \(heard) changes")
        #expect(server.residentMiB < Self.rssBoundMiB, "\(server.residentMiB) MiB")
        try await server.checkServesANormalRoom(in: scope)
        await server.checkAlive("at the end")
        try await server.checkStopsCleanly()
    }

    /// Purchases go from the connection to the room's shop without the hub, with the seat's own
    /// budget: a burst of 200 buys gets 20 answers and 10 a second more, the rest -7014, and
    /// the room goes on.
    @Test func twoHundredBuysAtOnceAreBudgetedPerSeat() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope)
        let buyer = try await server.entered("buyer", in: scope)
        let started = ContinuousClock.now
        buyer.send((0..<200).map { "buy 7 1 r\($0)" }.joined(separator: "\n"))
        let deadline = ContinuousClock.now + .seconds(15)
        func answered() -> (results: Int, refused: Int) {
            let refused = buyer.events(named: "onError").filter { $0["errCode"]?.intValue == ErrorCode.roomChangeRateLimited }.count
            return (buyer.events(named: "onBuyResult").count, refused)
        }
        while answered().results + answered().refused < 200, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(100)) }
        let elapsed = ContinuousClock.now - started
        let (results, refused) = answered()
        #expect(results + refused == 200, "every request is answered: \(results) results, \(refused) refused")
        let admitted = 20 + Int(10 * Double(elapsed.components.seconds + 1))
        #expect(results >= 20 && results <= admitted, "\(results) admitted in \(elapsed)")
        // Nothing is in the catalogue: each admitted purchase is answered with its code.
        #expect(buyer.events(named: "onBuyResult").allSatisfy { $0["code"]?.intValue == ErrorCode.productNotFound })
        try await server.checkServesANormalRoom(in: scope)
    }

    @Test func tasksOverTheUserCapOrTheEncodingBudgetAreRefusedWithTheirCodes() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope, extra: ["--max-tasks-per-user", "2", "--encoding-budget", "3000000"])
        let host = try await server.enteredWithMedia(
            "host", role: "anchor", media: ["--publish", "color:FF0000"] + PublishTaskEndToEndTests.small, in: scope)
        try await host.waitForEvent("onPublishAnswer")
        func start(_ robot: String, width: Int, height: Int) {
            host.send(
                "start-publish " + #"{"target":{"mode":"mixStreamToRoom","mixStreamIdentity":{"userId":"\#(robot)"}},"#
                    + #""encoderParam":{"videoEncodedWidth":\#(width),"videoEncodedHeight":\#(height),"videoEncodedFPS":15,"videoEncodedGOP":1,"videoEncodedKbps":300},"#
                    + #""mixingConfig":{"videoLayoutList":[{"fixedVideoUser":{"userId":"host","strRoomId":"room1"},"#
                    + #""rect":{"left":0,"top":0,"right":\#(width),"bottom":\#(height)},"zOrder":0}]}}"#)
        }
        // 640x360 at 15 fps is 3.5 million pixels a second, over the budget of 3 million.
        start("big", width: 640, height: 360)
        let big = try await host.waitForEvent("onStartPublishMediaStream")
        #expect(big["code"] == .number(Double(ErrorCode.encodingBudgetExceeded)), "\(big.jsonText)")
        #expect(big["message"]?.stringValue?.contains("million left") == true, "\(big.jsonText)")
        // Two small ones fit; a third is over the user's cap.
        start("small1", width: 320, height: 240)
        start("small2", width: 320, height: 240)
        start("small3", width: 320, height: 240)
        let third = try await host.waitForEvent("onStartPublishMediaStream", count: 4, timeout: .seconds(15))
        let codes = host.events(named: "onStartPublishMediaStream").compactMap { $0["code"]?.intValue }
        #expect(codes == [ErrorCode.encodingBudgetExceeded, 0, 0, ErrorCode.tooManyTasksForUser], "\(codes) \(third.jsonText)")
        try await server.checkServesANormalRoom(in: scope)
        await server.checkAlive("at the end")
        try await server.checkStopsCleanly()
    }
}
