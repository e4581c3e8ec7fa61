/// Every numeric error code LiveRoom answers with: TRTC's where TRTC has one, LiveRoom's own
/// (-7xxx) elsewhere. Every error sent to a client or an admin caller carries one of these and
/// a readable message (``LiveRoomError``).
public enum ErrorCode {
    // MARK: TRTC's codes (entering a room, UserSig, cross-room PK)

    /// ERR_TRTC_INVALID_SDK_APPID: unknown or missing SDKAppID.
    public static let invalidSdkAppId = -3317
    /// ERR_TRTC_INVALID_ROOM_ID: empty, over 64 bytes, or a character outside TRTC's set.
    public static let invalidRoomId = -3318
    /// ERR_TRTC_INVALID_USER_ID: empty, over 32 bytes, or not only letters, digits, `_` and `-`.
    public static let invalidUserId = -3319
    /// ERR_TRTC_INVALID_USER_SIG: empty or malformed UserSig.
    public static let invalidUserSig = -3320
    /// ERR_TRTC_USER_SIG_CHECK_FAILED: signature, app or user mismatch, or expired.
    public static let userSigCheckFailed = -100018
    /// ERR_SERVER_INFO_PRIVILEGE_FLAG_ERROR: with `--require-private-map-key`, a PrivateMapKey
    /// that is missing, does not verify for this user and room, or lacks the privilege asked for.
    public static let privilegeCheckFailed = -100006
    /// The client lost its signaling connection and every reconnect attempt failed (TRTC's
    /// -3308, ERR_TRTC_REQUEST_ENTER_ROOM_TIMEOUT, which its SDKs report when they give up).
    public static let reconnectFailed = -3308
    /// ERR_TRTC_ENTER_ROOM_REFUSED: enterRoom on a connection that is already in a room.
    public static let enterRoomRefused = -3340
    /// ERR_ROOM_REQUEST_CONN_ROOM_TIMEOUT: a PK request (requestPK) was not answered in time.
    public static let pkRequestTimeout = -3326
    /// ERR_ROOM_REQUEST_CONN_ROOM_INVALID_PARAM: a cross-room PK request without a room or a
    /// user, naming the caller's own room, or a user id present in both rooms.
    public static let pkInvalidParameter = -3328
    /// ERR_CONNECT_OTHER_ROOM_AS_AUDIENCE: only anchors connect, disconnect or change PK links.
    public static let pkCallerIsAudience = -3330
    /// ERR_SERVER_CENTER_CONN_ROOM_REACH_MAX_NUM: the caller's room already connects with the
    /// most rooms (3), or has the most anchors in PK (10).
    public static let tooManyPKRooms = -102032
    /// ERR_SERVER_CENTER_CONN_ROOM_NOT_CONNED: the caller has no PK link (to that room).
    public static let pkNotConnected = -102042
    /// ERR_SERVER_CENTER_CONN_ROOM_FAILED: the other anchor rejected the PK request.
    public static let pkRejected = -102044
    /// ERR_SERVER_CENTER_CONN_ROOM_CONNED_ROOM_NOT_EXIST: the room to connect with does not exist.
    public static let pkRoomNotFound = -102046
    /// ERR_SERVER_CENTER_CONN_ROOM_CONNED_REACH_MAX_ROOM: the other room already connects with
    /// the most rooms, or has the most anchors in PK.
    public static let pkPeerRoomFull = -102047
    /// ERR_SERVER_CENTER_CONN_ROOM_CONNED_USER_NOT_EXIST: the user is not an anchor in that room.
    public static let pkUserNotFound = -102048

