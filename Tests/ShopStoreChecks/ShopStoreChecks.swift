import Foundation
import LiveRoomCommerce
import LiveRoomProtocol
import Testing

/// The behaviours every ``ShopStore`` must have, whatever keeps it: run against the SQLite
/// store (`LiveRoomStoreTests`) and the PostgreSQL one (`LiveRoomClusterTests`). Each check
/// wants a store of its own, empty.
public enum ShopStoreChecks {
    public typealias Check = @Sendable (any ShopStore) async throws -> Void

    public static let all: [(name: String, check: Check)] = [
        ("products are added, edited by version and removed per room", productsAreAddedEditedByVersionAndRemovedPerRoom),
        ("a room holds at most 500 products", aRoomHoldsAtMostFiveHundredProducts),
        ("a purchase reserves stock and a retry returns the same order", aPurchaseReservesStockAndARetryReturnsTheSameOrder),
        ("stock never goes below zero under concurrent buyers", stockNeverGoesBelowZeroUnderConcurrentBuyers),
        ("a batch of purchases: each as alone, one refused touches no other", aBatchOfPurchasesIsEachAsAlone),
        ("settled orders stay, cancelled or expired ones return their stock", settledOrdersStayAndCancelledOrExpiredOnesReturnTheirStock),
        ("products keep their newest replays", productsKeepTheirNewestReplays),
        ("the pop-up is set, read and ended per room", thePopUpIsSetReadAndEndedPerRoom),
        ("a shop is claimed once, its owners replaced within bounds", aShopIsClaimedOnceAndItsOwnersReplacedWithinBounds),
        ("battles: sales count in their room and window", salesCountOnlyInTheRoomAndWindow),
        ("battles: bad ones are refused", startingRefusesBadBattles),
        ("battles: finishing scores once", finishingScoresEveryRoomOnce),
    ]

    static let tea = Product(itemNumber: 1, title: "Tea", price: Money(minorUnits: 19_900, currency: "CNY"), itemUrl: "https://s/1", stock: 100)
    static let limitedTea = Product(
        itemNumber: 1, title: "Tea", price: Money(minorUnits: 19_900, currency: "CNY"), itemUrl: "https://s/1", stock: 100, limitPerUser: 3)

    /// The error code `body` throws, nil when it does not throw.
    public static func code(_ body: () async throws -> Void) async -> Int? {
        do {
            try await body()
            return nil
        } catch {
            return (error as? LiveRoomError)?.code ?? -1
        }
    }

    static func buy(
        _ store: any ShopStore, _ quantity: Int = 1, item: Int = 1, user: String = "fan", requestId: String? = nil, room: String = "shop",
        now: Int64 = 1_000
    ) async throws -> (order: Order, product: Product, repeated: Bool) {
        try await store.buy(itemNumber: item, quantity: quantity, userId: user, requestId: requestId, room: room, now: now, reservation: .seconds(60))
    }

    static func productsAreAddedEditedByVersionAndRemovedPerRoom(_ store: any ShopStore) async throws {
        #expect(try await store.addProduct(tea, room: "shop").version == 1)
        #expect(await code { _ = try await store.addProduct(tea, room: "shop") } == ErrorCode.productExists)
        _ = try await store.addProduct(tea, room: "*7")
        #expect(try await store.products(room: "shop") == [tea])

        // Two anchors edit version 1 at once: the first wins, the second hears of the conflict.
        var first = tea
        first.stock = 90
        var second = tea
        second.title = "Black tea"
        let stored = try await store.replaceProduct(first, room: "shop")
        #expect(stored.version == 2 && stored.stock == 90)
        #expect(await code { _ = try await store.replaceProduct(second, room: "shop") } == ErrorCode.productVersionConflict)
        #expect(try await store.product(1, room: "shop")?.title == "Tea")
        #expect(try await store.product(1, room: "*7")?.version == 1, "another room's catalogue is its own")
        var missing = tea
        missing.itemNumber = 77
        #expect(await code { _ = try await store.replaceProduct(missing, room: "shop") } == ErrorCode.productNotFound)

        try await store.removeProduct(1, room: "shop")
        #expect(try await store.products(room: "shop").isEmpty)
        #expect(try await store.product(1, room: "shop") == nil)
        #expect(await code { try await store.removeProduct(1, room: "shop") } == ErrorCode.productNotFound)
    }

