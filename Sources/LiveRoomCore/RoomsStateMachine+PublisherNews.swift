import LiveRoomProtocol

extension RoomsStateMachine {
    /// The rooms whose publishers, as a mix of the room sees them (its own anchors, then the PK
    /// anchors it is linked with), may have changed with `actions`: each room says so itself,
    /// for it tells its members when an anchor arrives, leaves or changes what it sends, and
    /// records media changes, departures, role changes and PK links even when nobody else is
    /// there to hear. Call it on the actions of one event, right after it.
    public func roomsWithPublisherNews(in actions: [Action]) -> Set<String> {
        var rooms: Set<String> = []
        for action in actions {
            switch action {
            case .send(let session, let event, _):
                switch event {
                case .onRemoteUserEnterRoom, .onRemoteUserLeaveRoom, .onUserVideoAvailable, .onUserAudioAvailable:
                    if let room = directory[session]?.roomId { rooms.insert(room) }
                default:
                    break
                }
            case .record(let record):
                switch record {
                case .mediaChanged(let roomId, _, _, _), .userLeft(let roomId, _, _, _), .roleChanged(let roomId, _, _, _),
                    .roomDissolved(let roomId, _, _):
                    rooms.insert(roomId)
                case .pkLinked(let link, _), .pkUnlinked(let link, _):
                    rooms.formUnion([link.caller.roomId, link.callee.roomId])
                default:
                    break
                }
            default:
                break
            }
        }
        return rooms
    }
}
