import Foundation
import HTTPTypes
import LiveRoomCore
import LiveRoomProtocol
import LiveRoomPublishTasks
import LiveRoomStore

/// The TRTC-style admin REST API (`POST /v1/<Action>`) and the IM-compatible group message
/// (`POST /v4/group_open_http_svc/send_group_msg`). Answers follow Tencent Cloud API 3.0
/// (`{"Response": {…, "RequestId"}}`) and IM REST (`{"ActionStatus", "ErrorCode", "ErrorInfo"}`).
struct AdminAPI: Sendable {
    let hub: RoomHub
    let store: RoomStore
    let sdkAppId: UInt64

    /// A Tencent Cloud API 3.0 error: a dotted code name and a message.
    struct CloudError: Error {
        var code: String
        var message: String
        init(_ code: String, _ message: String) {
            self.code = code
            self.message = message
        }
    }

    /// Unix times (seconds) an admin call may name: 1970 to 2100. Milliseconds of any of them fit
    /// an Int64, so a huge `EndTime` is refused instead of overflowing.
    static let unixTimes = 0...4_102_444_800
    /// The highest `PageNumber` of `DescribeRoomInfo`: with 100 rooms a page, ten million rooms.
    static let maxPageNumber = 100_000

    static let actions = [
        "DismissRoomByStrRoomId", "RemoveUserByStrRoomId", "DescribeRoom", "DescribeRoomInfo",
        "StartPublishCdnStream", "UpdatePublishCdnStream", "StopPublishCdnStream",
    ]

    /// Runs one `/v1/<Action>` call; the result is the `Response` object's fields.
    func call(_ action: String, body: String) async -> JSONValue {
        let requestId = UUID().uuidString.lowercased()
        var response: [String: JSONValue]
        do {
            let params = try parseBody(body)
            response = try await run(action, params)
        } catch let error as CloudError {
            response = ["Error": ["Code": .string(error.code), "Message": .string(error.message)]]
        } catch {
            response = ["Error": ["Code": "InternalError", "Message": .string("\(error)")]]
        }
        response["RequestId"] = .string(requestId)
        return ["Response": .object(response)]
    }

    static func authFailure(_ failure: AdminAuth.Failure) -> JSONValue {
        let code = if case .missing = failure { "AuthFailure.MissingCredentials" } else { "AuthFailure.SignatureFailure" }
        return ["Response": ["Error": ["Code": .string(code), "Message": .string(failure.message)], "RequestId": .string(UUID().uuidString.lowercased())]]
    }

    private func parseBody(_ body: String) throws -> JSONFields {
        let text = body.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let value = text.isEmpty ? [:] : try? JSONValue.parse(text) else {
            throw CloudError("InvalidParameter.JsonParseError", "the request body is not valid JSON")
        }
        guard value.objectValue != nil else {
            throw CloudError("InvalidParameter", "the request body must be a JSON object, not \(value.typeName)")
        }
        // Tencent Cloud callers may send integers as text ("SdkAppId": "1400000000").
        return try JSONFields(value, integersMayBeText: true)
    }

