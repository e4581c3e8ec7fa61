import LiveRoomAuth
import LiveRoomProtocol

/// Identifies one signaling connection.
public typealias SessionID = UInt64

/// The two clocks an event happens at: monotonic time for limits, wall time for records.
public struct EventTime: Sendable, Hashable {
    public var monotonic: ContinuousClock.Instant
    /// Milliseconds since 1970.
    public var unixMillis: Int64

    public init(monotonic: ContinuousClock.Instant, unixMillis: Int64) {
        self.monotonic = monotonic
        self.unixMillis = unixMillis
    }

    public var unixSeconds: Int64 { unixMillis / 1000 }
}

/// How urgently a message goes out: high priority overtakes queued normal messages.
public enum MessagePriority: Sendable, Hashable {
    case normal
    case high
}

/// What the room history store keeps. Rooms are named by their key (``RoomID/key``).
public enum RoomRecord: Sendable, Hashable {
    case roomCreated(roomId: String, at: Int64)
    case roomDissolved(roomId: String, at: Int64, reason: String)
    case userEntered(roomId: String, userId: String, role: Role, at: Int64)
    case roleChanged(roomId: String, userId: String, role: Role, at: Int64)
    case userLeft(roomId: String, userId: String, at: Int64, reason: String)
    /// A member's video and/or audio became available or unavailable to its room (publish,
    /// mute, unmute, stop): nil for the kind that did not change. Not recorded when the member
    /// leaves (leaving implies it). The history does not keep it; webhooks (2xx events) do.
    case mediaChanged(roomId: String, userId: String, video: Bool?, audio: Bool?)
    /// A cross-room PK link was made, or ended (webhooks only; the history does not keep them).
    /// `onlyRoom` names the one room of the link that is here when the other lives on another
    /// node (whose home records its own side); nil for both.
    case pkLinked(PKLink, onlyRoom: String?)
    case pkUnlinked(PKLink, onlyRoom: String?)
}

/// A room as the admin API describes it.
public struct RoomSnapshot: Sendable, Hashable {
    public struct User: Sendable, Hashable {
        public var userId: String
        public var role: Role
        /// Milliseconds since 1970 when the user entered.
        public var enteredAt: Int64
        /// Whether the user is an audience member brought on mic.
        public var onMic: Bool
    }

    /// The room's key (``RoomID/key``); ``room`` is the room as users name it.
    public var roomId: String
    public var createdAt: Int64
    public var users: [User]

    public var room: RoomID { RoomID(key: roomId) }
}

/// Every room of one SDKAppID: membership, roles, mic-connection and room messages.
///
/// A pure state machine: each event returns the ``Action``s for the server to carry out
/// (messages to sessions, records to store). No sockets, no clocks of its own.
public struct RoomsStateMachine: Sendable {
    public struct Configuration: Sendable, Hashable {
        public var sdkAppId: UInt64
        public var secretKey: String
        public var maxAnchorsPerRoom: Int
        /// Most rooms one user id may be in at once (each with its own session).
        public var maxRoomsPerUser: Int
        /// Most rooms the server holds at once; entering a new room beyond it is refused.
        public var maxRooms: Int
        public var maxUserIdBytes = 32
        public var maxRoomIdBytes = 64
        public var maxCustomMessageBytes = 1024
        public var customCmdIDs = 1...10
        /// Whether entering needs a PrivateMapKey for the user and room, whose privileges then
        /// decide creating the room, entering, sending and receiving (TRTC's "permission key").
        public var requirePrivateMapKey: Bool
        /// Most other rooms one room connects with in cross-room PK (TRTC: 3).
        public var maxPKRooms: Int
        /// Most anchors of one room taking part in cross-room PK (TRTC: 10).
        public var maxPKAnchorsPerRoom: Int
        /// How long a PK request (requestPK) waits for its answer.
        public var pkRequestTimeout: Duration
        /// Cluster mode: a room not here may live on another node, so a PK with it is asked of
        /// that node (``PKPeerCommand``) instead of refused.
        public var roomsOnOtherNodes = false
        /// TRTC's open PK: connectOtherRoom links with any anchor of any room. Off, a link needs
        /// the other anchor's consent: an accepted requestPK, or its room's PK allow-list.
        public var openPKLinks = false

