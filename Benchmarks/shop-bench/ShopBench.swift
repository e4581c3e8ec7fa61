// shop-bench: a flash sale against liveroom-server. Many audience members on their own
// WebSocket buy one product at once; the bench counts what was sold and refused, and times
// the answers. The baseline is the same SQLite store doing the same purchases in a tight loop
// in this process, without the server.

import ArgumentParser
import BenchSupport
import Foundation
import LiveRoomClientKit
import LiveRoomCommerce
import LiveRoomProtocol
import LiveRoomStore
import Logging
import PostgresTestSupport

@main
struct ShopBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "shop-bench",
        abstract: "Flash-sale purchases through liveroom-server against the store alone.",
        discussion: """
            Without --server it starts --server-binary on loopback, runs --rounds sales and then the baseline. With --server \
            it runs the sales against that server (its --sdk-app-id and --secret-key), which must allow --clients connections \
            from one address (--max-connections-per-address).

            Beside the sale, --quiet-rooms rooms each have two users exchanging a custom message every --quiet-interval-ms, in \
            a process of their own (this bench again); their delivery delay is measured for --quiet-seconds before the sale and \
            during it. With --previous-binary, the \
            same rounds run against that binary too (a build of the previous commit), so both are measured in one run.
            """)

    @Option(help: "The liveroom-server executable to start (a release build).")
    var serverBinary = ".build/release/liveroom-server"
    @Option(help: "Run against this server (http://host:port) instead of starting one.")
    var server: String?
    @Option(help: "The server's SDKAppID.") var sdkAppId: UInt64 = 1_400_000_000
    @Option(help: "The server's secret key.") var secretKey = "bench"
    @Option(help: "The string room the sale is in.") var room = "flash-sale"
    @Option(help: "The product's item number.") var item = 1
    @Option(help: "Units in stock when each sale starts.") var stock = 100
    @Option(help: "Concurrent buyers, each on its own WebSocket.") var clients = 1000
    @Option(help: "Buy requests in all (1 unit each), shared among the buyers.") var requests = 10_000
    @Option(help: "Sales to run, each with fresh connections.") var rounds = 3
    @Option(help: "Spread each buyer's requests over this many milliseconds (0: all at once).") var spreadMs = 0
    @Option(help: "Seconds one sale may take.") var timeout = 120
    @Option(help: "Rooms beside the sale whose custom messages are timed.") var quietRooms = 3
    @Option(help: "Milliseconds between one quiet room's custom messages.") var quietIntervalMs = 100
    @Option(help: "Seconds the quiet rooms are timed before each sale.") var quietSeconds = 5
    @Option(help: "Viewers in the sale's room besides the buyers, who only watch; the room's anchor sends them a custom message every --anchor-interval-ms.")
    var viewers = 0
    @Option(help: "Milliseconds between the sale room's anchor's custom messages (with --viewers).") var anchorIntervalMs = 100
    @Flag(help: "Run the servers in cluster mode on a PostgreSQL of their own (initdb, pg_ctl): the shop's store is PostgreSQL.") var postgres = false
    @Option(help: "A second liveroom-server executable (the previous commit's) to run the same rounds against.") var previousBinary: String?
    @Option(help: .hidden) var quietChild: String?
    @Option(help: .hidden) var quietTag = ""
    @Flag(help: "Skip the baseline (the store alone).") var noBaseline = false
    @Flag(help: "Print one JSON object per sale (with every acknowledged order) and one for the baseline.") var json = false

    func validate() throws {
        guard clients > 0, requests >= clients, rounds > 0, stock >= 0, spreadMs >= 0, timeout > 0 else {
            throw ValidationError("--clients, --rounds and --timeout must be positive, --requests at least --clients, --stock and --spread-ms not negative")
        }
        guard quietRooms >= 0, quietIntervalMs > 0, quietSeconds > 0, viewers >= 0, anchorIntervalMs > 0 else {
            throw ValidationError("--quiet-rooms and --viewers must not be negative, --quiet-interval-ms, --anchor-interval-ms and --quiet-seconds positive")
        }
        guard !postgres || server == nil else { throw ValidationError("--postgres starts the servers; it cannot go with --server") }
        guard previousBinary == nil || server == nil else { throw ValidationError("--previous-binary starts a server; it cannot go with --server") }
    }

    func run() async throws {
        var logger = Logger(label: "shop-bench")
        logger.logLevel = .warning
        if let quietChild {
            return await QuietRoomsChild.serve(
                url: quietChild, tag: quietTag, count: quietRooms, intervalMs: quietIntervalMs, saleRoom: room, viewers: viewers,
                anchorIntervalMs: anchorIntervalMs, sdkAppId: sdkAppId, secretKey: secretKey, logger: logger)
        }
        var binaries: [String?] = server == nil ? [serverBinary] : [nil]
        if let previousBinary { binaries.append(previousBinary) }
        var results: [[SaleResult]] = []
        for binary in binaries {
            // A PostgreSQL of its own for each binary's servers, so neither finds the other's orders.
            let database = postgres ? try PostgresTestServer() : nil
            if let database {
                progress("starting PostgreSQL (initdb, pg_ctl)…")
                try database.start()
            }
            defer { database?.stop() }
            results.append(try await sales(binary: binary, database: database?.url, logger: logger))
        }
        let baseline = noBaseline ? nil : try await storeBaseline()
        if let baseline { report(baseline) }
        if !json { summary(results, binaries: binaries, baseline) }
    }

    /// `rounds` sales against a server started from `binary` (or `server` when nil).
    func sales(binary: String?, database: String?, logger: Logger) async throws -> [SaleResult] {
        var started: ServerProcess?
        let url: String
        if let binary {
            let connections = clients + 2 * quietRooms + viewers + 1
            let process = try await ServerProcess.start(
                binary: binary, sdkAppId: sdkAppId, secretKey: secretKey,
                extraArguments: ["--max-connections-per-address", String(connections + 10), "--max-connections", String(connections + 100)]
                    + (database.map { ["--cluster-db", $0] } ?? []))
            progress("\(binary): liveroom-server pid \(process.pid) at \(process.httpURL)")
            started = process
            url = process.httpURL
        } else {
            url = server!
        }
        let signalSources = started?.stopOnSignals()
        defer { withExtendedLifetime(signalSources) {} }
        let admin = AdminClient(server: url, sdkAppId: sdkAppId, secretKey: secretKey)
        var results: [SaleResult] = []
        do {
            for round in 1...rounds {
                try await restock(admin)
                var result = try await sale(round: round, url: url, admin: admin, server: started, logger: logger)
                result.binary = binary ?? url
                results.append(result)
                report(result)
            }
        } catch {
            await started?.stop()
            throw error
        }
        await started?.stop()
        return results
    }

    // MARK: The sale

    /// Sets the product's stock to `stock` (adding it the first time) through the admin API.
    func restock(_ admin: AdminClient) async throws {
        let products = try await call(admin, "DescribeProducts", ["RoomId": .string(room)])["Products"]?.arrayValue ?? []
        if let current = products.first(where: { $0["itemNumber"]?.intValue == item }) {
            _ = try await call(
                admin, "ModifyProduct",
                [
                    "RoomId": .string(room), "ItemNumber": .number(Double(item)),
                    "Changes": ["stock": .number(Double(stock)), "onShelf": true, "version": current["version"] ?? 0],
                ])
        } else {
            _ = try await call(
                admin, "AddProduct",
                [
                    "RoomId": .string(room),
                    "Product": [
                        "itemNumber": .number(Double(item)), "title": "Flash sale", "price": "9.90", "itemUrl": "https://shop.example/flash",
                        "stock": .number(Double(stock)),
                    ],
                ])
        }
    }

    func call(_ admin: AdminClient, _ action: String, _ body: [String: JSONValue]) async throws -> JSONValue {
        var body = body
        body["SdkAppId"] = .number(Double(sdkAppId))
        let (status, text) = try await admin.call(action, body: JSONValue.object(body).jsonText)
        guard status == 200, let response = (try? JSONValue.parse(text))?["Response"], response["Error"] == nil else {
            throw BenchError("\(action) failed (HTTP \(status)): \(text)")
        }
        return response
    }

    func sale(round: Int, url: String, admin: AdminClient, server: ServerProcess?, logger: Logger) async throws -> SaleResult {
        let signaling = (url.hasPrefix("https://") ? "wss://" + url.dropFirst(8) : "ws://" + url.dropFirst("http://".count)) + "/ws"
        let sale = String(UInt32.random(in: 0...UInt32.max), radix: 36)
        let gate = Gate()
        let (done, leave) = (Arrivals(), Gate())
        let (enteredStream, enteredContinuation) = AsyncStream<Bool>.makeStream()
        let limit = Duration.seconds(timeout)
        let quiet =
            quietRooms > 0 || viewers > 0
            ? try QuietRoomsChild(
                url: signaling, tag: sale, count: quietRooms, intervalMs: quietIntervalMs, saleRoom: room, viewers: viewers, anchorIntervalMs: anchorIntervalMs,
                sdkAppId: sdkAppId, secretKey: secretKey)
            : nil
        defer { quiet?.kill() }
        return try await withThrowingTaskGroup(of: [BuyOutcome].self) { group in
            for index in 0..<clients {
                let count = requests / clients + (index < requests % clients ? 1 : 0)
                let buyer = Buyer(
                    url: signaling, room: .string(room), userId: "buyer-\(index)", sdkAppId: sdkAppId, secretKey: secretKey, itemNumber: item,
                    requestIds: (0..<count).map { "\(sale)-\(index)-\($0)" }, spread: .milliseconds(spreadMs), timeout: limit)
                group.addTask { await buyer.run(gate: gate, done: done, leave: leave, logger: logger) { enteredContinuation.yield($0) } }
            }
            // Everyone in (or refused) before the burst.
            var inRoom = 0
            var refused = 0
            let connectStart = ContinuousClock.now
            for await ok in enteredStream {
                if ok { inRoom += 1 } else { refused += 1 }
                if inRoom + refused == clients { break }
            }
            enteredContinuation.finish()
            guard refused == 0 else { throw BenchError("\(refused) of \(clients) buyers could not enter \(room)") }
            progress("round \(round): \(clients) buyers entered in \(formatted(ContinuousClock.now - connectStart))")
            if let quiet {
                // The quiet rooms' delays without the sale (the buyers connected and idle).
                try await quiet.waitUntilIn()
                quiet.send("before")
                try await Task.sleep(for: .seconds(quietSeconds))
            }
            progress("round \(round): \(requests) buy requests go")
            let start = ContinuousClock.now
            let threadsBefore = server?.threadSchedStats()
            let memoryBefore = server?.residentBytes
            // The server's memory four times a second through the sale: its peak.
            let sampling = Task {
                var peak = 0
                while !Task.isCancelled, let bytes = server?.residentBytes {
                    peak = max(peak, bytes)
                    try? await Task.sleep(for: .milliseconds(250))
                }
                return peak
            }
            let answersBefore = await Self.purchaseAnswers(url)
            quiet?.send("sale")
            await gate.open()
            let saleStart = ContinuousClock.now
            // Every buyer answered (or gone); then they leave together.
            await done.wait(for: clients)
            let elapsed = ContinuousClock.now - start
            var (serverThreads, serverWaits): ([(name: String, percent: Double)], [(name: String, percent: Double)]) = ([], [])
            if let server, let threadsBefore {
                let (after, span) = (server.threadSchedStats(), seconds(elapsed, atLeast: .zero))
                serverThreads = ThreadSchedStat.busiest(from: threadsBefore, to: after, seconds: span)
                serverWaits = ThreadSchedStat.busiest(from: threadsBefore, to: after, seconds: span, waiting: true)
            }
            let serverAnswers = await Self.purchaseAnswers(url).map { after in answersBefore.flatMap { after.since($0) } ?? after }
            quiet?.send("after")
            await leave.open()
            var outcomes: [BuyOutcome] = []
            for try await batch in group { outcomes += batch }
            sampling.cancel()
            let memoryPeak = await sampling.value
            // Messages sent during the sale get a moment to arrive.
            try await Task.sleep(for: .seconds(1))
            let figures = try await quiet?.finish()
            let answered = outcomes.filter { $0.latency != nil }
            let last = answered.map { $0.latency! }.max() ?? .zero
            let products = try? await call(admin, "DescribeProducts", ["RoomId": .string(room)])["Products"]?.arrayValue
            // Every acknowledged order is in the store (newest first: this sale's come first);
            // unknown when the server does not answer (a test kills it in the middle of a sale).
            var storedIds: Set<String>? = []
            let acknowledged = outcomes.count { $0.code == 0 }
            for page in 0..<1000 where (storedIds?.count ?? .max) < acknowledged {
                let body: [String: JSONValue] = ["RoomId": .string(room), "Offset": .number(Double(page * 1000)), "Limit": 1000]
                guard let stored = try? await call(admin, "DescribeOrders", body) else {
                    storedIds = nil
                    break
                }
                let orders = stored["Orders"]?.arrayValue ?? []
                storedIds?.formUnion(orders.compactMap { $0["orderId"]?.stringValue })
                if orders.count < 1000 { break }
            }
            let missing = storedIds.map { ids in outcomes.count { $0.code == 0 && !ids.contains($0.orderId ?? "") } }
            // The memory once the sale is over and its connections closed.
            try await Task.sleep(for: .seconds(3))
            return SaleResult(
                name: "server, \(clients) WebSocket clients", round: round, outcomes: outcomes, seconds: seconds(elapsed, atLeast: last),
                stockLeft: products?.first { $0["itemNumber"]?.intValue == item }?["stock"]?.intValue,
                quiet: figures?.quiet, saleRoom: figures?.saleRoom, serverThreads: serverThreads, serverWaits: serverWaits,
                memoryMiB: memoryBefore.map { ($0 >> 20, memoryPeak >> 20, (server?.residentBytes ?? 0) >> 20) }, missingOrders: missing, start: saleStart,
                serverAnswers: serverAnswers)
        }
    }

    // MARK: The baseline

    /// The same purchases (same buyers, same request ids, one unit each) on a RoomStore file
    /// of its own, one after another.
    func storeBaseline() async throws -> SaleResult {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("shop-bench-\(getpid()).sqlite").path
        defer { for suffix in ["", "-wal", "-shm", "-journal"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        let store = try RoomStore(path: path)
        _ = try await store.addProduct(
            Product(itemNumber: item, title: "Flash sale", price: Money(minorUnits: 990, currency: "CNY"), itemUrl: "https://shop.example/flash", stock: stock),
            room: room)
        var outcomes: [BuyOutcome] = []
        outcomes.reserveCapacity(requests)
        let start = ContinuousClock.now
        for n in 0..<requests {
            let requestId = "base-\(n % clients)-\(n / clients)"
            let begin = ContinuousClock.now
            var outcome = BuyOutcome(requestId: requestId, quantity: 1)
            do {
                let (order, _, _) = try await store.buy(
                    itemNumber: item, quantity: 1, userId: "buyer-\(n % clients)", requestId: requestId, room: room,
                    now: Int64(Date().timeIntervalSince1970 * 1000), reservation: .seconds(900))
                outcome.code = 0
                outcome.orderId = order.orderId
            } catch {
                outcome.code = (error as? LiveRoomError)?.code ?? -1
            }
            outcome.latency = ContinuousClock.now - begin
            outcomes.append(outcome)
        }
        let elapsed = ContinuousClock.now - start
        return SaleResult(
            name: "store alone, tight loop (baseline)", round: 0, outcomes: outcomes, seconds: seconds(elapsed, atLeast: .zero),
            stockLeft: try await store.product(item, room: room)?.stock)
    }

    /// The server's histogram of purchase answers; nil when the server does not have one.
    static func purchaseAnswers(_ server: String) async -> PrometheusHistogram? {
        let histogram = PrometheusHistogram(named: "liveroom_purchase_answer_seconds", in: await serverMetricsText(server) ?? "")
        return histogram.buckets.isEmpty ? nil : histogram
    }

    // MARK: Reporting

    func report(_ result: SaleResult) {
        if json {
            print(result.json(withOrders: result.round > 0).jsonText)
        } else {
            let codes = result.codes.sorted { $0.key > $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ")
            progress(
                "\(result.name) round \(result.round): \(result.answered)/\(result.outcomes.count) answered, sold \(result.sold), "
                    + "stock left \(result.stockLeft.map(String.init) ?? "?"), codes {\(codes)}, "
                    + String(format: "%.0f requests/s, p50 %.2f ms, p99 %.2f ms", result.requestsPerSecond, result.p50, result.p99)
                    + (result.quiet.map {
                        String(
                            format: "; quiet rooms p99 %.2f ms before, %.2f ms during the sale (%d and %d messages, %d lost, %d connections dropped)",
                            $0.p99Before, $0.p99During, $0.before.count, $0.during.count, $0.lost, $0.dropped)
                    } ?? "")
                    + (result.saleRoom.map {
                        String(
                            format: "; the sale room's anchor to %d viewers p99 %.2f ms before, %.2f ms during (%d and %d deliveries, %d lost, %d viewers dropped)",
                            viewers, $0.p99Before, $0.p99During, $0.before.count, $0.during.count, $0.lost, $0.dropped)
                    } ?? "")
                    + (result.memoryMiB.map { "; server memory \($0.before) MiB before, \($0.peak) MiB at most, \($0.after) MiB after" } ?? "")
                    + (result.round > 0 ? "; acknowledged orders not in the store: \(result.missingOrders.map(String.init) ?? "unknown")" : "")
                    + (result.serverThreads.isEmpty ? "" : "; server threads during the sale, % of one core: " + Self.threadList(result.serverThreads))
                    + (result.serverWaits.isEmpty ? "" : "; waiting for a core: " + Self.threadList(result.serverWaits))
                    + (result.serverAnswers.map {
                        String(
                            format: "; in the server (%d answers): p50 ≤ %.1f ms, p99 ≤ %.1f ms", Int($0.count), $0.upperBoundMilliseconds(quantile: 0.5) ?? 0,
                            $0.upperBoundMilliseconds(quantile: 0.99) ?? 0)
                    } ?? "")
                    + (result.slowest.map { slowest in
                        "; the slowest 1% sent in quarter seconds from the start: "
                            + slowest.byQuarter.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ")
                            + " (\(slowest.orders) orders)"
                    } ?? ""))
        }
    }

    /// `name 12%, other 3%`, the threads that used at least 0.5 % of a core.
    static func threadList(_ threads: [(name: String, percent: Double)]) -> String {
        threads.filter { $0.percent >= 0.5 }.map { String(format: "%@ %.0f%%", $0.name, $0.percent) }.joined(separator: ", ")
    }

    func summary(_ runs: [[SaleResult]], binaries: [String?], _ baseline: SaleResult?) {
        print("\(requests) buy requests of 1 unit, \(stock) in stock, \(clients) buyers; median of \(rounds) sales")
        print("")
        print("| | requests/s | p50 ms | p99 ms | sold |")
        print("|---|---|---|---|---|")
        for (sales, binary) in zip(runs, binaries) {
            print(
                String(
                    format: "| %@, %d WebSocket clients | %.0f | %.2f | %.2f | %@ |", binary ?? "liveroom-server", clients, median(sales.map(\.requestsPerSecond)),
                    median(sales.map(\.p50)), median(sales.map(\.p99)), sales.map { String($0.sold) }.joined(separator: ", ")))
        }
        for (sales, binary) in zip(runs, binaries) {
            let inServer = sales.compactMap(\.serverAnswers)
            guard !inServer.isEmpty else { continue }
            print(
                String(
                    format: "\n%@: the same answers timed in the server (liveroom_purchase_answer_seconds, bucket bounds), median of the sales: p50 ≤ %.1f ms, p99 ≤ %.1f ms",
                    binary ?? "liveroom-server", median(inServer.map { $0.upperBoundMilliseconds(quantile: 0.5) ?? 0 }),
                    median(inServer.map { $0.upperBoundMilliseconds(quantile: 0.99) ?? 0 })))
        }
        if let baseline {
            print(String(format: "| RoomStore alone, tight loop (baseline) | %.0f | %.3f | %.3f | %d |", baseline.requestsPerSecond, baseline.p50, baseline.p99, baseline.sold))
            print(String(format: "| server / baseline | %.0f %% | | | |", median(runs[0].map(\.requestsPerSecond)) / baseline.requestsPerSecond * 100))
        }
        if viewers > 0 {
            print("")
            print("The sale's room: \(viewers) viewers, the anchor's custom message every \(anchorIntervalMs) ms; delivery delay to each viewer, median of the rounds")
            print("")
            print("| | p99 before ms | p99 during ms | deliveries lost | viewers dropped | answers over 1 s | orders not stored | memory before / peak / after MiB |")
            print("|---|---|---|---|---|---|---|---|")
            for (sales, binary) in zip(runs, binaries) {
                let figures = sales.compactMap(\.saleRoom)
                let slow = sales.map { $0.latenciesMs.count { $0 > 1000 } }.reduce(0, +)
                let memory = sales.compactMap(\.memoryMiB)
                print(
                    String(
                        format: "| %@ | %.2f | %.2f | %d | %d | %d | %d | %@ |", binary ?? "liveroom-server", median(figures.map(\.p99Before)),
                        median(figures.map(\.p99During)), figures.map(\.lost).reduce(0, +), figures.map(\.dropped).reduce(0, +), slow,
                        sales.compactMap(\.missingOrders).reduce(0, +),
                        memory.map { "\($0.before) / \($0.peak) / \($0.after)" }.joined(separator: ", ")))
            }
        }
        guard quietRooms > 0 else { return }
        print("")
        print(
            "Quiet rooms beside the sale: \(quietRooms) rooms, a custom message every \(quietIntervalMs) ms; delivery delay, median of the rounds' p99, "
                + "and the p99 of every round's messages together (a sale lasts about a second: a round's p99 is nearly its slowest message)")
        print("")
        print("| | p99 before ms | p99 during ms | during / before | all rounds' p99 before / during ms | lost | dropped connections |")
        print("|---|---|---|---|---|---|---|")
        var during: [Double] = []
        var pooled: [Double] = []
        for (sales, binary) in zip(runs, binaries) {
            let figures = sales.compactMap(\.quiet)
            let before = median(figures.map(\.p99Before))
            during.append(median(figures.map(\.p99During)))
            pooled.append(percentile(figures.flatMap(\.during), 99))
            print(
                String(
                    format: "| %@ | %.2f | %.2f | %.1f | %.2f / %.2f | %d | %d |", binary ?? "liveroom-server", before, during.last!, during.last! / before,
                    percentile(figures.flatMap(\.before), 99), pooled.last!, figures.map(\.lost).reduce(0, +), figures.map(\.dropped).reduce(0, +)))
        }
        if during.count == 2 {
            print(String(format: "| this binary / previous, during the sale | | %.2f | | %.2f | | |", during[0] / during[1], pooled[0] / pooled[1]))
        }
        print("")
        for (sales, binary) in zip(runs, binaries) {
            // Each kind of thread's median over the rounds.
            func medians(_ figures: (SaleResult) -> [(name: String, percent: Double)]) -> String {
                let names = Set(sales.flatMap { figures($0).map(\.name) })
                let medians = names.map { name in (name, median(sales.map { figures($0).first { $0.name == name }?.percent ?? 0 })) }
                return Self.threadList(medians.sorted { $0.1 > $1.1 })
            }
            guard sales.contains(where: { !$0.serverThreads.isEmpty }) else { continue }
            print(
                "\(binary ?? "liveroom-server"): server threads during the sale, median of rounds, % of one core: " + medians(\.serverThreads)
                    + "; waiting for a core: " + medians(\.serverWaits))
        }
    }

    func seconds(_ elapsed: Duration, atLeast: Duration) -> Double {
        let d = max(elapsed, atLeast)
        return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }

    func formatted(_ d: Duration) -> String { String(format: "%.1f s", seconds(d, atLeast: .zero)) }
}

/// One sale's outcomes and figures.
struct SaleResult {
    var name: String
    var round: Int
    var outcomes: [BuyOutcome]
    /// From the burst to the last answer.
    var seconds: Double
    var stockLeft: Int?
    var quiet: QuietFigures?
    /// The sale's room: its anchor's custom messages to the viewers (with --viewers).
    var saleRoom: QuietFigures?
    /// The CPU the server's threads used during the sale, by kind, in % of one core (when the
    /// bench started the server): which of them the sale kept busy.
    var serverThreads: [(name: String, percent: Double)] = []
    /// How long they were ready to run but waited for a core (`/proc/<pid>/task/*/schedstat`'s
    /// second field), in % of one core.
    var serverWaits: [(name: String, percent: Double)] = []
    /// The server's resident memory before the sale, at its peak, and 3 s after it, in MiB.
    var memoryMiB: (before: Int, peak: Int, after: Int)?
    /// Acknowledged orders (code 0) that are not in the store; nil when the store could not be asked.
    var missingOrders: Int? = 0
    /// The server binary (or URL) the sale ran against.
    var binary = ""
    /// When the buyers were let go.
    var start: ContinuousClock.Instant?
    /// The server's own measure of the sale's answers (`liveroom_purchase_answer_seconds`: from
    /// a purchase reaching its room's shop to its answer); nil for a server without it.
    var serverAnswers: PrometheusHistogram?

    /// Where the slowest hundredth of the answers were sent: how many in each quarter second
    /// from the start, and how many of them were orders.
    var slowest: (byQuarter: [Int: Int], orders: Int)? {
        guard let start else { return nil }
        let threshold = p99
        var byQuarter: [Int: Int] = [:]
        var orders = 0
        for outcome in outcomes {
            guard outcome.code != nil, let latency = outcome.latency, let sentAt = outcome.sentAt,
                Double(latency.components.seconds) * 1000 + Double(latency.components.attoseconds) / 1e15 >= threshold
            else { continue }
            byQuarter[Int((sentAt - start).ticks(rate: 4)), default: 0] += 1
            if outcome.code == 0 { orders += 1 }
        }
        return (byQuarter, orders)
    }

    var answered: Int { outcomes.count { $0.code != nil } }
    var sold: Int { outcomes.filter { $0.code == 0 }.reduce(0) { $0 + $1.quantity } }
    var codes: [Int: Int] { outcomes.reduce(into: [:]) { if let code = $1.code { $0[code, default: 0] += 1 } } }
    var requestsPerSecond: Double { seconds > 0 ? Double(answered) / seconds : 0 }
    var latenciesMs: [Double] {
        outcomes.compactMap { $0.code == nil ? nil : $0.latency.map { Double($0.components.attoseconds) / 1e15 + Double($0.components.seconds) * 1000 } }
    }
    var p50: Double { percentile(latenciesMs, 50) }
    var p99: Double { percentile(latenciesMs, 99) }

    func json(withOrders: Bool) -> JSONValue {
        var object: [String: JSONValue] = [
            "name": .string(name), "round": .number(Double(round)), "requests": .number(Double(outcomes.count)),
            "answered": .number(Double(answered)), "sold": .number(Double(sold)),
            "codes": .object(Dictionary(uniqueKeysWithValues: codes.map { (String($0.key), .number(Double($0.value))) })),
            "requestsPerSecond": .number(requestsPerSecond.rounded()), "p50Ms": .number((p50 * 1000).rounded() / 1000),
            "p99Ms": .number((p99 * 1000).rounded() / 1000), "stockLeft": stockLeft.map { .number(Double($0)) } ?? .null,
            "binary": .string(binary), "seconds": .number((seconds * 1000).rounded() / 1000),
        ]
        // Why requests went unanswered: buyers' connections by how they ended.
        let ends = outcomes.reduce(into: [String: Int]()) { if $1.code == nil { $0[$1.end ?? "unknown", default: 0] += 1 } }
        if !ends.isEmpty { object["unanswered"] = .object(ends.mapValues { .number(Double($0)) }) }
        if let quiet {
            object["quietRooms"] = [
                "p99BeforeMs": .number((quiet.p99Before * 1000).rounded() / 1000), "p99DuringMs": .number((quiet.p99During * 1000).rounded() / 1000),
                "messagesBefore": .number(Double(quiet.before.count)), "messagesDuring": .number(Double(quiet.during.count)),
                "lost": .number(Double(quiet.lost)), "droppedConnections": .number(Double(quiet.dropped)),
            ]
        }
        if !serverThreads.isEmpty {
            object["serverThreadsPercentOfACore"] = .object(
                Dictionary(serverThreads.map { ($0.name, JSONValue.number(($0.percent * 10).rounded() / 10)) }, uniquingKeysWith: { first, _ in first }))
        }
        if withOrders {
            object["orders"] = .array(
                outcomes.filter { $0.code == 0 }.map { ["orderId": .string($0.orderId ?? ""), "requestId": .string($0.requestId), "quantity": .number(Double($0.quantity))] })
        }
        return .object(object)
    }
}

/// The quiet rooms' delivery delays of one sale.
struct QuietFigures {
    var before: [Double]
    var during: [Double]
    /// Messages sent before or during the sale that never arrived.
    var lost: Int
    /// Quiet users' connections that ended before the bench closed them.
    var dropped: Int

    var p99Before: Double { percentile(before, 99) }
    var p99During: Double { percentile(during, 99) }
}

func progress(_ message: String) {
    FileHandle.standardError.write(Data(("shop-bench: " + message + "\n").utf8))
}
