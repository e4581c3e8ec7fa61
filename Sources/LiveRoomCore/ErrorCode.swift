/// Numeric error codes. TRTC's where TRTC has one; LiveRoom's own (-7xxx) elsewhere.
/// Every error sent to a client carries one of these and a readable message.
public enum ErrorCode {
    /// ERR_TRTC_INVALID_SDK_APPID: unknown or missing SDKAppID.
    public static let invalidSdkAppId = -3317
    /// ERR_TRTC_INVALID_ROOM_ID: empty room id.
    public static let invalidRoomId = -3318
    /// ERR_TRTC_INVALID_USER_ID: empty or over-32-byte user id.
    public static let invalidUserId = -3319
    /// ERR_TRTC_INVALID_USER_SIG: empty or malformed UserSig.
    public static let invalidUserSig = -3320
    /// ERR_TRTC_USER_SIG_CHECK_FAILED: signature, app or user mismatch, or expired.
    public static let userSigCheckFailed = -100018
    /// ERR_TRTC_ENTER_ROOM_REFUSED: enterRoom on a connection that is already in a room.
    public static let enterRoomRefused = -3340
    /// ERR_TRTC_PK caller is not an anchor (cross-room PK).
    public static let pkCallerIsAudience = -3330
    /// Too many rooms in one cross-room PK.
    public static let tooManyPKRooms = -102032

    /// The request needs the connection to be in a room first.
    public static let notInRoom = -7001
    /// The room already has the most anchors it may have.
    public static let tooManyAnchors = -7002
    /// switchRole to anchor without an accepted mic request or invitation.
    public static let micApprovalRequired = -7003
    /// Only an anchor may do this (accept, reject, invite, end mic).
    public static let anchorOnly = -7004
    /// Only an audience member may do this (request mic, answer an invitation).
    public static let audienceOnly = -7005
    /// The named user, request or invitation does not exist in this room.
    public static let noSuchUserOrRequest = -7006
    /// A custom message with a cmdID outside 1–10 or data over 1 KB.
    public static let invalidCustomMessage = -7007
    /// Over the custom message limit (30 messages/s, 8 KB/s per client).
    public static let customMessageRateLimited = -7008
    /// The user is not a mic-connection co-host (endMic on the room's own anchor).
    public static let notCoHost = -7009

    /// Only anchors publish: an audience member's publish is refused.
    public static let audienceCannotPublish = -7010
    /// The SDP offer cannot be used (malformed, no usable codec, no ICE or DTLS parameters).
    public static let badSessionDescription = -7011
    /// The anchor to subscribe to is not publishing.
    public static let notPublishing = -7012

    /// The signaling frame is not valid JSON.
    public static let malformedJSON = -7100
    /// The signaling message has an unknown `type`.
    public static let unknownRequest = -7101
    /// A required field is missing.
    public static let missingField = -7102
    /// A field has the wrong type or an invalid value.
    public static let invalidField = -7103
}

/// An error to report to a client: a code from ``ErrorCode`` and a readable message.
public struct LiveRoomError: Error, Sendable, Hashable, CustomStringConvertible {
    public var code: Int
    public var message: String

    public init(_ code: Int, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