    private func run(_ action: String, _ p: JSONFields) async throws -> [String: JSONValue] {
        guard Self.actions.contains(action) else {
            throw CloudError("InvalidAction", "unknown action \(action.quoted); known: \(Self.actions.joined(separator: ", "))")
        }
        let params = JSONValue.object(p.object)
        let appId = try Self.read { () throws(LiveRoomError) in try p.requiredInt("SdkAppId") }
        guard appId == Int(sdkAppId) else {
            throw CloudError("InvalidParameter.SdkAppId", "SdkAppId \(appId) is not this server's (\(sdkAppId))")
        }
        switch action {
        case "DismissRoomByStrRoomId":
            let roomId = try Self.roomId(p)
            try await Self.roomMustExist(roomId) { () async throws(LiveRoomError) in try await hub.dismissRoom(roomId) }
            return [:]
        case "RemoveUserByStrRoomId":
            let roomId = try Self.roomId(p)
            let userIds = try Self.read { () throws(LiveRoomError) in
                guard let userIds = try p.stringArray("UserIds") else { throw p.missing("UserIds") }
                return userIds
            }
            guard !userIds.isEmpty, userIds.count <= 10 else {
                throw CloudError("InvalidParameter.UserIds", "UserIds must hold 1 to 10 user ids, not \(userIds.count)")
            }
            let notFound = try await Self.roomMustExist(roomId) { () async throws(LiveRoomError) in try await hub.removeUsers(userIds, from: roomId) }
            return notFound.isEmpty ? [:] : ["NotFoundUserIds": .array(notFound.map { .string($0) })]
        case "DescribeRoom":
            let roomId = try Self.roomId(p)
            guard let room = await hub.describe(roomId) else {
                throw CloudError("FailedOperation.RoomNotExist", "room \(roomId.quoted) does not exist")
            }
            let users: [JSONValue] = room.users.map { user in
                let entry: [String: JSONValue] = [
                    "UserId": .string(user.userId), "Role": .string(user.role.rawValue),
                    "JoinTime": .number(Double(user.enteredAt / 1000)), "OnMic": .bool(user.onMic),
                ]
                return .object(entry)
            }
            return ["RoomId": .string(room.roomId), "CreateTime": .number(Double(room.createdAt / 1000)), "UserList": .array(users)]
        case "DescribeRoomInfo":
            let now = Int(Date().timeIntervalSince1970)
            let (start, end, pageNumber, pageSize, roomId) = try Self.read { () throws(LiveRoomError) in
                (
                    try p.int("StartTime", in: Self.unixTimes) ?? (now - 86_400), try p.int("EndTime", in: Self.unixTimes) ?? now,
                    try p.int("PageNumber", in: 0...Self.maxPageNumber) ?? 0,
                    try p.int("PageSize", in: 1...100) ?? 100, try p.string("RoomId")
                )
            }
            guard start <= end else { throw CloudError("InvalidParameter.StartTime", "StartTime is after EndTime") }
            let (total, rooms) = try store.roomHistory(
                from: Int64(start) * 1000, to: Int64(end) * 1000 + 999, roomId: roomId, offset: pageNumber * pageSize, limit: pageSize)
            let list: [JSONValue] = rooms.map { room in
                let destroyTime: JSONValue = room.dissolvedAt.map { .number(Double($0 / 1000)) } ?? .null
                let reason: JSONValue = room.dissolveReason.map { .string($0) } ?? .null
                let users: [JSONValue] = room.userIds.map { .string($0) }
                let entry: [String: JSONValue] = [
                    "RoomString": .string(room.roomId), "CreateTime": .number(Double(room.createdAt / 1000)),
                    "DestroyTime": destroyTime, "IsFinished": .bool(room.dissolvedAt != nil), "DestroyReason": reason,
                    "UserIds": .array(users),
                ]
                return .object(entry)
            }
            return ["Total": .number(Double(total)), "RoomList": .array(list)]
        case "StartPublishCdnStream":
            let (request, config) = try await Self.taskCall { () throws(LiveRoomError) in try AdminPublishCdnStreamRequest.parseStart(params) }
            let taskId = try await Self.taskCall { () async throws(LiveRoomError) in try await hub.startAdminTask(config, roomId: request.roomId) }
            return ["TaskId": .string(taskId)]
        case "UpdatePublishCdnStream":
            let request = try await Self.taskCall { () throws(LiveRoomError) in try AdminPublishCdnStreamRequest.parseUpdate(params) }
            try await Self.taskCall { () async throws(LiveRoomError) in try await hub.updateAdminTask(request) }
            return ["TaskId": .string(request.taskId)]
        case "StopPublishCdnStream":
            let taskId = try await Self.taskCall { () throws(LiveRoomError) in try AdminPublishCdnStreamRequest.parseStopTaskId(params) }
            try await Self.taskCall { () async throws(LiveRoomError) in try await hub.stopAdminTask(taskId) }
            return ["TaskId": .string(taskId)]
        default:
            throw CloudError("InvalidAction", "unknown action \(action.quoted)")
        }
    }

