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
        var adminSeq = 1

        var anchorCount: Int { anchorOrder.count }

        func sessions(except userId: String? = nil) -> [SessionID] {
            members.values.filter { $0.userId != userId }.sorted { $0.enteredAt < $1.enteredAt || ($0.enteredAt == $1.enteredAt && $0.session < $1.session) }.map(\.session)
        }

        func anchorSessions(except userId: String? = nil) -> [SessionID] {
            anchorOrder.filter { $0 != userId }.compactMap { members[$0]?.session }
        }
    }

    public let configuration: Configuration
    var rooms: [String: Room] = [:]
    private(set) var sessions: [SessionID: (roomId: String, userId: String)] = [:]
    /// Sessions that entered (their room and user) or left (nil) a room since ``takeSeatChanges()``.
    private var seatChanges: [(session: SessionID, seat: (roomId: String, userId: String)?)] = []
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

    /// Takes one room change from the member's budget, or refuses it (-7014).
    private mutating func admitRoomChange(_ userId: String, in roomId: String, at now: EventTime) throws(LiveRoomError) {
        guard rooms[roomId]!.members[userId]!.roomChanges.canTake(1, now: now.monotonic) else {
            throw LiveRoomError(
                ErrorCode.roomChangeRateLimited,
                "refused: over \(Int(Self.roomChangesPerSecond)) role, mic, mute, publish, product and buy requests per second (bursts of \(Int(Self.roomChangeBurst)))")
        }
        rooms[roomId]!.members[userId]!.roomChanges.take(1, now: now.monotonic)
    }

    /// The sessions that entered a room (with its room and user) or left one (nil) since the last
    /// call, in order. The server keeps a copy that connections read without asking the room
    /// machine (a purchase goes from its connection to the room's shop).
    public mutating func takeSeatChanges() -> [(session: SessionID, seat: (roomId: String, userId: String)?)] {
        defer { seatChanges = [] }
        return seatChanges
    }

    /// Seats `session` (or unseats it, nil), noting the change for ``takeSeatChanges()``.
    private mutating func seat(_ session: SessionID, _ seat: (roomId: String, userId: String)?) {
        sessions[session] = seat
        seatChanges.append((session, seat))
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
        guard let (roomId, userId) = sessions[session] else {
            if case .exitRoom = request { return [.send(session, .onExitRoom(reason: 0))] }
            return [.send(session, .error(LiveRoomError(ErrorCode.notInRoom, "enter a room first"), requestType: request.type))]
        }
        var actions: [Action] = []
        do throws(LiveRoomError) {
            if request.changesTheRoom { try admitRoomChange(userId, in: roomId, at: now) }
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
            case .publish(let sdp):
                guard rooms[roomId]!.members[userId]!.role == .anchor else {
                    throw LiveRoomError(ErrorCode.audienceCannotPublish, "only anchors publish; switch role to anchor first")
                }
                try checkMedia(of: session, offer: sdp, sending: true)
                actions = [.media(.publish(session: session, roomId: roomId, userId: userId, sdp: sdp))]
            case .unpublish:
                actions = stopPublishing(userId, in: roomId)
            case .subscribe(let publisherId, let sdp):
                actions = try subscription(of: session, to: publisherId, sdp: sdp)
            case .unsubscribe(let publisherId):
                actions = [.media(.unsubscribe(session: session, publisherId: publisherId))]
            case .restartIce(let publisherId, let sdp):
                if publisherId == nil, rooms[roomId]!.members[userId]!.publishing == nil {
                    throw LiveRoomError(ErrorCode.notPublishing, "there is no publishing connection to restart: publish first")
                }
                actions = [.media(.restartIce(session: session, publisherId: publisherId, sdp: sdp))]
            case .muteLocalVideo(let mute):
                actions = setMuted(userId, in: roomId) { $0.videoMuted = mute }
            case .muteLocalAudio(let mute):
                actions = setMuted(userId, in: roomId) { $0.audioMuted = mute }
            case .addProduct(let fields):
                try requireAnchor(userId, in: roomId, to: "add products")
                actions = [.catalogue(.add(session: session, roomId: roomId, fields: fields))]
            case .editProduct(let itemNumber, let changes):
                try requireAnchor(userId, in: roomId, to: "edit products")
                actions = [.catalogue(.edit(session: session, roomId: roomId, itemNumber: itemNumber, changes: changes))]
            case .removeProduct(let itemNumber):
                try requireAnchor(userId, in: roomId, to: "remove products")
                actions = [.catalogue(.remove(session: session, roomId: roomId, itemNumber: itemNumber))]
            case .listProducts:
                actions = [.catalogue(.list(session: session, roomId: roomId))]
            case .popProduct(let itemNumber, let custom):
                try requireAnchor(userId, in: roomId, to: "pop products")
                actions = [.catalogue(.pop(session: session, roomId: roomId, userId: userId, itemNumber: itemNumber, custom: custom))]
            case .unpopProduct:
                try requireAnchor(userId, in: roomId, to: "end pop-ups")
                actions = [.catalogue(.unpop(roomId: roomId, userId: userId))]
            case .removeReplay(let replayId):
                try requireAnchor(userId, in: roomId, to: "remove replays")
                actions = [.catalogue(.removeReplay(session: session, roomId: roomId, replayId: replayId))]
            case .buyProduct(let itemNumber, let quantity, let requestId):
                actions = [
                    .catalogue(.buy(session: session, roomId: roomId, userId: userId, itemNumber: itemNumber, quantity: quantity, requestId: requestId))
                ]
            case .connectOtherRoom, .disconnectOtherRoom, .updateOtherRoomForwardMode, .requestPK, .answerPK, .startPKBattle:
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
        guard let (roomId, userId) = sessions[session] else { return [.media(.closeSession(session))] }
        return removeMember(userId, from: roomId, remoteReason: 1, record: "disconnected", at: now)
    }

    /// `session`'s publishing connection closed by itself (ICE consent expired, DTLS closed):
    /// the room is told its media is gone.
    public mutating func publishEnded(_ session: SessionID) -> [Action] {
        guard let (roomId, userId) = sessions[session] else { return [] }
        return stopPublishing(userId, in: roomId)
    }

    /// The media server negotiated `session`'s publish: the anchor's audio and/or video are
    /// now available to the room. Returns nothing if the session left meanwhile.
    public mutating func publishStarted(_ session: SessionID, audio: Bool, video: Bool) -> [Action] {
        guard let (roomId, userId) = sessions[session], let before = rooms[roomId]?.members[userId], before.role == .anchor else {
            return []
        }
        var after = before
        after.publishing = PublishState(audio: audio, video: video)
        rooms[roomId]!.members[userId] = after
        return availabilityChanges(of: userId, in: roomId, from: before, to: after)
    }

    /// The room and user a session is in, if any.
    public func membership(of session: SessionID) -> (roomId: String, userId: String)? {
        sessions[session]
    }

    // MARK: Admin

    /// DismissRoom / DismissRoomByStrRoomId (`roomId` is the room's key): everyone gets onExitRoom(2).
    public mutating func dismissRoom(_ roomId: String, at now: EventTime) throws(LiveRoomError) -> [Action] {
        guard rooms[roomId] != nil else { throw noSuchRoom(roomId) }
        // Other rooms stop seeing this room's PK anchors first.
        var actions = rooms[roomId]!.anchorOrder.flatMap { endPKLinks(of: PKEnd(roomId: roomId, userId: $0)) }.filter { !Self.isSend(to: rooms[roomId]!, $0) }
        let room = rooms[roomId]!
        actions += room.sessions().map { .send($0, .onExitRoom(reason: 2)) }
        for member in room.members.values {
            seat(member.session, nil)
            actions.append(.media(.closeSession(member.session)))
            actions.append(.record(.userLeft(roomId: roomId, userId: member.userId, at: now.unixMillis, reason: "dismissed")))
        }
        rooms[roomId] = nil
        actions.append(.record(.roomDissolved(roomId: roomId, at: now.unixMillis, reason: "dismissed")))
        return actions
    }

    /// RemoveUser / RemoveUserByStrRoomId: each named user present gets onExitRoom(1). Returns the actions
    /// and the user ids that were not in the room.
    public mutating func removeUsers(_ userIds: [String], from roomId: String, at now: EventTime) throws(LiveRoomError) -> (actions: [Action], notFound: [String]) {
        guard rooms[roomId] != nil else { throw noSuchRoom(roomId) }
        var actions: [Action] = []
        var notFound: [String] = []
        for userId in userIds {
            guard let member = rooms[roomId]?.members[userId] else {
                notFound.append(userId)
                continue
            }
            actions.append(.send(member.session, .onExitRoom(reason: 1)))
            actions += removeMember(userId, from: roomId, remoteReason: 2, record: "removed", at: now)
        }
        return (actions, notFound)
    }

    /// An IM group message from the backend: delivered to every user as a custom message
    /// from `administrator` with cmdID 0.
    public mutating func sendGroupMessage(_ data: String, to roomId: String, priority: MessagePriority) throws(LiveRoomError) -> [Action] {
        guard var room = rooms[roomId] else { throw noSuchRoom(roomId) }
        let seq = room.adminSeq
        room.adminSeq += 1
        rooms[roomId] = room
        let event = ServerEvent.onRecvCustomCmdMsg(userId: UserSig.administrator, cmdID: 0, seq: seq, data: data)
        return room.sessions().map { .send($0, event, priority) }
    }

    public func describe(_ roomId: String) -> RoomSnapshot? {
        guard let room = rooms[roomId] else { return nil }
        let users = room.members.values
            .sorted { $0.enteredAt < $1.enteredAt || ($0.enteredAt == $1.enteredAt && $0.userId < $1.userId) }
            .map { RoomSnapshot.User(userId: $0.userId, role: $0.role, enteredAt: $0.enteredAt, onMic: $0.micApproved && $0.role == .anchor) }
        return RoomSnapshot(roomId: room.id, createdAt: room.createdAt, users: users)
    }

    public var roomIds: [String] { rooms.keys.sorted() }

    /// Users in rooms, and how many of them publish (for metrics).
    public var population: (users: Int, publishers: Int) {
        rooms.values.reduce(into: (0, 0)) { total, room in
            total.0 += room.members.count
            total.1 += room.members.values.filter { $0.publishing != nil }.count
        }
    }

    /// Anchors of a room who publish, in the order they became anchors.
    /// The sessions of everyone in a room.
    public func sessions(in roomId: String) -> [SessionID] {
        rooms[roomId]?.members.values.map(\.session) ?? []
    }

    /// The sessions of the room's anchors.
    public func anchorSessions(in roomId: String) -> [SessionID] {
        rooms[roomId]?.anchorSessions() ?? []
    }

    /// The media commands of `session`'s subscription to `publisherId`, an anchor of its own room
    /// or a PK anchor its room sees (subscribed to in its own room, with the room's forward mode):
    /// for signaling's `subscribe` and for WHEP, which answers the offer itself.
    public func subscription(of session: SessionID, to publisherId: String, sdp: String) throws(LiveRoomError) -> [Action] {
        guard let (roomId, userId) = sessions[session] else { throw LiveRoomError(ErrorCode.notInRoom, "enter a room first") }
        guard let publisherRoom = publisherRoom(of: publisherId, seenFrom: roomId),
            anchorState(of: PKEnd(roomId: publisherRoom, userId: publisherId))?.publishing != nil
        else {
            throw LiveRoomError(ErrorCode.notPublishing, "user \(publisherId.quoted) is not publishing in \(Self.room(roomId))")
        }
        try checkMedia(of: session, offer: sdp, sending: false)
        var actions: [Action] = [.media(.subscribe(session: session, roomId: publisherRoom, userId: userId, publisherId: publisherId, sdp: sdp))]
        let mode = forwardMode(from: publisherRoom, into: roomId)
        if publisherRoom != roomId, mode != .both {
            actions.append(.media(.setForwarding(sessions: [session], publisherRoomId: publisherRoom, publisherId: publisherId, audio: mode.audio, video: mode.video)))
        }
        return actions
    }

    /// The session of `userId` in room `roomId` (a room key), if the user is there.
    public func session(of userId: String, in roomId: String) -> SessionID? {
        rooms[roomId]?.members[userId]?.session
    }

    /// The publishers a member of `roomId` may play: the room's own, then the PK anchors it sees.
    public func visiblePublishers(in roomId: String) -> [String] {
        publishers(in: roomId) + pkAnchors(in: roomId).filter { anchorState(of: $0)?.publishing != nil }.map(\.userId)
    }

    /// Whether `id` is a valid string room id (``checkStringRoomId(_:)`` passes).
    public func isValidStringRoomId(_ id: String) -> Bool {
        (try? checkStringRoomId(id)) != nil
    }

    /// Whether `id` is a valid user id (``checkUserId(_:)`` passes).
    public func isValidUserId(_ id: String) -> Bool {
        (try? checkUserId(id)) != nil
    }

    public func publishers(in roomId: String) -> [String] {
        guard let room = rooms[roomId] else { return [] }
        return room.anchorOrder.filter { room.members[$0]?.publishing != nil }
    }

    /// What each publishing anchor of a room sends, in the order they became anchors (for mixers).
    public func publisherStates(in roomId: String) -> [PublisherState] {
        guard let room = rooms[roomId] else { return [] }
        return room.anchorOrder.compactMap { userId in
            guard let member = room.members[userId], let publishing = member.publishing else { return nil }
            return PublisherState(
                userId: userId, audio: publishing.audio, video: publishing.video, audioMuted: member.audioMuted, videoMuted: member.videoMuted)
        }
    }

    /// The role of a session's user, if it is in a room.
    public func role(of session: SessionID) -> Role? {
        guard let (roomId, userId) = sessions[session] else { return nil }
        return rooms[roomId]?.members[userId]?.role
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
        guard let (roomId, userId) = sessions[session], let member = rooms[roomId]?.members[userId],
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

    private mutating func admit(_ params: EnterRoomParams, session: SessionID, elapsedMs: Int, at now: EventTime) throws(LiveRoomError) -> [Action] {
        if let current = sessions[session] {
            throw LiveRoomError(ErrorCode.enterRoomRefused, "this connection is already in \(Self.room(current.roomId)); call exitRoom first")
        }
        let privileges = try validate(params, now: now.unixSeconds)
        let roomId = params.room.key
        try Self.require(.enterRoom, of: privileges, to: "entering the room")
        if rooms[roomId] == nil { try Self.require(.createRoom, of: privileges, to: "creating \(params.room)") }
        if params.role == .anchor { try Self.require([.sendAudio, .sendVideo], of: privileges, to: "entering as an anchor") }
        var actions: [Action] = []
        var replaced: Member?
        if let existing = rooms[roomId]?.members[params.userId] {
            replaced = existing
        } else {
            let roomsOfUser = sessions.values.reduce(0) { $0 + ($1.userId == params.userId ? 1 : 0) }
            if roomsOfUser >= configuration.maxRoomsPerUser {
                throw LiveRoomError(
                    ErrorCode.tooManyRoomsForUser,
                    "user \(params.userId.quoted) is already in \(roomsOfUser) rooms, the most one user may be in at once; exit one first")
            }
        }
        if rooms[roomId] == nil, rooms.count >= configuration.maxRooms {
            throw LiveRoomError(ErrorCode.tooManyRooms, "the server holds \(rooms.count) rooms, the most it allows; enter an existing room or try later")
        }
        // Check the anchor limit before touching anything, counting the seat a replaced anchor frees.
        if params.role == .anchor, let room = rooms[roomId] {
            let freed = replaced?.role == .anchor ? 1 : 0
            if room.anchorCount - freed >= configuration.maxAnchorsPerRoom {
                throw tooManyAnchors(roomId)
            }
        }
        if rooms[roomId] == nil {
            rooms[roomId] = Room(id: roomId, createdAt: now.unixMillis)
            actions.append(.record(.roomCreated(roomId: roomId, at: now.unixMillis)))
        }
        if let old = replaced, old.role == .anchor, params.role != .anchor {
            actions += endPKLinks(of: PKEnd(roomId: roomId, userId: old.userId))
        }
        if let old = replaced {
            // A newer session of the same user takes over; the old one is told why it was removed.
            seat(old.session, nil)
            actions.append(
                .send(old.session, .onError(errCode: ErrorCode.replacedBySession, errMsg: "user \(old.userId.quoted) entered \(params.room) again from another connection, which takes over", requestType: nil)))
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
        }
        let member = Member(
            session: session, userId: params.userId, role: params.role, enteredAsAnchor: params.role == .anchor,
            privileges: privileges, enteredAt: now.unixMillis)
        var room = rooms[roomId]!
        let existingAnchors = room.anchorOrder
        room.members[params.userId] = member
        if params.role == .anchor { room.anchorOrder.append(params.userId) }
        rooms[roomId] = room
        seat(session, (roomId, params.userId))

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

    /// Removes a member; anchors' departure is announced with `remoteReason`. Dissolves an empty room.
    private mutating func removeMember(_ userId: String, from roomId: String, remoteReason: Int, record: String, at now: EventTime) -> [Action] {
        guard rooms[roomId]?.members[userId] != nil else { return [] }
        var actions = endPKLinks(of: PKEnd(roomId: roomId, userId: userId))
        var room = rooms[roomId]!
        let member = room.members[userId]!
        seat(member.session, nil)
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
    private mutating func dropMicState(of userId: String, in roomId: String) {
        guard var room = rooms[roomId] else { return }
        room.micRequests.removeAll { $0 == userId }
        room.invitations[userId] = nil
        room.invitations = room.invitations.filter { $0.value != userId }
        rooms[roomId] = room
    }

    // MARK: Roles and mic-connection

    private mutating func switchRole(_ userId: String, in roomId: String, to role: Role, at now: EventTime) throws(LiveRoomError) -> [Action] {
        let member = rooms[roomId]!.members[userId]!
        guard member.role != role else {
            return [.send(member.session, .onSwitchRole(errCode: 0, errMsg: "", role: role))]
        }
        if role == .anchor, !member.enteredAsAnchor, !member.micApproved {
            throw LiveRoomError(
                ErrorCode.micApprovalRequired,
                "switching to anchor needs an anchor to accept your mic request (requestMic) or an accepted invitation")
        }
        return try setRole(userId, in: roomId, to: role, at: now)
    }

    /// Changes a member's role and announces it. Leaving the anchor role ends mic approval.
    private mutating func setRole(_ userId: String, in roomId: String, to role: Role, at now: EventTime) throws(LiveRoomError) -> [Action] {
        var room = rooms[roomId]!
        var member = room.members[userId]!
        if role == .anchor, room.anchorCount >= configuration.maxAnchorsPerRoom {
            throw tooManyAnchors(roomId)
        }
        member.role = role
        if role == .anchor {
            room.anchorOrder.append(userId)
            room.micRequests.removeAll { $0 == userId }
            room.invitations[userId] = nil
        } else {
            room.anchorOrder.removeAll { $0 == userId }
            member.micApproved = false
        }
        rooms[roomId] = room
        // An anchor who becomes audience ends its PK links and stops publishing first.
        var actions: [Action] = role == .audience ? endPKLinks(of: PKEnd(roomId: roomId, userId: userId)) + stopPublishing(userId, in: roomId) : []
        room = rooms[roomId]!
        member.publishing = room.members[userId]!.publishing
        room.members[userId] = member
        rooms[roomId] = room
        actions += [
            .send(member.session, .onSwitchRole(errCode: 0, errMsg: "", role: role)),
            .record(.roleChanged(roomId: roomId, userId: userId, role: role, at: now.unixMillis)),
        ]
        for s in room.sessions(except: userId) {
            actions.append(.send(s, role == .anchor ? .onRemoteUserEnterRoom(userId: userId) : .onRemoteUserLeaveRoom(userId: userId, reason: 3)))
        }
        return actions
    }

    private mutating func requestMic(_ userId: String, in roomId: String) throws(LiveRoomError) -> [Action] {
        var room = rooms[roomId]!
        guard room.members[userId]!.role == .audience else {
            throw LiveRoomError(ErrorCode.audienceOnly, "you are already an anchor")
        }
        let anchors = room.anchorSessions()
        guard !anchors.isEmpty else {
            throw LiveRoomError(ErrorCode.noSuchUserOrRequest, "\(Self.room(roomId)) has no anchor to ask")
        }
        if !room.micRequests.contains(userId) { room.micRequests.append(userId) }
        rooms[roomId] = room
        return anchors.map { .send($0, .onMicRequest(userId: userId)) }
    }

    private mutating func answerMicRequest(from target: String, by anchorId: String, in roomId: String, accept: Bool, at now: EventTime) throws(LiveRoomError) -> [Action] {
        try requireAnchor(anchorId, in: roomId)
        var room = rooms[roomId]!
        guard room.micRequests.contains(target), let asker = room.members[target] else {
            throw LiveRoomError(ErrorCode.noSuchUserOrRequest, "no pending mic request from \(target.quoted)")
        }
        room.micRequests.removeAll { $0 == target }
        rooms[roomId] = room
        guard accept else {
            return [.send(asker.session, .onMicRequestResult(userId: anchorId, accepted: false, reason: "rejected by \(anchorId)"))]
        }
        do {
            let switched = try bringOnMic(target, in: roomId, at: now)
            return [.send(asker.session, .onMicRequestResult(userId: anchorId, accepted: true, reason: "accepted by \(anchorId)"))] + switched
        } catch {
            let anchorSession = room.members[anchorId]!.session
            return [
                .send(asker.session, .onMicRequestResult(userId: anchorId, accepted: false, reason: error.message)),
                .send(anchorSession, .error(error, requestType: "acceptMic")),
            ]
        }
    }

    private mutating func inviteMic(_ target: String, by anchorId: String, in roomId: String) throws(LiveRoomError) -> [Action] {
        try requireAnchor(anchorId, in: roomId)
        guard let invited = rooms[roomId]!.members[target] else {
            throw LiveRoomError(ErrorCode.noSuchUserOrRequest, "user \(target.quoted) is not in \(Self.room(roomId))")
        }
        guard invited.role == .audience else {
            throw LiveRoomError(ErrorCode.audienceOnly, "user \(target.quoted) is already an anchor")
        }
        rooms[roomId]!.invitations[target] = anchorId
        return [.send(invited.session, .onMicInvitation(userId: anchorId))]
    }

    private mutating func answerInvitation(_ userId: String, in roomId: String, accept: Bool, at now: EventTime) throws(LiveRoomError) -> [Action] {
        guard let inviterId = rooms[roomId]!.invitations[userId] else {
            throw LiveRoomError(ErrorCode.noSuchUserOrRequest, "you have no pending mic invitation")
        }
        rooms[roomId]!.invitations[userId] = nil
        let inviterSession = rooms[roomId]!.members[inviterId]?.session
        guard accept else {
            return inviterSession.map { [.send($0, .onMicInvitationResult(userId: userId, accepted: false, reason: "rejected by \(userId)"))] } ?? []
        }
        do {
            let switched = try bringOnMic(userId, in: roomId, at: now)
            let answer = inviterSession.map { [Action.send($0, .onMicInvitationResult(userId: userId, accepted: true, reason: "accepted"))] } ?? []
            return answer + switched
        } catch {
            let answer = inviterSession.map { [Action.send($0, .onMicInvitationResult(userId: userId, accepted: false, reason: error.message))] } ?? []
            return answer + [.send(rooms[roomId]!.members[userId]!.session, .error(error, requestType: "acceptInvitation"))]
        }
    }

    /// Switches an approved audience member to anchor; they stay approved while on mic.
    private mutating func bringOnMic(_ userId: String, in roomId: String, at now: EventTime) throws(LiveRoomError) -> [Action] {
        let actions = try setRole(userId, in: roomId, to: .anchor, at: now)
        rooms[roomId]!.members[userId]!.micApproved = true
        return actions
    }

    private mutating func endMic(_ target: String, by anchorId: String, in roomId: String, at now: EventTime) throws(LiveRoomError) -> [Action] {
        try requireAnchor(anchorId, in: roomId)
        guard let member = rooms[roomId]!.members[target], member.role == .anchor else {
            throw LiveRoomError(ErrorCode.noSuchUserOrRequest, "user \(target.quoted) is not on mic in \(Self.room(roomId))")
        }
        guard member.micApproved else {
            throw LiveRoomError(ErrorCode.notCoHost, "user \(target.quoted) is an anchor of the room, not a mic-connection co-host")
        }
        return try setRole(target, in: roomId, to: .audience, at: now)
    }

    private func requireAnchor(_ userId: String, in roomId: String) throws(LiveRoomError) {
        guard rooms[roomId]!.members[userId]!.role == .anchor else {
            throw LiveRoomError(ErrorCode.anchorOnly, "only an anchor may do this")
        }
    }

    // MARK: Publishing

    /// Ends a member's publishing: the media server closes it and the room is told.
    private mutating func stopPublishing(_ userId: String, in roomId: String) -> [Action] {
        guard let before = rooms[roomId]?.members[userId], before.publishing != nil else { return [] }
        var after = before
        after.publishing = nil
        rooms[roomId]!.members[userId] = after
        return [.media(.stopPublishing(roomId: roomId, userId: userId))] + availabilityChanges(of: userId, in: roomId, from: before, to: after)
    }

    private mutating func setMuted(_ userId: String, in roomId: String, _ change: (inout Member) -> Void) -> [Action] {
        let before = rooms[roomId]!.members[userId]!
        var after = before
        change(&after)
        rooms[roomId]!.members[userId] = after
        return availabilityChanges(of: userId, in: roomId, from: before, to: after)
    }

    /// onUserVideoAvailable / onUserAudioAvailable to everyone else for what changed.
    /// Rooms linked with the member's through PK hear of it too, as far as their forward mode lets through.
    private func availabilityChanges(of userId: String, in roomId: String, from before: Member, to after: Member, except: String? = nil) -> [Action] {
        var actions: [Action] = []
        func tell(_ sessions: [SessionID], video: Bool, audio: Bool) {
            for s in sessions {
                if before.videoAvailable != after.videoAvailable, video {
                    actions.append(.send(s, .onUserVideoAvailable(userId: userId, available: after.videoAvailable)))
                }
                if before.audioAvailable != after.audioAvailable, audio {
                    actions.append(.send(s, .onUserAudioAvailable(userId: userId, available: after.audioAvailable)))
                }
            }
        }
        tell(rooms[roomId]!.sessions(except: except ?? userId), video: true, audio: true)
        // A replaced session's media ends with its leaving (`except` is set only then).
        if except == nil, before.videoAvailable != after.videoAvailable || before.audioAvailable != after.audioAvailable {
            actions.append(
                .record(
                    .mediaChanged(
                        roomId: roomId, userId: userId,
                        video: before.videoAvailable != after.videoAvailable ? after.videoAvailable : nil,
                        audio: before.audioAvailable != after.audioAvailable ? after.audioAvailable : nil)))
        }
        let end = PKEnd(roomId: roomId, userId: userId)
        for viewer in roomsSeeing(end).sorted() {
            let mode = forwardMode(from: roomId, into: viewer)
            tell(rooms[viewer]?.sessions() ?? [], video: mode.video, audio: mode.audio)
        }
        // The homes of linked rooms on other nodes hear what the anchor sends now.
        return actions + peerNodes(seeing: end).map { .pkPeer(.anchorState(end, AnchorState(after), node: $0)) }
    }

    // MARK: Room messages

    private func requireAnchor(_ userId: String, in roomId: String, to what: String) throws(LiveRoomError) {
        guard rooms[roomId]?.members[userId]?.role == .anchor else {
            throw LiveRoomError(ErrorCode.anchorOnly, "only anchors \(what)")
        }
    }

    /// The custom message (cmdID 1, high priority, as TRTC's guide sends pop-ups) of a pop-up
    /// `session`'s user made, to everyone else in its room; nothing when it has left.
    public mutating func popUpMessage(_ data: String, from session: SessionID) -> [Action] {
        guard let (roomId, userId) = sessions[session], var member = rooms[roomId]?.members[userId] else { return [] }
        let seq = member.nextSeq
        member.nextSeq += 1
        rooms[roomId]!.members[userId] = member
        let event = ServerEvent.onRecvCustomCmdMsg(userId: userId, cmdID: 1, seq: seq, data: data)
        return rooms[roomId]!.sessions(except: userId).map { .send($0, event, .high) }
    }

    private mutating func sendCustomCmdMsg(_ message: CustomCmdMsg, from userId: String, in roomId: String, at now: EventTime) throws(LiveRoomError) -> [Action] {
        guard configuration.customCmdIDs.contains(message.cmdID) else {
            throw LiveRoomError(
                ErrorCode.invalidCustomMessage,
                "cmdID must be from \(configuration.customCmdIDs.lowerBound) to \(configuration.customCmdIDs.upperBound), not \(message.cmdID)")
        }
        let size = message.data.utf8.count
        guard size <= configuration.maxCustomMessageBytes else {
            throw LiveRoomError(
                ErrorCode.invalidCustomMessage, "data is \(size) bytes; at most \(configuration.maxCustomMessageBytes) are allowed")
        }
        var member = rooms[roomId]!.members[userId]!
        try member.limiter.admit(size: size, now: now.monotonic)
        let seq = member.nextSeq
        member.nextSeq += 1
        rooms[roomId]!.members[userId] = member
        let event = ServerEvent.onRecvCustomCmdMsg(userId: userId, cmdID: message.cmdID, seq: seq, data: message.data)
        return rooms[roomId]!.sessions(except: userId).map { .send($0, event) }
    }

    /// Whether an action is a message to someone in `room` (who is about to be told the room is gone).
    static func isSend(to room: Room, _ action: Action) -> Bool {
        guard case .send(let session, _, _) = action else { return false }
        return room.members.values.contains { $0.session == session }
    }

    // MARK: Errors

    private func noSuchRoom(_ roomId: String) -> LiveRoomError {
        LiveRoomError(ErrorCode.noSuchUserOrRequest, "\(Self.room(roomId)) does not exist")
    }

    private func tooManyAnchors(_ roomId: String) -> LiveRoomError {
        LiveRoomError(ErrorCode.tooManyAnchors, "\(Self.room(roomId)) already has \(configuration.maxAnchorsPerRoom) anchors, the most allowed")
    }

    /// A room key as users read it: `room 123` or `room "shop1"`.
    static func room(_ key: String) -> String {
        RoomID(key: key).description
    }
}