        public init(
            sdkAppId: UInt64, secretKey: String, maxAnchorsPerRoom: Int = 50, maxRoomsPerUser: Int = 10, maxRooms: Int = 1000,
            requirePrivateMapKey: Bool = false, maxPKRooms: Int = 3, maxPKAnchorsPerRoom: Int = 10, pkRequestTimeout: Duration = .seconds(30)
        ) {
            self.maxPKRooms = maxPKRooms
            self.maxPKAnchorsPerRoom = maxPKAnchorsPerRoom
            self.pkRequestTimeout = pkRequestTimeout
            self.requirePrivateMapKey = requirePrivateMapKey
            self.sdkAppId = sdkAppId
            self.secretKey = secretKey
            self.maxAnchorsPerRoom = maxAnchorsPerRoom
            self.maxRoomsPerUser = maxRoomsPerUser
            self.maxRooms = maxRooms
        }
    }

    public enum Action: Sendable, Hashable {
        case send(SessionID, ServerEvent, MessagePriority)
        case record(RoomRecord)
        /// Work for the media server: negotiate, or tear down, peer connections.
        case media(MediaCommand)
        /// Work on the room's catalogue.
        case catalogue(CatalogueCommand)
        /// A PK battle to start (scored from the store's orders).
        case battle(PKBattleCommand)
        /// A message for the home node of a linked room on another node (cluster mode).
        case pkPeer(PKPeerCommand)

        static func send(_ session: SessionID, _ event: ServerEvent) -> Action { .send(session, event, .normal) }
    }

    struct Member: Sendable {
        var session: SessionID
        var userId: String
        var role: Role
        /// Entered as an anchor, so may switch back and forth without approval.
        var enteredAsAnchor: Bool
        /// An audience member whose mic request or invitation was accepted; cleared on leaving the mic.
        var micApproved = false
        /// What the member's PrivateMapKey allows; nil when the server does not require keys.
        var privileges: PrivateMapKey.Privileges?
        var enteredAt: Int64
        var nextSeq = 1
        var limiter = CustomMessageLimiter()
        /// Requests that tell the room something (roles, mic, mutes, publishing).
        var roomChanges = TokenBucket(capacity: RoomsStateMachine.roomChangeBurst, ratePerSecond: RoomsStateMachine.roomChangesPerSecond)
        /// What the member publishes, once a publish was negotiated.
        var publishing: PublishState?
        var audioMuted = false
        var videoMuted = false

        var audioAvailable: Bool { publishing?.audio == true && !audioMuted }
        var videoAvailable: Bool { publishing?.video == true && !videoMuted }
    }

    struct Room: Sendable {
        var id: String
        var createdAt: Int64
        var members: [String: Member] = [:]
        /// Anchors in the order they became anchors.
        var anchorOrder: [String] = []
        /// Audience members who asked to come on mic, oldest first.
        var micRequests: [String] = []
        /// Invited audience member → inviting anchor.
        var invitations: [String: String] = [:]
        /// Rooms whose anchors may link with this room's anchors by connectOtherRoom without a
        /// request (set by a shop owner or the admin API; as long as the room is open).
        var pkAllowList: [RoomID] = []
        var adminSeq = 1

        var anchorCount: Int { anchorOrder.count }

        func sessions(except userId: String? = nil) -> [SessionID] {
            // Sorted as (time, session) pairs: copying whole members to sort them cost a busy
            // room's every broadcast (1,300 members, ten messages a second) more than the sort.
            var order: [(entered: Int64, session: SessionID)] = []
            order.reserveCapacity(members.count)
            for member in members.values where member.userId != userId { order.append((member.enteredAt, member.session)) }
            order.sort { $0.entered < $1.entered || ($0.entered == $1.entered && $0.session < $1.session) }
            return order.map(\.session)
        }

        func anchorSessions(except userId: String? = nil) -> [SessionID] {
            anchorOrder.filter { $0 != userId }.compactMap { members[$0]?.session }
        }
    }

    public let configuration: Configuration
    var rooms: [String: Room] = [:]
    /// Who sits where, across the rooms.
    var directory = RoomDirectory()
    /// Cross-room PK links (RoomsStateMachine+PK.swift).
    var pkLinks: [PKLink] = []
    /// What a room receives of the PK anchors of each room it is linked with, when not both.
    var pkForward: [String: [String: PKForwardMode]] = [:]
    var pkRequests: [PKRequest] = []
    /// The PK anchors of linked rooms on other nodes, as their homes told (RoomsStateMachine+RemotePK.swift).
    var remoteAnchors: [PKEnd: RemoteAnchor] = [:]

