import Foundation
import HTTPTypes
import LiveRoomAdmin
import LiveRoomCommerce
import LiveRoomCore
import LiveRoomProtocol
import LiveRoomPublishTasks
import LiveRoomStore

/// The TRTC-style admin REST API (`POST /v1/<Action>`) and the IM-compatible group message
/// (`POST /v4/group_open_http_svc/send_group_msg`). Answers follow Tencent Cloud API 3.0
/// (`{"Response": {…, "RequestId"}}`) and IM REST (`{"ActionStatus", "ErrorCode", "ErrorInfo"}`).
struct AdminAPI: Sendable {
    let hub: RoomHub
    /// The shop and the room history: this node's SQLite database, or PostgreSQL in cluster mode.
    let store: any ShopStore & RoomHistoryStore
    let sdkAppId: UInt64

    /// Runs one `/v1/<Action>` call; the result is the `Response` object's fields.
    func call(_ action: String, body: String) async -> JSONValue {
        var response: [String: JSONValue]
        do throws(CloudAPIError) {
            let request = try AdminRequest.parse(action: action, body: body, sdkAppId: sdkAppId, now: Int(Date().timeIntervalSince1970))
            response = try await run(request)
        } catch {
            response = ["Error": ["Code": .string(error.code), "Message": .string(error.message)]]
        }
        response["RequestId"] = .string(UUID().uuidString.lowercased())
        return ["Response": .object(response)]
    }

    /// Cluster mode: the room lives on `node`, which did not answer the call forwarded to it.
    static func homeUnreachable(_ node: String) -> JSONValue {
        [
            "Response": [
                "Error": ["Code": "FailedOperation.HomeNodeUnreachable", "Message": .string("the room lives on node \(node), which did not answer; try again")],
                "RequestId": .string(UUID().uuidString.lowercased()),
            ]
        ]
    }

    /// ``homeUnreachable(_:)`` in IM's format (error 10010, as for a room that cannot be reached).
    static func imHomeUnreachable(_ node: String) -> JSONValue {
        ["ActionStatus": "FAIL", "ErrorCode": 10010, "ErrorInfo": .string("the room lives on node \(node), which did not answer; try again")]
    }

    static func authFailure(_ failure: AdminAuth.Failure) -> JSONValue {
        let code = if case .missing = failure { "AuthFailure.MissingCredentials" } else { "AuthFailure.SignatureFailure" }
        return ["Response": ["Error": ["Code": .string(code), "Message": .string(failure.message)], "RequestId": .string(UUID().uuidString.lowercased())]]
    }

