/// The parameters of `enterRoom`, as TRTCParams carries them.
public struct EnterRoomParams: Sendable, Hashable {
    public var sdkAppId: UInt64
    public var userId: String
    public var userSig: String
    public var strRoomId: String
    public var role: Role
    /// The user's permission ticket for this room (TRTC's `privateMapKey`); empty for none.
    public var privateMapKey: String

    public init(sdkAppId: UInt64, userId: String, userSig: String, strRoomId: String, role: Role, privateMapKey: String = "") {
        self.privateMapKey = privateMapKey
        self.sdkAppId = sdkAppId
        self.userId = userId
        self.userSig = userSig
        self.strRoomId = strRoomId
        self.role = role
    }
}