    // MARK: -7000…-7099: rooms, mic connection, custom messages, media negotiation

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
    /// The connection sent no successful `enterRoom` within the login deadline (`--login-timeout`)
    /// and is closed.
    public static let loginTimeout = -7013
    /// Over the limit of requests that change the room (roles, mic, mutes, publishing): 10 a
    /// second on average, in bursts of 20, per member.
    public static let roomChangeRateLimited = -7014
    /// The server has as many signaling connections as it allows (`--max-connections`); the
    /// connection is closed (1013, try again later).
    public static let serverFull = -7015
    /// The client's address (an IPv4 address, or an IPv6 /64) has as many signaling connections
    /// as the server allows one address (`--max-connections-per-address`); closed (1013).
    public static let tooManyConnectionsFromAddress = -7016
    /// The user id is already in as many rooms as one user may be in at once (`--max-rooms-per-user`).
    public static let tooManyRoomsForUser = -7017
    /// The server holds as many rooms as it allows (`--max-rooms`); existing rooms may still be entered.
    public static let tooManyRooms = -7018
    /// The same user id entered the same room from another connection, which takes over; this
    /// session is told so, then gets `onExitRoom` with reason 1.
    public static let replacedBySession = -7019
    /// (Client) A peer connection's path failed and ICE restarts found no other before consent
    /// ran out (30 s): the connection is closed; publishing stops, or the subscription ends.
    public static let mediaConnectionLost = -7020
    /// (Client) An SEI message that cannot be sent as given: empty, over 1000 bytes, bad hex,
    /// or a repeat count out of 1–30.
    public static let invalidSEIMessage = -7021
    /// (Client) SEI rides on video: the sender publishes none now (not publishing yet, video
    /// muted, or no --publish).
    public static let seiNeedsVideo = -7022
    /// (Cluster mode) The room lives on another node, which could not be reached and was not
    /// yet taken for dead within a few seconds; the connection is closed (1013): try again.
    public static let homeNodeUnreachable = -7023
    /// (Cluster mode) The room was opened on this node while it could not reach the cluster
    /// database, and lives on another node: the connection is closed (1012) so that the client
    /// reconnects and reaches the room's home.
    public static let roomMovedToAnotherNode = -7024

    // MARK: -7100…-7199: reading requests (signaling, the admin API)

    /// The signaling frame is not valid JSON.
    public static let malformedJSON = -7100
    /// The signaling message has an unknown `type` (or a server event an unknown `event`).
    public static let unknownRequest = -7101
    /// A required field is missing.
    public static let missingField = -7102
    /// A field has the wrong type or an invalid value.
    public static let invalidField = -7103

    // MARK: -7200…-7299: publish media stream tasks (`startPublishMediaStream`, the admin
    // `StartPublishCdnStream` family); messages name the offending field.

    /// The publish target is unusable: unknown mode, or a room target without `mixStreamIdentity`.
    public static let invalidPublishTarget = -7200
    /// A CDN URL is not an `rtmp://` or `rtmps://` URL with a host and a stream path.
    public static let invalidCdnUrl = -7201
    /// More than 10 CDN URLs in one task.
    public static let tooManyCdnUrls = -7202
    /// The same CDN URL twice in one task.
    public static let duplicateCdnUrl = -7203
    /// A CDN target without any URL.
    public static let missingCdnUrl = -7204
    /// Video encoding parameters out of range (frame rate, GOP, bitrate).
    public static let invalidVideoEncoding = -7205
    /// The output resolution is unusable (odd, too small or too large, one side zero).
    public static let invalidVideoResolution = -7206
    /// Audio encoding parameters out of range (sample rate, channels, bitrate).
    public static let invalidAudioEncoding = -7207
    /// A codec LiveRoom cannot encode (only H.264 and LC-AAC are supported).
    public static let unsupportedCodec = -7208
    /// More than 16 inputs (video layouts, audio users, or both together).
    public static let tooManyInputs = -7209
    /// A zOrder outside 0–15, or the same zOrder on two video layouts.
    public static let invalidZOrder = -7210
    /// A layout or watermark rect that is empty or not inside the canvas.
    public static let invalidLayoutRect = -7211
    /// A layout entry is malformed (fill mode, stream type, user, colour).
    public static let invalidLayout = -7212
    /// An unknown layout template (`MixLayoutMode` outside 1–5).
    public static let invalidLayoutMode = -7213
    /// A watermark is malformed (missing URL, text watermark).
    public static let invalidWatermark = -7214
    /// An audio mix user is malformed (missing user id, volume outside 0–100).
    public static let invalidAudioMixUser = -7215
    /// The canvas background (colour or image) is malformed.
    public static let invalidBackground = -7216
    /// The relayed stream (`SingleSubscribeParams`) is missing or malformed.
    public static let invalidRelaySource = -7217
    /// Any other parameter with the wrong type or value.
    public static let invalidParameter = -7218
    /// A required parameter is missing.
    public static let missingParameter = -7219