    /// Reads parameters, turning a reading error into `MissingParameter` or `InvalidParameter.<Name>`.
    private static func read<T>(_ body: () throws(LiveRoomError) -> T) throws -> T {
        do {
            return try body()
        } catch where error.code == ErrorCode.missingField {
            throw CloudError("MissingParameter", error.message)
        } catch {
            throw CloudError("InvalidParameter.\(error.field ?? "")", error.message)
        }
    }

    /// `RoomId`: a non-empty string.
    private static func roomId(_ p: JSONFields) throws -> String {
        let roomId = try read { () throws(LiveRoomError) in try p.string("RoomId") } ?? ""
        guard !roomId.isEmpty else {
            throw CloudError("InvalidParameter.RoomId", "RoomId is missing or empty")
        }
        return roomId
    }

    /// Runs a publish task operation, turning its error into the Tencent Cloud error name
    /// with LiveRoom's numeric code in the message.
    private static func taskCall<T>(_ body: () async throws(LiveRoomError) -> T) async throws -> T {
        do {
            return try await body()
        } catch {
            throw CloudError(ErrorCode.cloudErrorName(for: error), "\(error.code): \(error.message)")
        }
    }

    /// Runs a room operation, turning "no such room" into TRTC's error.
    private static func roomMustExist<T>(_ roomId: String, _ body: () async throws(LiveRoomError) -> T) async throws -> T {
        do {
            return try await body()
        } catch {
            throw CloudError("FailedOperation.RoomNotExist", error.message)
        }
    }

    // MARK: IM group message

    /// `send_group_msg`: delivers each TIMCustomElem's Data to every user in the room.
    func sendGroupMessage(body: String) async -> JSONValue {
        do throws(LiveRoomError) {
            let message = try GroupMessage(body)
            for data in message.datas {
                do {
                    try await hub.sendGroupMessage(data, to: message.groupId, priority: message.priority)
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

    /// `send_group_msg`'s parameters, read with IM's error codes: 10004 a bad parameter, 10015 a bad `GroupId`.
    struct GroupMessage {
        var groupId: String
        var datas: [String]
        var priority: MessagePriority
        /// `Random`, echoed as `MsgSeq`.
        var random: Int

        init(_ body: String) throws(LiveRoomError) {
            guard let value = try? JSONValue.parse(body) else { throw LiveRoomError(10004, "the request body is not a JSON object") }
            let f = try JSONFields(value, missingCode: 10004, code: 10004)
            guard let groupId = try f.string("GroupId", code: 10015), !groupId.isEmpty else {
                throw LiveRoomError(10015, "GroupId is missing or empty", field: "GroupId")
            }
            guard let elements = try f.objectArray("MsgBody"), !elements.isEmpty else {
                throw LiveRoomError(10004, "MsgBody must be a non-empty array", field: "MsgBody")
            }
            var datas: [String] = []
            for element in elements {
                let type = try element.string("MsgType")
                guard type == "TIMCustomElem" else {
                    throw element.invalid("MsgType", "must be TIMCustomElem (the only type supported), not \(type ?? "missing")")
                }
                datas.append(try element.requiredFields("MsgContent").requiredString("Data"))
            }
            let priorityText = try f.string("MsgPriority") ?? "Normal"
            switch priorityText.lowercased() {
            case "high": priority = .high
            case "normal", "low", "lowest": priority = .normal
            default: throw f.invalid("MsgPriority", "must be High, Normal, Low or Lowest, not \(priorityText)")
            }
            self.groupId = groupId
            self.datas = datas
            random = f.value("Random")?.intValue ?? 0
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