    public init(configuration: Configuration) {
        self.configuration = configuration
    }

    // MARK: Requests from a session

    /// Requests that change what the room sees, each broadcast to others, that one member may
    /// make per second on average, and in a burst.
    public static let roomChangesPerSecond = 10.0
    public static let roomChangeBurst = 20.0

    /// Takes `cost` room changes from the member's budget, or refuses the request (-7014).
    mutating func admitRoomChange(_ userId: String, in roomId: String, cost: Double, at now: EventTime) throws(LiveRoomError) {
        guard rooms[roomId]!.members[userId]!.roomChanges.canTake(cost, now: now.monotonic) else {
            throw LiveRoomError(
                ErrorCode.roomChangeRateLimited,
                "refused: over \(Int(Self.roomChangesPerSecond)) role, mic, mute, publish, product and buy requests per second (bursts of \(Int(Self.roomChangeBurst)))")
        }
        rooms[roomId]!.members[userId]!.roomChanges.take(cost, now: now.monotonic)
    }

    /// The sessions that entered a room (with its room and user) or left one (nil) since the last
    /// call, in order. The server keeps a copy that connections read without asking the room
    /// machine (a purchase goes from its connection to the room's shop).
    public mutating func takeSeatChanges() -> [(session: SessionID, seat: (roomId: String, userId: String)?)] {
        directory.takeChanges()
    }

    /// Handles one parsed room request.
    public mutating func handle(_ request: RoomRequest, from session: SessionID, elapsedMs: Int = 0, at now: EventTime) -> [Action] {
        if case .enterRoom(let params) = request {
            switch enter(params, from: session, elapsedMs: elapsedMs, at: now) {
            case .entered(let actions):
                return actions
            case .refused(let error):
                return [.send(session, .onEnterRoom(result: error.code, errMsg: error.message)), .send(session, .error(error, requestType: "enterRoom"))]
            }
        }
        guard let (roomId, userId) = directory[session] else {
            if case .exitRoom = request { return [.send(session, .onExitRoom(reason: 0))] }
            return [.send(session, .error(LiveRoomError(ErrorCode.notInRoom, "enter a room first"), requestType: request.type))]
        }
        var actions: [Action] = []
        do throws(LiveRoomError) {
            if request.roomChangeCost > 0 { try admitRoomChange(userId, in: roomId, cost: request.roomChangeCost, at: now) }
            switch request {
            case .enterRoom: break
            case .exitRoom:
                actions = removeMember(userId, from: roomId, remoteReason: 0, record: "exit", at: now)
                actions.insert(.send(session, .onExitRoom(reason: 0)), at: 0)
            case .switchRole(let role):
                actions = try switchRole(userId, in: roomId, to: role, at: now)
            case .requestMic:
                actions = try requestMic(userId, in: roomId)
            case .acceptMic(let target):
                actions = try answerMicRequest(from: target, by: userId, in: roomId, accept: true, at: now)
            case .rejectMic(let target):
                actions = try answerMicRequest(from: target, by: userId, in: roomId, accept: false, at: now)
            case .inviteMic(let target):
                actions = try inviteMic(target, by: userId, in: roomId)
            case .acceptInvitation:
                actions = try answerInvitation(userId, in: roomId, accept: true, at: now)
            case .rejectInvitation:
                actions = try answerInvitation(userId, in: roomId, accept: false, at: now)
            case .endMic(let target):
                actions = try endMic(target, by: userId, in: roomId, at: now)
            case .sendCustomCmdMsg(let message):
                actions = try sendCustomCmdMsg(message, from: userId, in: roomId, at: now)
            case .publish, .unpublish, .subscribe, .unsubscribe, .restartIce, .muteLocalVideo, .muteLocalAudio:
                actions = try handleMedia(request, from: session, as: userId, in: roomId)
            case .addProduct, .editProduct, .removeProduct, .listProducts, .popProduct, .unpopProduct, .removeReplay, .buyProduct, .shopOwner:
                actions = try handleCatalogue(request, from: session, as: userId, in: roomId)
            case .connectOtherRoom, .disconnectOtherRoom, .updateOtherRoomForwardMode, .requestPK, .answerPK, .startPKBattle, .setPKAllowList:
                actions = handlePK(request, from: session, as: PKEnd(roomId: roomId, userId: userId), at: now)
            }
        } catch {
            if case .switchRole = request {
                let role = rooms[roomId]?.members[userId]?.role ?? .audience
                return [.send(session, .onSwitchRole(errCode: error.code, errMsg: error.message, role: role))]
            }
            return [.send(session, .error(error, requestType: request.type))]
        }
        return actions
    }

