import Foundation
import LiveRoomProtocol
import Testing

/// Purchases with real processes: 1,000 buyers on their own WebSockets (shop-bench) in a
/// room where an anchor publishes and talks to a viewer, a flash sale that must sell exactly
/// the stock, and a `kill -9` in the middle of a second sale that must lose no order a buyer
/// was told about.
@Suite(.serialized, .timeLimit(.minutes(5))) struct FlashSaleEndToEndTests {
    static let buyers = 1000
    static let requests = 10_000

    /// Runs shop-bench against `server` and returns its sale's JSON line.
    static func sale(
        _ server: TestServer, item: Int, stock: Int, spreadMs: Int = 0, in scope: ProcessScope, during: (ChildProcess) async throws -> Void = { _ in }
    ) async throws -> JSONValue {
        let bench = try scope.start(
            "shop-bench",
            ["--server", server.url, "--sdk-app-id", String(TestServer.sdkAppId), "--secret-key", TestServer.secretKey, "--room", "room1",
             "--item", String(item), "--stock", String(stock), "--clients", String(buyers), "--requests", String(requests), "--rounds", "1",
             "--spread-ms", String(spreadMs), "--timeout", "90", "--no-baseline", "--json"],
            name: "shop-bench")
        try await during(bench)
        let status = try await bench.waitForExit(timeout: .seconds(150))
        #expect(status == 0, "shop-bench: \(bench.standardError)")
        let line = try #require(bench.output.last { $0.contains("\"round\":1") }, "no sale result; stderr: \(bench.standardError)")
        return try JSONValue.parse(line)
    }

    /// Waits until shop-bench has sent its burst.
    static func burstStarted(_ bench: ChildProcess) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while !bench.standardError.contains("buy requests go"), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(bench.standardError.contains("buy requests go"), "\(bench.standardError)")
    }

    /// Every order of room1, a page of 1,000 at a time.
    static func orders(_ server: TestServer, in scope: ProcessScope) async throws -> [JSONValue] {
        var orders: [JSONValue] = []
        for page in 0..<20 {
            let body: JSONValue = ["SdkAppId": .number(Double(TestServer.sdkAppId)), "RoomId": "room1", "Offset": .number(Double(page * 1000)), "Limit": 1000]
            let (answer, status) = try await server.admin("DescribeOrders", body, in: scope)
            #expect(status == 0, "\(answer.jsonText)")
            orders += answer["Response"]?["Orders"]?.arrayValue ?? []
            if orders.count >= answer["Response"]?["Total"]?.intValue ?? 0 { break }
        }
        return orders
    }

    static func stock(_ server: TestServer, item: Int, in scope: ProcessScope) async throws -> Int? {
        let (answer, _) = try await server.admin("DescribeProducts", ["SdkAppId": .number(Double(TestServer.sdkAppId)), "RoomId": "room1"], in: scope)
        return answer["Response"]?["Products"]?.arrayValue?.first { $0["itemNumber"]?.intValue == item }?["stock"]?.intValue
    }

    @Test func aFlashSaleSellsExactlyTheStockAndKillNineLosesNoAcknowledgedOrder() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        // The server pings every connection at its default interval and closes one whose pong
        // it has not read a ping later: the 1,000-buyer burst must not starve anyone that long.
        let limits = ["--max-connections-per-address", "1100"]
        var server = try await TestServer.start(in: scope, extra: limits)
        let host = try await server.enteredWithMedia("host", role: "anchor", media: ["--publish", "testsrc"] + MediaEndToEndTests.small, in: scope)
        let fan = try await server.enteredWithMedia("fan", media: [], in: scope)
        try await fan.waitForEvent("onFirstVideoFrame", timeout: .seconds(15)) { $0["userId"] == "host" }

        // Sale 1: 100 in stock, 10,000 requests from 1,000 buyers at once. The anchor keeps
        // talking to the room and publishing throughout.
        let statisticsBefore = fan.events(named: "onStatistics").count
        var said = 0
        let first = try await Self.sale(server, item: 1, stock: 100, in: scope) { bench in
            try await Self.burstStarted(bench)
            while bench.isRunning, said < 300 {
                said += 1
                host.send("custom 1 during-sale-\(said)")
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        // What the server said of connections it closed, for a failure's message.
        let closings = { server.process.standardError.split(separator: "\n").filter { $0.contains("closed") || $0.contains("Ping") }.suffix(20).joined(separator: "\n") }
        #expect(
            first["sold"] == 100 && first["answered"]?.intValue == Self.requests,
            "\(first["codes"]?.jsonText ?? ""); unanswered: \(first["unanswered"]?.jsonText ?? "none"); \(first["requestsPerSecond"]?.jsonText ?? "") answers/s; the server's closings: \(closings())")
        #expect(first["codes"]?["0"] == 100 && first["codes"]?["-7310"]?.intValue == Self.requests - 100, "every other request is sold out: \(first["codes"]?.jsonText ?? "")")
        let sold = try #require(first["orders"]?.arrayValue)
        #expect(Set(sold.compactMap { $0["orderId"]?.stringValue }).count == 100)
        #expect(try await Self.stock(server, item: 1, in: scope) == 0, "never below zero")
        let stored = try await Self.orders(server, in: scope).filter { $0["itemNumber"] == 1 }
        #expect(stored.count == 100 && stored.allSatisfy { $0["state"] == "reserved" && $0["quantity"] == 1 })
        // The server timed every answer it gave (liveroom_purchase_answer_seconds).
        let metrics = try await ClusterMediaEndToEndTests.metrics(server)
        #expect(
            metrics["liveroom_purchase_answer_seconds_count"] == Double(Self.requests) && (metrics["liveroom_purchase_answer_seconds_sum"] ?? 0) > 0,
            "\(metrics.filter { $0.key.hasPrefix("liveroom_purchase") })")

        // The room went on: every message the anchor sent reached the viewer, none was refused
        // over the 30-a-second limit (-7008), and video kept coming.
        let refused = { host.events(named: "onError").filter { $0["errCode"]?.intValue == ErrorCode.customMessageRateLimited }.count }
        let duringSale = { fan.events(named: "onRecvCustomCmdMsg").filter { $0["data"]?.stringValue?.hasPrefix("during-sale-") == true } }
        let deadline = ContinuousClock.now + .seconds(10)
        while duringSale().count < said, refused() == 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(100)) }
        let messages = duringSale()
        let missing = Set(1...max(1, said)).subtracting(messages.compactMap { $0["data"]?.stringValue.flatMap { Int($0.dropFirst("during-sale-".count)) } })
        #expect(
            messages.count == said && said > 5 && refused() == 0,
            """
            \(messages.count) of \(said) messages (\(refused()) refused); missing \(missing.sorted()); the fan's other events: \
            \(fan.events.filter { $0["event"] != "onRecvCustomCmdMsg" && $0["event"] != "onStatistics" }.map(\.jsonText).prefix(40)); \
            the host's errors: \(host.events(named: "onError").map(\.jsonText).prefix(20)); \
            the server's log: \(server.process.standardError.suffix(4000))
            """)
        let during = fan.events(named: "onStatistics").dropFirst(statisticsBefore)
        let frameRates = during.compactMap { $0["remoteStatistics"]?.arrayValue?.first { $0["userId"] == "host" }?["frameRate"]?.intValue }
        #expect(!frameRates.isEmpty && frameRates.allSatisfy { $0 > 0 }, "video frame rates during the sale: \(frameRates)")
        // Media has a thread of its own: the burst of requests does not delay packets (it held
        // them for seconds when media shared the signaling loops).
        let roundTrips = during.compactMap { $0["rtt"]?.intValue }
        #expect(roundTrips.allSatisfy { $0 < 1000 }, "round-trip times (ms) during the sale: \(roundTrips)")

        // The anchor heard of the sales, summed into a few events.
        let sales = host.events(named: "onProductSold").flatMap { $0["sales"]?.arrayValue ?? [] }.filter { $0["itemNumber"] == 1 }
        #expect(
            sales.reduce(0) { $0 + ($1["quantity"]?.intValue ?? 0) } == 100 && sales.count <= 20,
            """
            \(sales.count) onProductSold, units each: \(sales.compactMap { $0["quantity"]?.intValue }); \
            the sale took \(first["seconds"]?.jsonText ?? "?") s at p50 \(first["p50Ms"]?.jsonText ?? "?") ms
            """)

        // Sale 2: more stock, requests spread over 4 s, and kill -9 in the middle.
        let second = try await Self.sale(server, item: 2, stock: 3000, spreadMs: 4000, in: scope) { bench in
            try await Self.burstStarted(bench)
            try await Task.sleep(for: .milliseconds(1500))
            server.process.crash()
        }
        let acknowledged = try #require(second["orders"]?.arrayValue).compactMap { $0["orderId"]?.stringValue }
        #expect(!acknowledged.isEmpty && acknowledged.count < 3000, "the kill came in the middle: \(acknowledged.count) sold")
        host.stop()
        fan.stop()
        server = try await TestServer.start(in: scope, extra: limits)
        let kept = try await Self.orders(server, in: scope).filter { $0["itemNumber"] == 2 }
        let keptIds = Set(kept.compactMap { $0["orderId"]?.stringValue })
        #expect(Set(acknowledged).isSubset(of: keptIds), "acknowledged orders lost by kill -9: \(Set(acknowledged).subtracting(keptIds).count)")
        // The stock and the orders agree: every unit gone is in a stored order.
        let left = try #require(try await Self.stock(server, item: 2, in: scope))
        #expect(left >= 0 && 3000 - left == kept.count, "\(3000 - left) units gone, \(kept.count) orders stored, \(acknowledged.count) acknowledged")
    }
}
