import LiveRoomCommerce
import LiveRoomCore
import LiveRoomProtocol
import LiveRoomWebhooks
import Logging

extension RoomShops {
    /// Carries out a catalogue command against the store, off the hub, and answers. A room's
    /// commands run one after another in the order they came (an add before the pop that
    /// names it, a pop before its unpop); purchases go to the room's shop (RoomShops.swift).
    func carryOut(_ command: CatalogueCommand) {
        guard let catalogue = store else {
            switch command {
            case .list(let session, _, let offset, _): send(.onProductList(products: [], offset: offset, total: 0), to: session)
            case .pkAllowList(let session, let roomId, let rooms): inOrder(roomId) { await self.setPKAllowList(rooms, in: roomId, by: session) }
            default: break
            }
            return
        }
        guard let roomId = command.orderedInRoom else {
            Task { await self.run(command, catalogue) }
            return
        }
        inOrder(roomId) { await self.run(command, catalogue) }
    }

    private func run(_ command: CatalogueCommand, _ catalogue: any ShopStore) async {
        switch command {
        case .list(let session, let roomId, let offset, let limit):
            await list(page: offset, limit: limit, of: roomId, to: session, catalogue)
        case .add(let session, let roomId, let fields):
            let itemNumber = fields["itemNumber"]?.intValue ?? 0
            await self.answer(session, request: "addProduct", itemNumber: itemNumber) {
                try await self.requireOwner(session, in: roomId, to: "add products", catalogue)
                return try await self.addProduct(fields, roomId: roomId)
            }
        case .edit(let session, let roomId, let itemNumber, let changes):
            await self.answer(session, request: "editProduct", itemNumber: itemNumber) {
                try await self.requireOwner(session, in: roomId, to: "edit products", catalogue)
                return try await self.editProduct(itemNumber, changes: changes, roomId: roomId)
            }
        case .pop(let session, let roomId, let userId, let itemNumber, let custom):
            do {
                try await self.requireOwner(session, userId: userId, in: roomId, to: "pop products", catalogue)
                guard let product = try await catalogue.product(itemNumber, room: roomId) else {
                    throw LiveRoomError(ErrorCode.productNotFound, "there is no item \(itemNumber) in the catalogue")
                }
                guard product.onShelf else { throw LiveRoomError(ErrorCode.productOffShelf, "item \(itemNumber) is off the shelf") }
                shop(roomId).know(product)
                let popUp = PopUp(itemNumber: itemNumber, userId: userId, data: product.popUpMessage, poppedAt: EventTime.now().unixMillis)
                try await catalogue.setPopUp(popUp, room: roomId)
                await self.popped(popUp, in: roomId, by: session, custom: custom)
                await self.replays.start(roomId: roomId, itemNumber: itemNumber, userId: userId)
            } catch {
                let error = Self.catalogueError(error)
                self.send(.onPopProduct(itemNumber: itemNumber, code: error.code, message: error.message, data: nil), to: session)
            }
        case .unpop(let session, let roomId, let userId):
            do {
                try await self.requireOwner(session, userId: userId, in: roomId, to: "end pop-ups", catalogue)
            } catch {
                return self.send(.error(Self.catalogueError(error), requestType: "unpopProduct"), to: session)
            }
            try? await catalogue.setPopUp(nil, room: roomId)
            await self.broadcast(.onPopUpChanged(userId: userId, itemNumber: nil, data: nil), in: roomId)
            await self.replays.stop(roomId: roomId)
        case .remove(let session, let roomId, let itemNumber):
            await self.answer(session, request: "removeProduct", itemNumber: itemNumber) {
                try await self.requireOwner(session, in: roomId, to: "remove products", catalogue)
                try await self.removeProduct(itemNumber, roomId: roomId)
                return nil
            }
        case .removeReplay(let session, let roomId, let replayId):
            do {
                try await self.requireOwner(session, in: roomId, to: "remove replays", catalogue)
                let product = try await self.removeReplay(replayId, roomId: roomId)
                self.send(
                    .onProductResult(request: "removeReplay", itemNumber: product.itemNumber, code: 0, message: "ok", product: product.json), to: session)
            } catch {
                let error = Self.catalogueError(error)
                self.send(.onProductResult(request: "removeReplay", itemNumber: 0, code: error.code, message: error.message, product: nil), to: session)
            }
        case .buy(let session, let roomId, let userId, let itemNumber, let quantity, let requestId):
            guard let outbox = outboxes[session] else { return }
            buy(roomId: roomId, userId: userId, itemNumber: itemNumber, quantity: quantity, requestId: requestId, answer: outbox)
        case .owner(let session, let roomId, let userId, let grant):
            await changeOwner(userId, grant: grant, by: session, in: roomId, catalogue)
        case .pkAllowList(let session, let roomId, let rooms):
            await setPKAllowList(rooms, in: roomId, by: session)
        }
    }

