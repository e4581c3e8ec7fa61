/// The parameters of `enterRoom`, as TRTCParams carries them.
public struct EnterRoomParams: Sendable, Hashable {
    public var sdkAppId: UInt64
    public var userId: String
    public var userSig: String
    /// TRTC's integer room id; 0 when not set. When set it wins over ``strRoomId``, as in TRTC.
    public var roomId: UInt32
    public var strRoomId: String
    public var role: Role
    /// The user's permission ticket for this room (TRTC's `privateMapKey`); empty for none.
    public var privateMapKey: String

    public init(
        sdkAppId: UInt64, userId: String, userSig: String, roomId: UInt32 = 0, strRoomId: String = "", role: Role, privateMapKey: String = ""
    ) {
        self.privateMapKey = privateMapKey
        self.sdkAppId = sdkAppId
        self.userId = userId
        self.userSig = userSig
        self.roomId = roomId
        self.strRoomId = strRoomId
        self.role = role
    }

    /// Parameters that enter `room`.
    public init(sdkAppId: UInt64, userId: String, userSig: String, room: RoomID, role: Role, privateMapKey: String = "") {
        switch room {
        case .number(let number):
            self.init(sdkAppId: sdkAppId, userId: userId, userSig: userSig, roomId: number, role: role, privateMapKey: privateMapKey)
        case .string(let id):
            self.init(sdkAppId: sdkAppId, userId: userId, userSig: userSig, strRoomId: id, role: role, privateMapKey: privateMapKey)
        }
    }

    /// The room entered: the numeric room when ``roomId`` is set, otherwise the string room
    /// (which may be empty, a room id the room core refuses).
    public var room: RoomID {
        roomId != 0 ? .number(roomId) : .string(strRoomId)
    }
}
