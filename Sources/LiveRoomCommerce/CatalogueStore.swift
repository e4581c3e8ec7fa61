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
}