    /// An owner of the room's shop sets its PK allow-list (without a shop, no user owns one,
    /// and the room's anchors set it); the room's machine keeps it.
    private func setPKAllowList(_ rooms: [RoomID], in roomId: String, by session: SessionID) async {
        do {
            if let store { try await requireOwner(session, in: roomId, to: "set the PK allow-list", store) }
            await seats.room(roomId)?.update { $0.setPKAllowList(rooms, in: roomId) }
        } catch {
            send(.error(Self.catalogueError(error), requestType: "setPKAllowList"), to: session)
        }
    }

    /// A page of the room's catalogue for `session`: at most `limit` products and 48 KiB from
    /// the `offset`th on, and the shop's owners with the first page.
    private func list(page offset: Int, limit: Int, of roomId: String, to session: SessionID, _ catalogue: any ShopStore) async {
        do {
            let products = try await catalogue.products(room: roomId)
            // The owners come with the first page (a client pages through the rest).
            let owners = offset == 0 ? try await catalogue.shopOwners(room: roomId) : nil
            let shop = shop(roomId)
            for product in products { shop.know(product) }
            // No answer grows with the catalogue (500 products of the largest fields would be 1.3 MB).
            let page = Product.runs(of: products.dropFirst(offset).prefix(limit).map(\.json), count: limit).first ?? []
            send(.onProductList(products: page, offset: offset, total: products.count), to: session)
            if let owners { send(.onShopOwners(owners: owners), to: session) }
        } catch {
            send(.error(Self.catalogueError(error), requestType: "listProducts"), to: session)
        }
    }

    /// An owner's grantShop or revokeShop: the room hears the owners after it; a shop keeps one.
    private func changeOwner(_ userId: String, grant: Bool, by session: SessionID, in roomId: String, _ catalogue: any ShopStore) async {
        do {
            try await requireOwner(session, in: roomId, to: grant ? "grant shop ownership" : "revoke shop ownership", catalogue)
            var owners = try await catalogue.shopOwners(room: roomId)
            if grant { owners.append(userId) } else { owners.removeAll { $0 == userId } }
            guard !owners.isEmpty else {
                throw LiveRoomError(ErrorCode.invalidParameter, "a shop keeps at least one owner: grant another one first", field: "userId")
            }
            await broadcast(.onShopOwners(owners: try await catalogue.setShopOwners(owners, room: roomId)), in: roomId)
        } catch {
            send(.error(Self.catalogueError(error), requestType: grant ? "grantShop" : "revokeShop"), to: session)
        }
    }

    /// Refuses a change of `roomId`'s shop by `session`'s user (`userId` when the command names
    /// it) unless the user is one of the shop's owners (-7317).
    private func requireOwner(_ session: SessionID, userId: String? = nil, in roomId: String, to action: String, _ catalogue: any ShopStore) async throws {
        guard let userId = userId ?? seats.seat(of: session)?.userId else {
            throw LiveRoomError(ErrorCode.notInRoom, "you left the room before the shop could \(action)")
        }
        try await catalogue.requireShopOwner(userId, room: roomId, to: action)
    }

    /// `userId` entered `roomId` as an anchor: when the room's shop has no owner yet, the user
    /// becomes its owner (in the room's order of catalogue commands, so before any it sends).
    func claim(_ roomId: String, by userId: String) {
        guard let catalogue = store else { return }
        inOrder(roomId) {
            do {
                _ = try await catalogue.claimShop(room: roomId, userId: userId)
            } catch {
                self.logger.warning("Claiming a shop failed", metadata: [LogKey.room: "\(roomId)", LogKey.user: "\(userId)", LogKey.error: "\(error)"])
            }
        }
    }

    /// The admin API names the shop's owners; the room hears them.
    func setOwners(_ owners: [String], roomId: String) async throws -> [String] {
        let stored = try await requireStore().setShopOwners(owners, room: roomId)
        await broadcast(.onShopOwners(owners: stored), in: roomId)
        return stored
    }

    /// The shop's owners, for the admin API.
    func owners(roomId: String) async throws -> [String] {
        try await requireStore().shopOwners(room: roomId)
    }

    // MARK: Changes an anchor or the admin API makes; the room hears of each.

    private func requireStore() throws -> any ShopStore {
        guard let catalogue = store else { throw LiveRoomError(ErrorCode.catalogueUnavailable, "this server keeps no catalogue") }
        return catalogue
    }

    /// Adds the product `fields` describe (checked here).
    func addProduct(_ fields: JSONValue, roomId: String) async throws -> Product {
        let product = try Product.parseNew(JSONFields(fields, path: "product", code: ErrorCode.invalidProduct))
        let stored = try await requireStore().addProduct(product, room: roomId)
        productChanged(stored, in: roomId)
        return stored
    }