    /// No task with this id (or it has stopped).
    public static let taskNotFound = -7220
    /// Another task already publishes with the same mode to the same URL (or room identity).
    public static let conflictingTask = -7221
    /// `UpdatePublishCdnStream` with a `SequenceNumber` not above the last one.
    public static let staleSequenceNumber = -7222
    /// An update that would change the output resolution.
    public static let resolutionChange = -7223
    /// An update that would switch between audio-only and audio+video.
    public static let mediaKindChange = -7224
    /// An update that would switch between publishing to a CDN and into a room.
    public static let publishModeChange = -7225
    /// An update that would change the audio sample rate, channel count or codec.
    public static let audioFormatChange = -7226
    /// A client updating or stopping a task it did not start.
    public static let notTaskOwner = -7227
    /// Pushing to an RTMP URL failed after every retry (`onCdnStreamStateChanged` status 4).
    public static let cdnPushFailed = -7228
    /// The admin API named a room that does not exist.
    public static let roomNotFound = -7229
    /// The room already runs as many tasks as the server allows (`--max-tasks-per-room`).
    public static let tooManyTasks = -7230
    /// The user already runs as many tasks as one user may (`--max-tasks-per-user`).
    public static let tooManyTasksForUser = -7231
    /// The server already runs as many tasks as it allows (`--max-tasks`).
    public static let tooManyTasksOnServer = -7232
    /// The task (or the update) would take the server's video encoding over its budget in
    /// pixels a second (`--encoding-budget`); the message says what is left.
    public static let encodingBudgetExceeded = -7233
    /// A CDN or image URL whose destination the server's egress policy refuses (loopback,
    /// private, link-local, multicast and other special-use addresses, unless the operator
    /// allowed them with `--egress-allow`). The message is the same whatever listens there.
    public static let egressRefused = -7234
    /// An image (placeholder, background, watermark) that cannot be used: not an `http(s)` URL
    /// or a file name in the operator's image directory, not an image, too large, or not
    /// fetched in time. The task goes on and draws the placeholder colour instead.
    public static let imageUnavailable = -7235
    /// Task SEI parameters (`SeiParams`, `videoSeiParams`) out of range: payload type, UUID,
    /// content, interval.
    public static let invalidSEIParams = -7236

    // MARK: -7300…-7399: live shopping (catalogue, pop-ups, purchases)

    /// A product field missing or out of range (the message names it): no title, a negative or
    /// malformed price, negative stock, an over-long field, a URL that is not http(s).
    public static let invalidProduct = -7300
    /// No product with that item number in the room.
    public static let productNotFound = -7301
    /// An edit based on a version that is no longer the product's: someone else changed it first.
    public static let productVersionConflict = -7302
    /// A product with that item number is already in the room.
    public static let productExists = -7303
    /// The room's catalogue holds as many products as it may (500).
    public static let tooManyProducts = -7304
    /// The catalogue could not be read or written (the store failed); nothing changed.
    public static let catalogueUnavailable = -7305
    /// No replay with that id in the room.
    public static let replayNotFound = -7306
    /// Cluster mode: the shop's database (PostgreSQL) did not answer in time, or failed while
    /// committing. Unlike -7305 the request may have been carried out: list again, retry a
    /// purchase with the same requestId.
    public static let shopStoreNoAnswer = -7307
    /// Not enough stock left for the quantity asked.
    public static let soldOut = -7310
    /// The product is off the shelf: it cannot be popped or bought now.
    public static let productOffShelf = -7311
    /// The buyer would hold more than the product's `limitPerUser`.
    public static let purchaseLimitExceeded = -7312
    /// A quantity out of 1–100, or a request id over 64 characters.
    public static let invalidPurchase = -7313
    /// No order with that id.
    public static let orderNotFound = -7314
    /// The order is no longer reserved (already paid, cancelled or expired).
    public static let orderNotReserved = -7315
    /// Too many purchases wait for the store, in the room or on the server: retry in a moment
    /// (with the same requestId; nothing was reserved).
    public static let shopBusy = -7316
    /// Only the room's shop owners may change its catalogue, pop products, remove replays,
    /// start battles or grant ownership (``ShopOwners``).
    public static let notShopOwner = -7317
    /// A shop has at most 20 owners.
    public static let tooManyShopOwners = -7318