    /// The session's connection closed without exitRoom.
    public mutating func disconnected(_ session: SessionID, at now: EventTime) -> [Action] {
        guard let (roomId, userId) = directory[session] else { return [.media(.closeSession(session))] }
        return removeMember(userId, from: roomId, remoteReason: 1, record: "disconnected", at: now)
    }

    /// `session`'s publishing connection closed by itself (ICE consent expired, DTLS closed):
    /// the room is told its media is gone.
    public mutating func publishEnded(_ session: SessionID) -> [Action] {
        guard let (roomId, userId) = directory[session] else { return [] }
        return stopPublishing(userId, in: roomId)
    }

    /// The media server negotiated `session`'s publish: the anchor's audio and/or video are
    /// now available to the room. Returns nothing if the session left meanwhile.
    public mutating func publishStarted(_ session: SessionID, audio: Bool, video: Bool) -> [Action] {
        guard let (roomId, userId) = directory[session], let before = rooms[roomId]?.members[userId], before.role == .anchor else {
            return []
        }
        var after = before
        after.publishing = PublishState(audio: audio, video: video)
        rooms[roomId]!.members[userId] = after
        return availabilityChanges(of: userId, in: roomId, from: before, to: after)
    }

    /// The room and user a session is in, if any.
    public func membership(of session: SessionID) -> (roomId: String, userId: String)? {
        directory[session]
    }

    // MARK: Entering and leaving

    /// The bytes TRTC allows in a user id: letters, digits, underscore and hyphen.
    static let userIdBytes = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-".utf8)
    /// The 89 characters TRTC allows in a string room id: letters, digits, space and
    /// `!#$%&()+-:;<=.>?@[]^_{}|~,`. No control characters, so no id can forge a log line.
    static let roomIdBytes = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 !#$%&()+-:;<=.>?@[]^_{}|~,".utf8)

    /// Checks a string room id as TRTC checks strRoomId: not empty, at most `maxRoomIdBytes`, TRTC's characters.
    public func checkStringRoomId(_ strRoomId: String) throws(LiveRoomError) {
        guard !strRoomId.isEmpty else { throw LiveRoomError(ErrorCode.invalidRoomId, "strRoomId is empty and roomId is not set") }
        guard strRoomId.utf8.count <= configuration.maxRoomIdBytes else {
            throw LiveRoomError(ErrorCode.invalidRoomId, "strRoomId is longer than \(configuration.maxRoomIdBytes) bytes")
        }
        guard strRoomId.utf8.allSatisfy(Self.roomIdBytes.contains) else {
            throw LiveRoomError(
                ErrorCode.invalidRoomId, "strRoomId may hold only letters, digits, space and !#$%&()+-:;<=.>?@[]^_{}|~,")
        }
    }

    /// Checks a user id as TRTC does: not empty, at most `maxUserIdBytes`, letters, digits, `_` and `-`.
    public func checkUserId(_ userId: String) throws(LiveRoomError) {
        guard !userId.isEmpty else { throw LiveRoomError(ErrorCode.invalidUserId, "userId is empty") }
        guard userId.utf8.count <= configuration.maxUserIdBytes else {
            throw LiveRoomError(ErrorCode.invalidUserId, "userId is longer than \(configuration.maxUserIdBytes) bytes")
        }
        guard userId.utf8.allSatisfy(Self.userIdBytes.contains) else {
            throw LiveRoomError(ErrorCode.invalidUserId, "userId may hold only letters, digits, _ and -")
        }
    }