    private func run(_ request: AdminRequest) async throws(CloudAPIError) -> [String: JSONValue] {
        switch request {
        case .dismissRoom(let room):
            try await Self.roomMustExist { () async throws(LiveRoomError) in try await hub.dismissRoom(room.key) }
            return [:]
        case .removeUsers(let room, let userIds):
            let notFound = try await Self.roomMustExist { () async throws(LiveRoomError) in try await hub.removeUsers(userIds, from: room.key) }
            return notFound.isEmpty ? [:] : ["NotFoundUserIds": .array(notFound.map { .string($0) })]
        case .describeRoom(let requested):
            return try await describeRoom(requested)
        case .describeRoomInfo(let start, let end, let pageNumber, let pageSize, let requested):
            return try await describeRoomInfo(from: start, to: end, pageNumber: pageNumber, pageSize: pageSize, room: requested)
        case .startPublishCdnStream(let request, let config):
            let taskId = try await Self.taskCall { () async throws(LiveRoomError) in try await hub.tasks.startAdminTask(config, roomId: request.roomId) }
            return ["TaskId": .string(taskId)]
        case .updatePublishCdnStream(let request):
            try await Self.taskCall { () async throws(LiveRoomError) in try await hub.tasks.updateAdminTask(request) }
            return ["TaskId": .string(request.taskId)]
        case .stopPublishCdnStream(let taskId):
            try await Self.taskCall { () async throws(LiveRoomError) in try await hub.tasks.stopAdminTask(taskId) }
            return ["TaskId": .string(taskId)]
        case .describeProducts(let room):
            let products = try await Self.shopCall { try await store.products(room: room.key) }
            return ["Products": .array(products.map(\.json))]
        case .addProduct(let room, let product):
            return ["Product": try await Self.shopCall { try await hub.shops.addProduct(product, roomId: room.key) }.json]
        case .modifyProduct(let room, let itemNumber, let changes):
            return ["Product": try await Self.shopCall { try await hub.shops.editProduct(itemNumber, changes: changes, roomId: room.key) }.json]
        case .removeProduct(let room, let itemNumber):
            try await Self.shopCall { try await hub.shops.removeProduct(itemNumber, roomId: room.key) }
            return [:]
        case .removeReplay(let room, let replayId):
            return ["Product": try await Self.shopCall { try await hub.shops.removeReplay(replayId, roomId: room.key) }.json]
        case .describeOrders(let room, let state, let offset, let limit):
            let (total, orders) = try await Self.shopCall {
                try await store.orders(room: room.key, state: state.flatMap(Order.State.init), offset: offset, limit: limit)
            }
            return ["Total": .number(Double(total)), "Orders": .array(orders.map(\.json))]
        case .confirmOrder(let orderId):
            return ["Order": try await Self.shopCall { try await hub.shops.settleOrder(orderId, as: .paid) }.json]
        case .cancelOrder(let orderId):
            return ["Order": try await Self.shopCall { try await hub.shops.settleOrder(orderId, as: .cancelled) }.json]
        case .describeShopOwners(let room):
            return ["UserIds": .array(try await Self.shopCall { try await hub.shops.owners(roomId: room.key) }.map { .string($0) })]
        case .setShopOwners(let room, let userIds):
            return ["UserIds": .array(try await Self.shopCall { try await hub.shops.setOwners(userIds, roomId: room.key) }.map { .string($0) })]
        case .setPKAllowList(let room, let allowed):
            try await Self.roomMustExist { () async throws(LiveRoomError) in try await hub.setPKAllowList(allowed, in: room.key) }
            return ["AllowedRoomIds": .array(allowed.map(\.json))]
        case .describePKBattles(let room, let limit):
            return ["Battles": .array(try await Self.shopCall { try await store.battles(room: room.key, limit: limit) }.map(\.json))]
        }
    }

    /// DescribeRoom: who is in the room now, its pop-up and its PK links.
    private func describeRoom(_ requested: RoomID) async throws(CloudAPIError) -> [String: JSONValue] {
        guard let room = await hub.describe(requested.key) else {
            throw CloudAPIError("FailedOperation.RoomNotExist", "\(requested) does not exist")
        }
        let users: [JSONValue] = room.users.map { user in
            let entry: [String: JSONValue] = [
                "UserId": .string(user.userId), "Role": .string(user.role.rawValue),
                "JoinTime": .number(Double(user.enteredAt / 1000)), "OnMic": .bool(user.onMic),
            ]
            return .object(entry)
        }
        // The product presented now, if any (LiveRoom's addition).
        var popUp: JSONValue = .null
        if let current = try? await store.popUp(room: requested.key) {
            popUp = [
                "ItemNumber": .number(Double(current.itemNumber)), "UserId": .string(current.userId), "Data": .string(current.data),
                "PopTime": .number(Double(current.poppedAt / 1000)),
            ]
        }
        // Its cross-room PK links (LiveRoom's addition): each with this room's anchor and the other room's.
        let links: [JSONValue] = await hub.pkLinks(of: requested.key).map { link in
            let (local, remote) = link.caller.roomId == requested.key ? (link.caller, link.callee) : (link.callee, link.caller)
            return [
                "UserId": .string(local.userId), "RemoteRoomId": RoomID(key: remote.roomId).json, "RemoteUserId": .string(remote.userId),
                "StartTime": .number(Double(link.since / 1000)),
            ]
        }
        // A numeric room's RoomId is a number, a string room's a string, as in TRTC's callbacks.
        return [
            "RoomId": room.room.json, "CreateTime": .number(Double(room.createdAt / 1000)), "UserList": .array(users), "PopUp": popUp,
            "PKLinks": .array(links),
        ]
    }

