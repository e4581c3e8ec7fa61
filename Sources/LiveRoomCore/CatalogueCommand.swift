import LiveRoomProtocol

/// Catalogue work the room core hands to the server, which carries it out against the store
/// and answers `session` (onProductResult, onProductList) and tells the room (onProductChanged).
public enum CatalogueCommand: Sendable, Hashable {
    /// Adds the product `fields` describe (an anchor asked).
    case add(session: SessionID, roomId: String, fields: JSONValue)
    /// Applies `changes` (with the `version` they were based on) to a product.
    case edit(session: SessionID, roomId: String, itemNumber: Int, changes: JSONValue)
    case remove(session: SessionID, roomId: String, itemNumber: Int)
    /// Answers `session` with a page of the room's catalogue.
    case list(session: SessionID, roomId: String, offset: Int, limit: Int)
    /// Makes a product the room's current pop-up (and, with `custom`, a custom message too).
    case pop(session: SessionID, roomId: String, userId: String, itemNumber: Int, custom: Bool)
    /// Ends the room's pop-up.
    case unpop(session: SessionID, roomId: String, userId: String)
    /// Removes a replay and its file.
    case removeReplay(session: SessionID, roomId: String, replayId: String)
    /// Makes `userId` one of the room's shop owners (`grant`) or no longer one.
    case owner(session: SessionID, roomId: String, userId: String, grant: Bool)
    /// Sets the rooms whose anchors may link with this room's without a request (an owner's
    /// setPKAllowList; the shop checks the owner, then the room's machine keeps the list).
    case pkAllowList(session: SessionID, roomId: String, rooms: [RoomID])
    /// Reserves stock for `userId` (anyone in the room may buy), answering with onBuyResult
    /// and telling the anchors (onProductSold) and the room (onProductChanged).
    case buy(session: SessionID, roomId: String, userId: String, itemNumber: Int, quantity: Int, requestId: String?)
}

extension CatalogueCommand {
    /// The room whose commands this one must follow in order; nil for a purchase, which runs
    /// beside the others.
    public var orderedInRoom: String? {
        switch self {
        case .add(_, let roomId, _), .edit(_, let roomId, _, _), .remove(_, let roomId, _), .list(_, let roomId, _, _), .pop(_, let roomId, _, _, _),
            .unpop(_, let roomId, _), .removeReplay(_, let roomId, _), .owner(_, let roomId, _, _), .pkAllowList(_, let roomId, _):
            roomId
        case .buy: nil
        }
    }
}