    /// Checks enterRoom's parameters as TRTC does, in TRTC's order. Returns what the user's
    /// PrivateMapKey allows when the server requires keys (nil otherwise).
    @discardableResult
    public func validate(_ params: EnterRoomParams, now unixSeconds: Int64) throws(LiveRoomError) -> PrivateMapKey.Privileges? {
        guard params.sdkAppId == configuration.sdkAppId else {
            throw LiveRoomError(ErrorCode.invalidSdkAppId, "unknown SDKAppID \(params.sdkAppId)")
        }
        // A numeric room (roomId) is valid by its type; a string room is checked as TRTC checks strRoomId.
        if case .string(let strRoomId) = params.room { try checkStringRoomId(strRoomId) }
        try checkUserId(params.userId)
        do {
            try UserSig.verify(
                params.userSig, sdkAppId: configuration.sdkAppId, secretKey: configuration.secretKey,
                identifier: params.userId, now: unixSeconds)
        } catch {
            throw LiveRoomError(error.code, error.message)
        }
        guard configuration.requirePrivateMapKey else { return nil }
        guard !params.privateMapKey.isEmpty else {
            throw LiveRoomError(ErrorCode.privilegeCheckFailed, "this server requires a PrivateMapKey (privateMapKey) for the user and room")
        }
        do {
            return try PrivateMapKey.verify(
                params.privateMapKey, sdkAppId: configuration.sdkAppId, secretKey: configuration.secretKey, userId: params.userId,
                room: params.room.privateMapKeyRoom, now: unixSeconds
            ).privileges
        } catch {
            throw LiveRoomError(error.code, error.message)
        }
    }

    /// Refuses with -100006 unless `privileges` (nil: no keys required) hold one of `needed`.
    static func require(_ needed: PrivateMapKey.Privileges, of privileges: PrivateMapKey.Privileges?, to action: String) throws(LiveRoomError) {
        guard let privileges, privileges.isDisjoint(with: needed) else { return }
        let what = needed.rawValue.nonzeroBitCount > 1 ? "one of \(needed)" : "\(needed)"
        throw LiveRoomError(ErrorCode.privilegeCheckFailed, "\(action) needs \(what) in the PrivateMapKey; it allows \(privileges)")
    }

    /// Whether an SDP offers to carry audio and video (an m-line with a port other than 0).
    static func mediaKinds(in sdp: String) -> (audio: Bool, video: Bool) {
        var audio = false, video = false
        for line in sdp.split(whereSeparator: \.isNewline) where line.hasPrefix("m=") {
            let fields = line.dropFirst(2).split(separator: " ")
            guard fields.count > 1, fields[1] != "0" else { continue }
            if fields[0] == "audio" { audio = true }
            if fields[0] == "video" { video = true }
        }
        return (audio, video)
    }

    /// Checks that a member may send (`sending`) or receive what an SDP offer carries: each kind
    /// needs its bit in the PrivateMapKey; an audience member approved on mic is granted sending.
    public func checkMedia(of session: SessionID, offer sdp: String, sending: Bool) throws(LiveRoomError) {
        guard let (roomId, userId) = directory[session], let member = rooms[roomId]?.members[userId],
            let privileges = member.privileges
        else { return }
        if sending, member.micApproved { return }
        let kinds = Self.mediaKinds(in: sdp)
        if kinds.audio { try Self.require(sending ? .sendAudio : .receiveAudio, of: privileges, to: sending ? "sending audio" : "receiving audio") }
        if kinds.video { try Self.require(sending ? .sendVideo : .receiveVideo, of: privileges, to: sending ? "sending video" : "receiving video") }
    }

    /// What entering a room came to.
    public enum EnterOutcome: Sendable, Hashable {
        /// The session is in the room; the actions tell it and the others (onEnterRoom first).
        case entered([Action])
        /// The session stays out, with TRTC's code and a message. Nothing changed.
        case refused(LiveRoomError)
    }

    /// `session` enters a room (a signaling connection's enterRoom, a WHIP/WHEP client, a
    /// task's robot user). A newer session of a user already in the room takes over.
    public mutating func enter(_ params: EnterRoomParams, from session: SessionID, elapsedMs: Int = 0, at now: EventTime) -> EnterOutcome {
        do throws(LiveRoomError) {
            return .entered(try admit(params, session: session, elapsedMs: elapsedMs, at: now))
        } catch {
            return .refused(error)
        }
    }

