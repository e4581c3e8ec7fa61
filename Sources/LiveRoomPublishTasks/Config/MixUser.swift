import LiveRoomProtocol

/// A user whose stream is an input of a task (TRTC's `TRTCUser`, the admin API's `MixUserInfo`).
///
/// `roomId` is the room's key (``RoomID/key``): a `strRoomId` as it is, an `intRoomId` the
/// numeric room's key, so room 123 and room "123" stay apart. An empty `roomId` means the room
/// the task runs in.
public struct MixUser: Sendable, Hashable, Codable, CustomStringConvertible {
    public var userId: String
    public var roomId: String

    public init(userId: String, roomId: String = "") {
        self.userId = userId
        self.roomId = roomId
    }

    /// `userId` in `room`.
    public init(userId: String, room: RoomID) {
        self.init(userId: userId, roomId: room.key)
    }

    /// The same user with an empty room replaced by `taskRoomId`, so users compare across rooms.
    public func resolved(in taskRoomId: String) -> MixUser {
        roomId.isEmpty ? MixUser(userId: userId, roomId: taskRoomId) : self
    }

    public var description: String { roomId.isEmpty ? userId : "\(userId)@\(roomId)" }
}

/// Which of a user's video streams an input takes (TRTC's `TRTCVideoStreamType`).
public enum MixStreamType: Int, Sendable, Hashable, Codable {
    /// The camera stream (`TRTCVideoStreamTypeBig`, admin `StreamType` 0).
    case big = 0
    /// The low-resolution camera stream (`TRTCVideoStreamTypeSmall`).
    case small = 1
    /// The screen-share sub stream (`TRTCVideoStreamTypeSub`, admin `StreamType` 1).
    case sub = 2
}