    /// Applies `changes`, which must carry the `version` they were based on.
    func editProduct(_ itemNumber: Int, changes: JSONValue, roomId: String) async throws -> Product {
        let store = try requireStore()
        let fields = try JSONFields(changes, path: "changes", code: ErrorCode.invalidProduct)
        guard let version = try fields.int("version", code: ErrorCode.invalidProduct) else {
            throw fields.invalid("version", "is required: the version the changes are based on", code: ErrorCode.invalidProduct)
        }
        guard var product = try await store.product(itemNumber, room: roomId) else {
            throw LiveRoomError(ErrorCode.productNotFound, "there is no item \(itemNumber) in the catalogue")
        }
        try product.apply(fields)
        product.version = version
        let stored = try await store.replaceProduct(product, room: roomId)
        productChanged(stored, in: roomId)
        return stored
    }

    /// Removes a product with its replays' files (and ends the recording of one).
    func removeProduct(_ itemNumber: Int, roomId: String) async throws {
        let replays = try await requireStore().removeProduct(itemNumber, room: roomId)
        self.replays.deleteFiles(replays)
        productRemoved(itemNumber, in: roomId)
        await self.replays.stop(roomId: roomId, item: itemNumber)
    }

    /// Removes a replay and its file.
    func removeReplay(_ replayId: String, roomId: String) async throws -> Product {
        let (replay, product) = try await requireStore().removeReplay(replayId, room: roomId)
        self.replays.deleteFiles([replay])
        productChanged(product, in: roomId)
        return product
    }

    /// Confirms payment of a reserved order (`paid`) or cancels it, returning its stock.
    func settleOrder(_ orderId: String, as state: Order.State) async throws -> Order {
        let (order, product) = try await requireStore().settle(orderId: orderId, to: state, now: EventTime.now().unixMillis)
        if let product { productChanged(product, in: order.roomId) }
        webhooks?.enqueue([WebhookEvents.order(order, at: order.updatedAt)])
        return order
    }

    /// Runs a change and answers its requester with onProductResult.
    private func answer(_ session: SessionID, request: String, itemNumber: Int, _ change: () async throws -> Product?) async {
        do {
            let product = try await change()
            send(.onProductResult(request: request, itemNumber: itemNumber, code: 0, message: "ok", product: product?.json), to: session)
        } catch {
            let error = Self.catalogueError(error)
            send(.onProductResult(request: request, itemNumber: itemNumber, code: error.code, message: error.message, product: nil), to: session)
        }
    }

    /// A pop-up is up: its anchor hears the message (to send as SEI too), the room hears of it,
    /// and with `custom` everyone else gets it as a high-priority custom message.
    private func popped(_ popUp: PopUp, in roomId: String, by session: SessionID, custom: Bool) async {
        send(.onPopProduct(itemNumber: popUp.itemNumber, code: 0, message: "ok", data: popUp.data), to: session)
        guard let room = seats.room(roomId) else { return }
        await room.broadcast(.onPopUpChanged(userId: popUp.userId, itemNumber: popUp.itemNumber, data: popUp.data))
        if custom {
            let data = popUp.data
            await room.update { $0.popUpMessage(data, from: session) }
        }
    }

    /// Expires unpaid reservations; rooms hear of the stock that came back.
    func expireOrders() async {
        guard let catalogue = store else { return }
        do {
            for (roomId, product, order) in try await catalogue.expireOrders(now: EventTime.now().unixMillis) {
                productChanged(product, in: roomId)
                webhooks?.enqueue([WebhookEvents.order(order, at: order.updatedAt)])
            }
        } catch {
            logger.warning("Expiring orders failed", metadata: [LogKey.error: "\(error)"])
        }
    }

    /// Sends the room's current pop-up, if one is up, to a newcomer.
    func sendPopUp(to session: SessionID, roomId: String) {
        guard let catalogue = store else { return }
        Task {
            guard let popUp = try? await catalogue.popUp(room: roomId) else { return }
            self.send(.onPopUpChanged(userId: popUp.userId, itemNumber: popUp.itemNumber, data: popUp.data), to: session)
        }
    }

    /// Sends `event` to everyone in the room (encoded once).
    private func broadcast(_ event: ServerEvent, in roomId: String) async {
        await seats.room(roomId)?.broadcast(event)
    }

    private func send(_ event: ServerEvent, to session: SessionID) {
        outboxes.send(event, to: [session])
    }

    static func catalogueError(_ error: any Error) -> LiveRoomError {
        error as? LiveRoomError ?? LiveRoomError(ErrorCode.catalogueUnavailable, "the catalogue could not be read or written; nothing changed")
    }

    func productChanged(_ product: Product, in roomId: String) {
        shop(roomId).changed(product, seats: seats)
    }

    func productRemoved(_ itemNumber: Int, in roomId: String) {
        shop(roomId).removed(itemNumber, seats: seats)
    }
}