    mutating func admit(_ params: EnterRoomParams, session: SessionID, elapsedMs: Int, at now: EventTime) throws(LiveRoomError) -> [Action] {
        if let current = directory[session] { throw Self.alreadyIn(current.roomId) }
        let privileges = try validate(params, now: now.unixSeconds)
        let roomId = params.room.key
        try Self.require(.enterRoom, of: privileges, to: "entering the room")
        if rooms[roomId] == nil { try Self.require(.createRoom, of: privileges, to: "creating \(params.room)") }
        if params.role == .anchor { try Self.require([.sendAudio, .sendVideo], of: privileges, to: "entering as an anchor") }
        let replaced = rooms[roomId]?.members[params.userId]
        try checkLimits(entering: params, replacing: replaced)
        var actions: [Action] = []
        if rooms[roomId] == nil {
            rooms[roomId] = Room(id: roomId, createdAt: now.unixMillis)
            actions.append(.record(.roomCreated(roomId: roomId, at: now.unixMillis)))
        }
        if let old = replaced, old.role == .anchor, params.role != .anchor {
            actions += endPKLinks(of: PKEnd(roomId: roomId, userId: old.userId))
        }
        if let old = replaced {
            actions += replace(old, in: roomId, enteringAgain: params.room, at: now)
        }
        let member = Member(
            session: session, userId: params.userId, role: params.role, enteredAsAnchor: params.role == .anchor,
            privileges: privileges, enteredAt: now.unixMillis)
        var room = rooms[roomId]!
        let existingAnchors = room.anchorOrder
        room.members[params.userId] = member
        if params.role == .anchor { room.anchorOrder.append(params.userId) }
        rooms[roomId] = room
        directory.seat(session, (roomId, params.userId))

        // TRTC clients take only a result above 0 as success: at least 1 ms.
        actions.append(.send(session, .onEnterRoom(result: max(1, elapsedMs))))
        actions.append(.record(.userEntered(roomId: roomId, userId: params.userId, role: params.role, at: now.unixMillis)))
        // The room's anchors, then the PK anchors it sees, each with what it sends.
        for end in existingAnchors.map({ PKEnd(roomId: roomId, userId: $0) }) + pkAnchors(in: roomId) {
            actions += introduce(end, to: [session], in: roomId)
        }
        // Tell the others when the user's visibility as an anchor changes (a replaced session may have shown it already).
        let wasAnchor = replaced?.role == .anchor
        let isAnchor = params.role == .anchor
        if isAnchor != wasAnchor {
            let event: ServerEvent = isAnchor ? .onRemoteUserEnterRoom(userId: params.userId) : .onRemoteUserLeaveRoom(userId: params.userId, reason: 3)
            for s in room.sessions(except: params.userId) {
                actions.append(.send(s, event))
            }
        }
        return actions
    }

    /// The server-wide and room limits an enter must fit in; a user entering again (`replaced`)
    /// keeps its room count and frees its anchor seat.
    func checkLimits(entering params: EnterRoomParams, replacing replaced: Member?) throws(LiveRoomError) {
        let roomId = params.room.key
        try checkServerLimits(userId: params.userId, inRooms: replaced == nil ? directory.roomCount(of: params.userId) : nil, newRoom: rooms[roomId] == nil, rooms: rooms.count)
        if params.role == .anchor, let room = rooms[roomId] {
            let freed = replaced?.role == .anchor ? 1 : 0
            if room.anchorCount - freed >= configuration.maxAnchorsPerRoom {
                throw tooManyAnchors(roomId)
            }
        }
    }

    /// The limits that span rooms, for whoever knows every room of the server: a user entering
    /// a room it is not in yet (`inRooms`, the rooms it is in; nil when it enters one of them
    /// again) may be in at most `maxRoomsPerUser`; a new room may make at most `maxRooms`.
    public func checkServerLimits(userId: String, inRooms: Int?, newRoom: Bool, rooms: Int) throws(LiveRoomError) {
        if let inRooms, inRooms >= configuration.maxRoomsPerUser {
            throw LiveRoomError(
                ErrorCode.tooManyRoomsForUser, "user \(userId.quoted) is already in \(inRooms) rooms, the most one user may be in at once; exit one first")
        }
        if newRoom, rooms >= configuration.maxRooms {
            throw LiveRoomError(ErrorCode.tooManyRooms, "the server holds \(rooms) rooms, the most it allows; enter an existing room or try later")
        }
    }