    // MARK: -7400…-7499: PK battles

    /// A battle duration outside 5–3600 seconds.
    public static let invalidPKBattle = -7400
    /// One of the rooms already runs a battle.
    public static let pkBattleRunning = -7401
    /// Battles are scored from the catalogue's orders; this server keeps none.
    public static let pkBattleUnavailable = -7402
    /// connectOtherRoom to an anchor who did not agree: it has not accepted a PK request
    /// (requestPK) from the caller, and its room's PK allow-list does not name the caller's
    /// room (unless the server runs with `--open-pk-links`, as TRTC does).
    public static let pkConsentRequired = -7403
    /// An anchor has 10 PK requests waiting already (asked by it, or waiting for its answer).
    public static let tooManyPKRequests = -7404

    /// The Tencent Cloud API 3.0 error name of a publish task, catalogue or order error, for the
    /// admin REST API (`{"Response": {"Error": {"Code": …}}}`). Other codes answer `InvalidParameter`.
    public static func cloudErrorName(for error: LiveRoomError) -> String {
        switch error.code {
        case invalidPublishTarget, tooManyCdnUrls: "InvalidParameter.PublishCdnParams"
        case invalidCdnUrl, duplicateCdnUrl: "InvalidParameter.PublishCdnUrl"
        case missingCdnUrl: "MissingParameter.PublishCdnUrls"
        case invalidVideoEncoding, unsupportedCodec: "InvalidParameter.EncodeParams"
        case invalidVideoResolution: "InvalidParameter.VideoResolution"
        case invalidAudioEncoding: "InvalidParameter.AudioEncodeParams"
        case tooManyInputs, invalidZOrder, invalidLayoutRect, invalidLayout: "InvalidParameter.MixLayoutList"
        case invalidLayoutMode: "InvalidParameter.MixLayoutMode"
        case invalidWatermark: "InvalidParameter.WaterMarkList"
        case invalidAudioMixUser: "InvalidParameter.SubscribeAudioList"
        case invalidBackground: "InvalidParameter.VideoParams"
        case invalidRelaySource: "InvalidParameter.SingleSubscribeParams"
        case missingParameter: "MissingParameter"
        case taskNotFound: "FailedOperation.TaskNotExist"
        case conflictingTask: "FailedOperation.RequestRejection"
        case staleSequenceNumber: "FailedOperation.SequenceNumber"
        case resolutionChange: "UnsupportedOperation.ChangeResolution"
        case mediaKindChange: "UnsupportedOperation.ChangeMediaType"
        case publishModeChange: "UnsupportedOperation.ChangePublishMode"
        case audioFormatChange: "UnsupportedOperation.ChangeAudioFormat"
        case notTaskOwner: "UnauthorizedOperation.TaskId"
        case cdnPushFailed: "FailedOperation.PublishCdnFailed"
        case roomNotFound: "FailedOperation.RoomNotExist"
        case tooManyTasks, tooManyTasksForUser, tooManyTasksOnServer: "LimitExceeded.Task"
        case encodingBudgetExceeded: "LimitExceeded.EncodingBudget"
        case egressRefused: "InvalidParameter.PublishCdnUrl"
        case invalidProduct: "InvalidParameter.Product"
        case productNotFound: "FailedOperation.ProductNotExist"
        case productVersionConflict: "FailedOperation.VersionConflict"
        case productExists: "FailedOperation.ProductExists"
        case tooManyProducts: "LimitExceeded.Product"
        case catalogueUnavailable: "InternalError"
        case shopStoreNoAnswer: "FailedOperation.ShopDatabaseTimeout"
        case replayNotFound: "FailedOperation.ReplayNotExist"
        case orderNotFound: "FailedOperation.OrderNotExist"
        case orderNotReserved: "FailedOperation.OrderNotReserved"
        case tooManyShopOwners: "LimitExceeded.ShopOwner"
        default: "InvalidParameter"
        }
    }
}
