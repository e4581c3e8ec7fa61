/// The rects of the float, grid, screen-share and PK templates for a number of pictures.
/// Every rect is even-aligned and inside the canvas.
public enum TemplateGeometry {
    /// The most pictures a template lays out.
    public static let maxPictures = StreamMixingConfig.maxInputs

    /// The rects (in picture order, picture 0 the main one) and each one's default fill mode.
    public static func rects(for template: LayoutTemplate, canvas: MixSize, count: Int) -> [(rect: MixRect, fillMode: VideoFillMode)] {
        let count = min(count, maxPictures)
        guard count > 0, !canvas.isEmpty else { return [] }
        switch template {
        case .float: return float(canvas: canvas, count: count)
        case .grid: return grid(canvas: canvas, count: count).map { ($0, .fit) }
        case .screenShare: return screenShare(canvas: canvas, count: count)
        case .pk: return columns(canvas: canvas, count: count).map { ($0, .fill) }
        case .custom: return []
        }
    }

    /// The grid's columns and rows: 1 → 1×1, 2 → 2×1, 3–4 → 2×2, 5–9 → 3×3, 10–16 → 4×4.
    public static func gridDimensions(count: Int) -> (columns: Int, rows: Int) {
        switch count {
        case ...1: (1, 1)
        case 2: (2, 1)
        case 3...4: (2, 2)
        case 5...9: (3, 3)
        default: (4, 4)
        }
    }

    /// Equal cells, row by row from the top left; the grid is centred when the canvas
    /// does not divide evenly.
    public static func grid(canvas: MixSize, count: Int) -> [MixRect] {
        let (columns, rows) = gridDimensions(count: count)
        let cellWidth = (canvas.width / columns) & ~1
        let cellHeight = (canvas.height / rows) & ~1
        let originX = ((canvas.width - columns * cellWidth) / 2) & ~1
        let originY = ((canvas.height - rows * cellHeight) / 2) & ~1
        return (0..<min(count, columns * rows)).map { index in
            MixRect(
                x: originX + (index % columns) * cellWidth, y: originY + (index / columns) * cellHeight,
                width: cellWidth, height: cellHeight)
        }
    }

    /// The PK template's places: `count` equal full-height columns left to right (1 the whole
    /// canvas, 2 halves, 3 thirds), centred when the width does not divide evenly. A canvas
    /// too narrow for a 2-pixel column each gets as many as fit.
    public static func columns(canvas: MixSize, count: Int) -> [MixRect] {
        let count = min(count, maxPictures, canvas.width / 2)
        guard count > 0, canvas.height >= 2 else { return [] }
        let columnWidth = (canvas.width / count) & ~1
        let height = canvas.height & ~1
        let originX = ((canvas.width - count * columnWidth) / 2) & ~1
        return (0..<count).map { index in
            MixRect(x: originX + index * columnWidth, y: 0, width: columnWidth, height: height)
        }
    }

    /// The gap between floating tiles and the canvas edge: 1/64 of the short side, even, at least 2.
    public static func floatGap(canvas: MixSize) -> Int {
        max(2, (min(canvas.width, canvas.height) / 64) & ~1)
    }

    /// Picture 0 fills the canvas; the others are tiles of the canvas' aspect, four to a
    /// column, stacked bottom-up along the right edge, further columns to the left.
    public static func float(canvas: MixSize, count: Int) -> [(rect: MixRect, fillMode: VideoFillMode)] {
        var result: [(rect: MixRect, fillMode: VideoFillMode)] = [(MixRect(x: 0, y: 0, width: canvas.width, height: canvas.height), .fill)]
        let gap = floatGap(canvas: canvas)
        // Four tiles and five gaps fit across and down; the tile keeps the canvas' aspect.
        let availableWidth = (canvas.width - 5 * gap) / 4
        let availableHeight = (canvas.height - 5 * gap) / 4
        let tileWidth: Int
        let tileHeight: Int
        if availableWidth * canvas.height <= availableHeight * canvas.width {
            tileWidth = availableWidth & ~1
            tileHeight = (availableWidth * canvas.height / canvas.width) & ~1
        } else {
            tileHeight = availableHeight & ~1
            tileWidth = (availableHeight * canvas.width / canvas.height) & ~1
        }
        guard tileWidth >= 2, tileHeight >= 2 else { return result }
        for tile in 0..<(count - 1) {
            let column = tile / 4
            let row = tile % 4
            let x = canvas.width - gap - (column + 1) * tileWidth - column * gap
            let y = canvas.height - gap - (row + 1) * tileHeight - row * gap
            result.append((MixRect(x: x, y: y, width: tileWidth, height: tileHeight), .fill))
        }
        return result
    }

    /// Picture 0 large on the left (fit, as a shared screen must not be cropped); the others
    /// in a column of tiles (1/5 of the width, 1/8 of the height) on the right, top-down,
    /// a second column past eight.
    public static func screenShare(canvas: MixSize, count: Int) -> [(rect: MixRect, fillMode: VideoFillMode)] {
        guard count > 1 else { return [(MixRect(x: 0, y: 0, width: canvas.width, height: canvas.height), .fit)] }
        let tiles = count - 1
        let columns = tiles <= 8 ? 1 : 2
        let tileWidth = (canvas.width / 5) & ~1
        let tileHeight = (canvas.height / 8) & ~1
        let mainWidth = canvas.width - columns * tileWidth
        var result: [(rect: MixRect, fillMode: VideoFillMode)] = [(MixRect(x: 0, y: 0, width: mainWidth, height: canvas.height), .fit)]
        for tile in 0..<tiles {
            result.append((MixRect(x: mainWidth + (tile / 8) * tileWidth, y: (tile % 8) * tileHeight, width: tileWidth, height: tileHeight), .fill))
        }
        return result
    }
}