    /// A connection asked to enter a room while it is in `roomId`.
    public static func alreadyIn(_ roomId: String) -> LiveRoomError {
        LiveRoomError(ErrorCode.enterRoomRefused, "this connection is already in \(room(roomId)); call exitRoom first")
    }

    /// A newer session of the same user takes over from `old`, which is told why it was removed.
    mutating func replace(_ old: Member, in roomId: String, enteringAgain room: RoomID, at now: EventTime) -> [Action] {
        var actions: [Action] = []
        // A newer session of the same user takes over; the old one is told why it was removed.
        directory.seat(old.session, nil)
        actions.append(
            .send(old.session, .onError(errCode: ErrorCode.replacedBySession, errMsg: "user \(old.userId.quoted) entered \(room) again from another connection, which takes over", requestType: nil)))
        actions.append(.send(old.session, .onExitRoom(reason: 1)))
        actions.append(.media(.closeSession(old.session)))
        if old.publishing != nil {
            actions.append(.media(.stopPublishing(roomId: roomId, userId: old.userId)))
            let gone = Member(session: old.session, userId: old.userId, role: old.role, enteredAsAnchor: old.enteredAsAnchor, enteredAt: old.enteredAt)
            actions += availabilityChanges(of: old.userId, in: roomId, from: old, to: gone, except: old.userId)
        }
        actions.append(.record(.userLeft(roomId: roomId, userId: old.userId, at: now.unixMillis, reason: "replaced")))
        rooms[roomId]!.members[old.userId] = nil
        rooms[roomId]!.anchorOrder.removeAll { $0 == old.userId }
        dropMicState(of: old.userId, in: roomId)
        return actions
    }

    /// Removes a member; anchors' departure is announced with `remoteReason`. Dissolves an empty room.
    mutating func removeMember(_ userId: String, from roomId: String, remoteReason: Int, record: String, at now: EventTime) -> [Action] {
        guard rooms[roomId]?.members[userId] != nil else { return [] }
        var actions = endPKLinks(of: PKEnd(roomId: roomId, userId: userId))
        var room = rooms[roomId]!
        let member = room.members[userId]!
        directory.seat(member.session, nil)
        room.members[userId] = nil
        room.anchorOrder.removeAll { $0 == userId }
        rooms[roomId] = room
        dropMicState(of: userId, in: roomId)
        actions.append(.record(.userLeft(roomId: roomId, userId: userId, at: now.unixMillis, reason: record)))
        actions.append(.media(.closeSession(member.session)))
        if member.publishing != nil {
            actions.append(.media(.stopPublishing(roomId: roomId, userId: userId)))
            for s in room.sessions() {
                if member.videoAvailable { actions.append(.send(s, .onUserVideoAvailable(userId: userId, available: false))) }
                if member.audioAvailable { actions.append(.send(s, .onUserAudioAvailable(userId: userId, available: false))) }
            }
        }
        if member.role == .anchor {
            for s in room.sessions() {
                actions.append(.send(s, .onRemoteUserLeaveRoom(userId: userId, reason: remoteReason)))
            }
        }
        if room.members.isEmpty {
            rooms[roomId] = nil
            actions.append(.record(.roomDissolved(roomId: roomId, at: now.unixMillis, reason: "empty")))
        }
        return actions
    }

    /// Forgets mic requests and invitations made by or to a user.
    mutating func dropMicState(of userId: String, in roomId: String) {
        guard var room = rooms[roomId] else { return }
        room.micRequests.removeAll { $0 == userId }
        room.invitations[userId] = nil
        room.invitations = room.invitations.filter { $0.value != userId }
        rooms[roomId] = room
    }

    // MARK: Errors

    func noSuchRoom(_ roomId: String) -> LiveRoomError {
        Self.noSuchRoom(roomId)
    }

    /// An admin call named a room that does not exist.
    public static func noSuchRoom(_ roomId: String) -> LiveRoomError {
        LiveRoomError(ErrorCode.noSuchUserOrRequest, "\(room(roomId)) does not exist")
    }

    func tooManyAnchors(_ roomId: String) -> LiveRoomError {
        LiveRoomError(ErrorCode.tooManyAnchors, "\(Self.room(roomId)) already has \(configuration.maxAnchorsPerRoom) anchors, the most allowed")
    }

    /// A room key as users read it: `room 123` or `room "shop1"`.
    static func room(_ key: String) -> String {
        RoomID(key: key).description
    }
}
