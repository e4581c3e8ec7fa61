/// How the video layouts of a mix are decided (the admin API's `MixLayoutMode`).
public enum LayoutTemplate: Int, Sendable, Hashable, Codable {
    /// The first anchor (or the main user) fills the canvas; the others float as small
    /// tiles stacked bottom-up along the right side (`MixLayoutMode` 1).
    case float = 1
    /// The main user (or first anchor) large on the left, the others in a column of small
    /// tiles on the right, two columns past eight (`MixLayoutMode` 2).
    case screenShare = 2
    /// Equal cells: 1 full, 2 side by side, 2×2, 3×3, 4×4 (`MixLayoutMode` 3).
    case grid = 3
    /// The layouts of `videoLayoutList` exactly (`MixLayoutMode` 4; the client API's default).
    case custom = 4
    /// Cross-room PK: the task room's own anchors, then those of linked rooms, side by side
    /// in equal full-height columns, each picture cropped to fill its column (`MixLayoutMode` 5).
    case pk = 5

    public var name: String {
        switch self {
        case .float: "float"
        case .screenShare: "screenShare"
        case .grid: "grid"
        case .custom: "custom"
        case .pk: "pk"
        }
    }
}