    /// DescribeRoomInformation: a page of the room history.
    private func describeRoomInfo(from start: Int, to end: Int, pageNumber: Int, pageSize: Int, room requested: RoomID?) async throws(CloudAPIError) -> [String: JSONValue] {
        let total: Int
        let rooms: [RoomHistoryEntry]
        do {
            (total, rooms) = try await store.roomHistory(
                from: Int64(start) * 1000, to: Int64(end) * 1000 + 999, roomId: requested?.key, offset: pageNumber * pageSize, limit: pageSize)
        } catch {
            throw CloudAPIError("InternalError", "the room history cannot be read")
        }
        let list: [JSONValue] = rooms.map { room in
            let id = RoomID(key: room.roomId)
            let destroyTime: JSONValue = room.dissolvedAt.map { .number(Double($0 / 1000)) } ?? .null
            let reason: JSONValue = room.dissolveReason.map { .string($0) } ?? .null
            let users: [JSONValue] = room.userIds.map { .string($0) }
            let entry: [String: JSONValue] = [
                "RoomString": .string(id.text), "RoomId": id.json, "CreateTime": .number(Double(room.createdAt / 1000)),
                "DestroyTime": destroyTime, "IsFinished": .bool(room.dissolvedAt != nil), "DestroyReason": reason,
                "UserIds": .array(users),
            ]
            return .object(entry)
        }
        return ["Total": .number(Double(total)), "RoomList": .array(list)]
    }

    /// Runs a catalogue or order operation, turning its error into the Tencent Cloud error name.
    private static func shopCall<T>(_ body: () async throws -> T) async throws(CloudAPIError) -> T {
        do {
            return try await body()
        } catch {
            throw AdminRequest.cloudError(RoomShops.catalogueError(error))
        }
    }

    /// Runs a publish task operation, turning its error into the Tencent Cloud error name.
    private static func taskCall<T>(_ body: () async throws(LiveRoomError) -> T) async throws(CloudAPIError) -> T {
        do {
            return try await body()
        } catch {
            throw AdminRequest.cloudError(error)
        }
    }

    /// Runs a room operation, turning "no such room" into TRTC's error.
    private static func roomMustExist<T>(_ body: () async throws(LiveRoomError) -> T) async throws(CloudAPIError) -> T {
        do {
            return try await body()
        } catch {
            throw CloudAPIError("FailedOperation.RoomNotExist", error.message)
        }
    }

    // MARK: IM group message

    /// `send_group_msg`: delivers each TIMCustomElem's Data to every user in the room.
    func sendGroupMessage(body: String) async -> JSONValue {
        do throws(LiveRoomError) {
            let message = try GroupMessage(body)
            for data in message.datas {
                do {
                    // An IM group is a string room.
                    try await hub.sendGroupMessage(data, to: RoomID.string(message.groupId).key, priority: message.priority)
                } catch {
                    throw LiveRoomError(10010, error.message)
                }
            }
            return [
                "ActionStatus": "OK", "ErrorCode": 0, "ErrorInfo": "",
                "MsgTime": .number(Double(Int64(Date().timeIntervalSince1970))), "MsgSeq": .number(Double(message.random)),
            ]
        } catch {
            return ["ActionStatus": "FAIL", "ErrorCode": .number(Double(error.code)), "ErrorInfo": .string(error.message)]
        }
    }

    static func imAuthFailure(_ failure: AdminAuth.Failure) -> JSONValue {
        let code: Int
        switch failure {
        case .missing: code = 70002
        case .refused(let c, _): code = c == ErrorCode.userSigCheckFailed ? 70009 : 70003
        }
        return ["ActionStatus": "FAIL", "ErrorCode": .number(Double(code)), "ErrorInfo": .string(failure.message)]
    }
}
