import LiveRoomProtocol

/// Where rooms' catalogues are kept: the embedded SQLite database (`LiveRoomStore`), or later
/// a shared one. Every call is one transaction; failures the user must hear are
/// ``LiveRoomError``s with their codes, anything else is the store's own error.
public protocol CatalogueStore: Sendable {
    /// Adds `product` (version 1) to `room`'s catalogue.
    func addProduct(_ product: Product, room: String) async throws -> Product
    /// Replaces a product if its stored version is still `product.version`, storing it as the
    /// next version; -7301 when it is gone, -7302 when someone changed it first.
    func replaceProduct(_ product: Product, room: String) async throws -> Product
    /// Removes a product; -7301 when there is none.
    func removeProduct(_ itemNumber: Int, room: String) async throws
    /// One product, if there is one.
    func product(_ itemNumber: Int, room: String) async throws -> Product?
    /// The room's catalogue, by item number.
    func products(room: String) async throws -> [Product]
    /// Makes `popUp` the room's current pop-up, or (nil) ends it.
    func setPopUp(_ popUp: PopUp?, room: String) async throws
    /// The room's current pop-up, if there is one.
    func popUp(room: String) async throws -> PopUp?
}

/// The product an anchor presents now: who popped it, when, and the message viewers got.
public struct PopUp: Sendable, Hashable {
    public var itemNumber: Int
    public var userId: String
    /// TRTC's `item_popup_msg` JSON.
    public var data: String
    /// Milliseconds since 1970.
    public var poppedAt: Int64

    public init(itemNumber: Int, userId: String, data: String, poppedAt: Int64) {
        self.itemNumber = itemNumber
        self.userId = userId
        self.data = data
        self.poppedAt = poppedAt
    }
}