    static func aRoomHoldsAtMostFiveHundredProducts(_ store: any ShopStore) async throws {
        for number in 1...Product.maxPerRoom {
            var product = tea
            product.itemNumber = number
            _ = try await store.addProduct(product, room: "big")
        }
        var extra = tea
        extra.itemNumber = 999
        #expect(await code { _ = try await store.addProduct(extra, room: "big") } == ErrorCode.tooManyProducts)
        #expect(try await store.products(room: "big").count == Product.maxPerRoom)
        _ = try await store.addProduct(extra, room: "small")
    }

    static func aPurchaseReservesStockAndARetryReturnsTheSameOrder(_ store: any ShopStore) async throws {
        _ = try await store.addProduct(limitedTea, room: "shop")
        let first = try await buy(store, 2, requestId: "r1")
        #expect(first.order.state == .reserved && first.order.amount == Money(minorUnits: 39_800, currency: "CNY") && !first.repeated)
        #expect(first.product.stock == 98 && first.product.version == 2 && first.order.expiresAt == 61_000)
        let again = try await buy(store, 2, requestId: "r1")
        #expect(again.order == first.order && again.repeated && again.product.stock == 98)
        #expect(try await store.order(first.order.orderId) == first.order)

        // The limit counts what the buyer holds; other buyers have their own.
        #expect(await code { _ = try await buy(store, 2) } == ErrorCode.purchaseLimitExceeded)
        _ = try await buy(store, 1)
        _ = try await buy(store, 3, user: "other")
        #expect(await code { _ = try await buy(store, 0) } == ErrorCode.invalidPurchase)
        #expect(await code { _ = try await buy(store, 101) } == ErrorCode.invalidPurchase)
        #expect(await code { _ = try await buy(store, requestId: String(repeating: "x", count: 65)) } == ErrorCode.invalidPurchase)
        #expect(await code { _ = try await buy(store, requestId: "") } == ErrorCode.invalidPurchase)
        #expect(await code { _ = try await buy(store, item: 9) } == ErrorCode.productNotFound)
        #expect(try await store.product(1, room: "shop")?.stock == 94)

        // Not enough stock: sold out, and nothing taken.
        var scarce = try #require(try await store.product(1, room: "shop"))
        scarce.stock = 1
        scarce.limitPerUser = nil
        _ = try await store.replaceProduct(scarce, room: "shop")
        #expect(await code { _ = try await buy(store, 2, user: "third") } == ErrorCode.soldOut)
        #expect(try await store.product(1, room: "shop")?.stock == 1)

        var off = try #require(try await store.product(1, room: "shop"))
        off.onShelf = false
        _ = try await store.replaceProduct(off, room: "shop")
        #expect(await code { _ = try await buy(store, user: "third") } == ErrorCode.productOffShelf)
        // A retry still gets its order back: the request was answered before the shelf changed.
        let retried = try await buy(store, 2, requestId: "r1")
        #expect(retried.repeated && retried.order == first.order)
    }

    static func stockNeverGoesBelowZeroUnderConcurrentBuyers(_ store: any ShopStore) async throws {
        var product = tea
        product.stock = 100
        _ = try await store.addProduct(product, room: "shop")
        let codes = await withTaskGroup(of: Int.self) { group in
            for n in 0..<300 {
                group.addTask { await code { _ = try await buy(store, user: "u\(n % 120)", requestId: "r\(n)") } ?? 0 }
            }
            return await group.reduce(into: [Int: Int]()) { $0[$1, default: 0] += 1 }
        }
        #expect(codes == [0: 100, ErrorCode.soldOut: 200], "\(codes)")
        #expect(try await store.product(1, room: "shop")?.stock == 0)
        #expect(try await store.orders(room: "shop", state: .reserved, offset: 0, limit: 1000).orders.count == 100)
        #expect(await code { _ = try await buy(store) } == ErrorCode.soldOut)

        // The orders of the sold-out product, read with it, or nil past the bound.
        let all = try await store.orders(room: "shop", state: nil, offset: 0, limit: 1000).orders
        let sold = try #require(try await store.orders(of: 1, room: "shop", atMost: 100))
        #expect(sold.product?.stock == 0 && Set(sold.orders.map(\.orderId)) == Set(all.map(\.orderId)))
        #expect(sold.orders.allSatisfy { $0.requestId != nil && $0.state == .reserved && $0.itemNumber == 1 })
        #expect(try await store.orders(of: 1, room: "shop", atMost: 99) == nil)
        #expect(try await store.orders(of: 1, room: "elsewhere", atMost: 10).map { $0.product == nil && $0.orders.isEmpty } == true)
    }

    static func aBatchOfPurchasesIsEachAsAlone(_ store: any ShopStore) async throws {
        var product = limitedTea
        product.stock = 4
        _ = try await store.addProduct(product, room: "shop")
        let batch = [
            PurchaseRequest(itemNumber: 1, quantity: 2, userId: "a", requestId: "r1"),
            PurchaseRequest(itemNumber: 1, quantity: 0, userId: "b", requestId: "r2"),
            PurchaseRequest(itemNumber: 1, quantity: 2, userId: "a", requestId: "r3"),
            PurchaseRequest(itemNumber: 9, quantity: 1, userId: "b", requestId: "r4"),
            PurchaseRequest(itemNumber: 1, quantity: 1, userId: "b", requestId: "r5"),
            PurchaseRequest(itemNumber: 1, quantity: 1, userId: "a", requestId: "r1"),
            PurchaseRequest(itemNumber: 1, quantity: 2, userId: "c", requestId: "r6"),
            PurchaseRequest(itemNumber: 1, quantity: 1, userId: "c", requestId: "r6"),
        ]
        let outcomes = await store.buy(batch, room: "shop", now: 1_000, reservation: .seconds(60))
        #expect(outcomes.count == batch.count)
        let codes = outcomes.map { outcome in
            switch outcome {
            case .success(let result): result.repeated ? 1 : 0
            case .failure(let error): (error as? LiveRoomError)?.code ?? -1
            }
        }
        #expect(
            codes == [0, ErrorCode.invalidPurchase, ErrorCode.purchaseLimitExceeded, ErrorCode.productNotFound, 0, 1, ErrorCode.soldOut, 0],
            "\(codes)")
        let first = try #require(try? outcomes[0].get())
        #expect(first.product.stock == 2 && first.order.quantity == 2 && first.order.userId == "a")
        #expect(try outcomes[5].get().order == first.order, "the same request in the batch gets the same order")
        #expect(try outcomes[4].get().product.stock == 1)
        // A request refused for want of stock took nothing, and its id is free for a smaller one.
        #expect(try outcomes[7].get().product.stock == 0)
        #expect(try await store.product(1, room: "shop")?.stock == 0)
        #expect(try await store.orders(room: "shop", state: nil, offset: 0, limit: 10).total == 3)
        #expect(await store.buy([], room: "shop", now: 1_000, reservation: .seconds(60)).isEmpty)
    }

    static func settledOrdersStayAndCancelledOrExpiredOnesReturnTheirStock(_ store: any ShopStore) async throws {
        _ = try await store.addProduct(limitedTea, room: "shop")
        let paid = try await buy(store, 1, user: "a").order
        let cancelled = try await buy(store, 2, user: "b", now: 1_500).order
        let expiring = try await buy(store, 3, user: "c", now: 2_000).order
        #expect(try await store.settle(orderId: paid.orderId, to: .paid, now: 3_000).product == nil)
        #expect(try await store.settle(orderId: cancelled.orderId, to: .cancelled, now: 3_000).product?.stock == 96)
        #expect(await code { _ = try await store.settle(orderId: paid.orderId, to: .cancelled, now: 3_000) } == ErrorCode.orderNotReserved)
        #expect(await code { _ = try await store.settle(orderId: "nope", to: .paid, now: 3_000) } == ErrorCode.orderNotFound)

        #expect(try await store.expireOrders(now: 61_999).isEmpty, "not yet")
        let returned = try await store.expireOrders(now: 62_000)
        #expect(returned.map(\.product.stock) == [99] && returned.first?.room == "shop" && returned.first?.order.orderId == expiring.orderId)
        #expect(try await store.expireOrders(now: 62_000).isEmpty, "expired once")
        #expect(try await store.order(expiring.orderId)?.state == .expired)
        #expect(try await store.orders(room: "shop", state: nil, offset: 0, limit: 10).orders.map(\.state) == [.expired, .cancelled, .paid])
        let page = try await store.orders(room: "shop", state: nil, offset: 1, limit: 1)
        #expect(page.total == 3 && page.orders.map(\.state) == [.cancelled])
        #expect(try await store.orders(room: "shop", state: .paid, offset: 0, limit: 10).orders.map(\.orderId) == [paid.orderId])
        #expect(try await store.orders(room: "other", state: nil, offset: 0, limit: 10).total == 0)
        // A paid order still counts against its buyer's limit.
        #expect(await code { _ = try await buy(store, 3, user: "a") } == ErrorCode.purchaseLimitExceeded)

        // Removing the product voids its reservations: a new product under the same number starts clean.
        let held = try await buy(store, 1, user: "d").order
        try await store.removeProduct(1, room: "shop")
        #expect(try await store.order(held.orderId)?.state == .cancelled)
        _ = try await store.addProduct(limitedTea, room: "shop")
        #expect(try await store.expireOrders(now: 1_000_000).isEmpty)
        #expect(try await store.product(1, room: "shop")?.stock == 100)
    }

    static func replay(_ n: Int, item: Int = 1, room: String = "shop") -> Replay {
        Replay(
            replayId: String(format: "%032x", n), roomId: room, itemNumber: item, userId: "host", codec: "vp8", durationMs: 1000, bytes: 10,
            createdAt: Int64(n))
    }

    static func productsKeepTheirNewestReplays(_ store: any ShopStore) async throws {
        _ = try await store.addProduct(tea, room: "shop")
        for n in 1...Replay.maxPerProduct {
            let (product, dropped) = try await store.addReplay(replay(n), keep: Replay.maxPerProduct)
            #expect(product.replays.count == n && dropped.isEmpty)
        }
        let (product, dropped) = try await store.addReplay(replay(99), keep: Replay.maxPerProduct)
        #expect(dropped == [replay(1)] && product.replays.first == replay(2) && product.replays.last == replay(99))
        #expect(try await store.products(room: "shop").first?.replays.count == Replay.maxPerProduct)
        #expect(try await store.product(1, room: "shop")?.replays.count == Replay.maxPerProduct)
        #expect(try await store.replay(replay(99).replayId) == replay(99))
        #expect(try await store.replayFileNames().contains(replay(99).fileName))

        // Another room cannot remove it; its own room can.
        #expect(await code { _ = try await store.removeReplay(replay(99).replayId, room: "other") } == ErrorCode.replayNotFound)
        let (removed, after) = try await store.removeReplay(replay(99).replayId, room: "shop")
        #expect(removed == replay(99) && after.replays.count == Replay.maxPerProduct - 1)

        // A replay of a product that is gone is refused; removing a product hands back its replays.
        #expect(await code { _ = try await store.addReplay(replay(5, item: 42), keep: 10) } == ErrorCode.productNotFound)
        let gone = try await store.removeProduct(1, room: "shop")
        #expect(gone == (2...Replay.maxPerProduct).map { replay($0) })
        #expect(try await store.replayFileNames().isEmpty)
    }

    static func aShopIsClaimedOnceAndItsOwnersReplacedWithinBounds(_ store: any ShopStore) async throws {
        #expect(try await store.shopOwners(room: "shop") == [])
        // The first claim wins, in each room; later claims change nothing.
        #expect(try await store.claimShop(room: "shop", userId: "host") == ["host"])
        #expect(try await store.claimShop(room: "shop", userId: "stranger") == ["host"])
        #expect(try await store.claimShop(room: "other", userId: "stranger") == ["stranger"])
        // Claims racing for an empty room leave exactly one owner.
        let claims = try await withThrowingTaskGroup(of: [String].self) { group in
            for n in 0..<8 { group.addTask { try await store.claimShop(room: "raced", userId: "anchor\(n)") } }
            return try await group.reduce(into: Set<[String]>()) { $0.insert($1) }
        }
        #expect(claims.count == 1 && claims.first?.count == 1, "\(claims)")
        // Replaced: distinct and sorted; at most 20; only user ids; none empties it for the next claim.
        #expect(try await store.setShopOwners(["zoe", "host", "zoe"], room: "shop") == ["host", "zoe"])
        #expect(try await store.shopOwners(room: "shop") == ["host", "zoe"])
        #expect(await code { _ = try await store.setShopOwners((0...20).map { "u\($0)" }, room: "shop") } == ErrorCode.tooManyShopOwners)
        for bad in ["", "a b", "x\u{0}", "<script>", String(repeating: "a", count: 33), "\u{202E}evil"] {
            #expect(await code { _ = try await store.setShopOwners([bad], room: "shop") } == ErrorCode.invalidUserId, "\(bad.debugDescription)")
            #expect(await code { _ = try await store.claimShop(room: "empty", userId: bad) } == ErrorCode.invalidUserId, "\(bad.debugDescription)")
        }
        #expect(try await store.shopOwners(room: "shop") == ["host", "zoe"], "a refused change changes nothing")
        #expect(try await store.setShopOwners([], room: "shop") == [])
        #expect(try await store.claimShop(room: "shop", userId: "next") == ["next"])
    }

    static func thePopUpIsSetReadAndEndedPerRoom(_ store: any ShopStore) async throws {
        #expect(try await store.popUp(room: "shop") == nil)
        let popUp = PopUp(itemNumber: 1, userId: "host", data: #"{"cmd":"item_popup_msg","msg":{"itemTitle":"it's \"good\""}}"#, poppedAt: 5)
        try await store.setPopUp(popUp, room: "shop")
        #expect(try await store.popUp(room: "shop") == popUp)
        #expect(try await store.popUp(room: "other") == nil)
        let next = PopUp(itemNumber: 2, userId: "host2", data: "{}", poppedAt: 6)
        try await store.setPopUp(next, room: "shop")
        #expect(try await store.popUp(room: "shop") == next)
        try await store.setPopUp(nil, room: "shop")
        #expect(try await store.popUp(room: "shop") == nil)
    }

    static let cup = Product(itemNumber: 2, title: "Cup", price: Money(minorUnits: 500, currency: "USD"), itemUrl: "https://s/2", stock: 1_000)

    /// Rooms `a` and `b` sell tea in yuan, room `c` sells cups in dollars.
    static func battleShop(_ store: any ShopStore) async throws {
        var many = tea
        many.stock = 1_000
        _ = try await store.addProduct(many, room: "a")
        _ = try await store.addProduct(many, room: "b")
        _ = try await store.addProduct(cup, room: "c")
    }

    static func sell(_ store: any ShopStore, _ quantity: Int, in room: String, at now: Int64, user: String = "fan") async throws -> Order {
        try await buy(store, quantity, item: room == "c" ? 2 : 1, user: user, room: room, now: now).order
    }

    static func battle(_ id: String = "pk1", rooms: [String] = ["a", "b"], from: Int64 = 1_000, to: Int64 = 11_000) -> PKBattle {
        PKBattle(battleId: id, rooms: rooms.map { PKBattle.Side(roomId: $0, userId: "host-\($0)") }, startedAt: from, endsAt: to)
    }

    static func salesCountOnlyInTheRoomAndWindow(_ store: any ShopStore) async throws {
        try await battleShop(store)
        _ = try await sell(store, 5, in: "a", at: 999)
        _ = try await sell(store, 1, in: "a", at: 1_000)
        _ = try await sell(store, 2, in: "a", at: 10_999)
        _ = try await sell(store, 7, in: "a", at: 11_000)
        _ = try await sell(store, 3, in: "b", at: 5_000)
        #expect(try await store.sales(room: "a", from: 1_000, to: 11_000) == .init(roomId: "a", units: 3, amounts: ["CNY": 59_700]))
        #expect(try await store.sales(room: "b", from: 1_000, to: 11_000) == .init(roomId: "b", units: 3, amounts: ["CNY": 59_700]))
        #expect(try await store.sales(room: "c", from: 1_000, to: 11_000) == .init(roomId: "c", units: 0, amounts: [:]))
        #expect(try await store.sales(room: "a", from: 0, to: 100_000).units == 15)
        // Cancelled and expired orders do not count.
        let cancelled = try await sell(store, 2, in: "b", at: 6_000, user: "b")
        _ = try await store.settle(orderId: cancelled.orderId, to: .cancelled, now: 7_000)
        _ = try await sell(store, 8, in: "b", at: 70_000, user: "d")
        _ = try await store.expireOrders(now: 66_000)
        #expect(try await store.sales(room: "b", from: 0, to: 100_000) == .init(roomId: "b", units: 8, amounts: ["CNY": 159_200]))
    }

    static func startingRefusesBadBattles(_ store: any ShopStore) async throws {
        try await store.startBattle(battle())
        for bad in [battle(), battle("pk2", rooms: ["a"]), battle("pk3", rooms: ["a", "a"]), battle("pk4", from: 5_000, to: 5_000), battle("")] {
            #expect(await code { try await store.startBattle(bad) } == ErrorCode.invalidParameter, "\(bad)")
        }
        #expect(await code { _ = try await store.finishBattle("nope", endedAt: 1) } == ErrorCode.invalidParameter)
        #expect(try await store.battle("nope") == nil)
    }

    static func finishingScoresEveryRoomOnce(_ store: any ShopStore) async throws {
        try await battleShop(store)
        try await store.startBattle(battle(rooms: ["a", "b", "c"]))
        try await store.startBattle(battle("pk0", from: 500, to: 9_000))
        #expect(try await store.battle("pk1") == battle(rooms: ["a", "b", "c"]))
        #expect(try await store.unfinishedBattles() == [battle("pk0", from: 500, to: 9_000), battle(rooms: ["a", "b", "c"])], "the soonest due first")
        _ = try await sell(store, 1, in: "a", at: 2_000)
        _ = try await sell(store, 3, in: "b", at: 3_000)
        _ = try await sell(store, 1, in: "b", at: 9_000)
        _ = try await sell(store, 2, in: "c", at: 4_000)
        _ = try await sell(store, 9, in: "a", at: 11_000)

        // Ended early at 8,500: b's order at 9,000 is after the end.
        let finished = try await store.finishBattle("pk1", endedAt: 8_500)
        #expect(finished.endedAt == 8_500)
        #expect(
            finished.results == [
                .init(roomId: "a", units: 1, amounts: ["CNY": 19_900]), .init(roomId: "b", units: 3, amounts: ["CNY": 59_700]),
                .init(roomId: "c", units: 2, amounts: ["USD": 1_000]),
            ])
        #expect(finished.winnerRoomId == "b", "yuan and dollars: the most units win")
        #expect(try await store.battle("pk1") == finished)
        _ = try await sell(store, 50, in: "a", at: 5_000)
        #expect(try await store.finishBattle("pk1", endedAt: 20_000) == finished, "finishing again changes nothing")
        #expect(try await store.unfinishedBattles().map(\.battleId) == ["pk0"])

        // A battle finished after it was due counts only until it was due; equal amounts are a draw.
        try await store.startBattle(battle("pk2", rooms: ["b", "a"], from: 20_000, to: 30_000))
        _ = try await sell(store, 2, in: "a", at: 25_000)
        _ = try await sell(store, 2, in: "b", at: 29_999)
        _ = try await sell(store, 2, in: "b", at: 30_000)
        let draw = try await store.finishBattle("pk2", endedAt: 45_000)
        #expect(draw.results?.map(\.units) == [2, 2] && draw.winnerRoomId == nil && draw.endedAt == 45_000)
        #expect(try await store.battles(room: "a", limit: 10).map(\.battleId) == ["pk2", "pk1", "pk0"])
        #expect(try await store.battles(room: "a", limit: 1) == [draw])
        #expect(try await store.battles(room: "c", limit: 10).map(\.battleId) == ["pk1"])
        #expect(try await store.battles(room: "z", limit: 10).isEmpty)
    }
}
