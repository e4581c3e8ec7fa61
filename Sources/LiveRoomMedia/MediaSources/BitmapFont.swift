/// A built-in 5x7 pixel font for digits, upper-case letters and a few marks, so test
/// cards can carry readable text without font files. Lower case draws as upper case;
/// anything else draws as '?'.
enum BitmapFont {
    static let glyphWidth = 5
    static let glyphHeight = 7

    /// Seven rows per glyph, the leftmost pixel in bit 4.
    static let glyphs: [Character: [UInt8]] = [
        "0": [0b01110, 0b10001, 0b10011, 0b10101, 0b11001, 0b10001, 0b01110],
        "1": [0b00100, 0b01100, 0b00100, 0b00100, 0b00100, 0b00100, 0b01110],
        "2": [0b01110, 0b10001, 0b00001, 0b00010, 0b00100, 0b01000, 0b11111],
        "3": [0b11111, 0b00010, 0b00100, 0b00010, 0b00001, 0b10001, 0b01110],
        "4": [0b00010, 0b00110, 0b01010, 0b10010, 0b11111, 0b00010, 0b00010],
        "5": [0b11111, 0b10000, 0b11110, 0b00001, 0b00001, 0b10001, 0b01110],
        "6": [0b00110, 0b01000, 0b10000, 0b11110, 0b10001, 0b10001, 0b01110],
        "7": [0b11111, 0b00001, 0b00010, 0b00100, 0b01000, 0b01000, 0b01000],
        "8": [0b01110, 0b10001, 0b10001, 0b01110, 0b10001, 0b10001, 0b01110],
        "9": [0b01110, 0b10001, 0b10001, 0b01111, 0b00001, 0b00010, 0b01100],
        "A": [0b01110, 0b10001, 0b10001, 0b11111, 0b10001, 0b10001, 0b10001],
        "B": [0b11110, 0b10001, 0b10001, 0b11110, 0b10001, 0b10001, 0b11110],
        "C": [0b01110, 0b10001, 0b10000, 0b10000, 0b10000, 0b10001, 0b01110],
        "D": [0b11100, 0b10010, 0b10001, 0b10001, 0b10001, 0b10010, 0b11100],
        "E": [0b11111, 0b10000, 0b10000, 0b11110, 0b10000, 0b10000, 0b11111],
        "F": [0b11111, 0b10000, 0b10000, 0b11110, 0b10000, 0b10000, 0b10000],
        "G": [0b01110, 0b10001, 0b10000, 0b10111, 0b10001, 0b10001, 0b01111],
        "H": [0b10001, 0b10001, 0b10001, 0b11111, 0b10001, 0b10001, 0b10001],
        "I": [0b01110, 0b00100, 0b00100, 0b00100, 0b00100, 0b00100, 0b01110],
        "J": [0b00111, 0b00010, 0b00010, 0b00010, 0b00010, 0b10010, 0b01100],
        "K": [0b10001, 0b10010, 0b10100, 0b11000, 0b10100, 0b10010, 0b10001],
        "L": [0b10000, 0b10000, 0b10000, 0b10000, 0b10000, 0b10000, 0b11111],
        "M": [0b10001, 0b11011, 0b10101, 0b10101, 0b10001, 0b10001, 0b10001],
        "N": [0b10001, 0b10001, 0b11001, 0b10101, 0b10011, 0b10001, 0b10001],
        "O": [0b01110, 0b10001, 0b10001, 0b10001, 0b10001, 0b10001, 0b01110],
        "P": [0b11110, 0b10001, 0b10001, 0b11110, 0b10000, 0b10000, 0b10000],
        "Q": [0b01110, 0b10001, 0b10001, 0b10001, 0b10101, 0b10010, 0b01101],
        "R": [0b11110, 0b10001, 0b10001, 0b11110, 0b10100, 0b10010, 0b10001],
        "S": [0b01111, 0b10000, 0b10000, 0b01110, 0b00001, 0b00001, 0b11110],
        "T": [0b11111, 0b00100, 0b00100, 0b00100, 0b00100, 0b00100, 0b00100],
        "U": [0b10001, 0b10001, 0b10001, 0b10001, 0b10001, 0b10001, 0b01110],
        "V": [0b10001, 0b10001, 0b10001, 0b10001, 0b10001, 0b01010, 0b00100],
        "W": [0b10001, 0b10001, 0b10001, 0b10101, 0b10101, 0b10101, 0b01010],
        "X": [0b10001, 0b10001, 0b01010, 0b00100, 0b01010, 0b10001, 0b10001],
        "Y": [0b10001, 0b10001, 0b10001, 0b01010, 0b00100, 0b00100, 0b00100],
        "Z": [0b11111, 0b00001, 0b00010, 0b00100, 0b01000, 0b10000, 0b11111],
        "-": [0b00000, 0b00000, 0b00000, 0b11111, 0b00000, 0b00000, 0b00000],
        "_": [0b00000, 0b00000, 0b00000, 0b00000, 0b00000, 0b00000, 0b11111],
        ":": [0b00000, 0b01100, 0b01100, 0b00000, 0b01100, 0b01100, 0b00000],
        ".": [0b00000, 0b00000, 0b00000, 0b00000, 0b00000, 0b01100, 0b01100],
        " ": [0b00000, 0b00000, 0b00000, 0b00000, 0b00000, 0b00000, 0b00000],
        "?": [0b01110, 0b10001, 0b00001, 0b00010, 0b00100, 0b00000, 0b00100],
    ]

    /// The rows of the glyph that `character` draws as.
    static func rows(for character: Character) -> [UInt8] {
        let upper = Character(character.uppercased())
        return glyphs[upper] ?? glyphs["?"]!
    }

    /// Whether the glyph for `character` has its pixel at (`column`, `row`) set.
    static func isSet(_ character: Character, column: Int, row: Int) -> Bool {
        rows(for: character)[row] & (1 << (glyphWidth - 1 - column)) != 0
    }

    /// Draws `text` with its top-left corner at (`x`, `y`), each font pixel `scale` pixels
    /// square and glyphs one font pixel apart; clips at the frame edges.
    static func draw(_ text: String, into frame: inout VideoFrame, x: Int, y: Int, scale: Int, color: YUVColor) {
        var originX = x
        for character in text {
            let rows = rows(for: character)
            for (row, bits) in rows.enumerated() where bits != 0 {
                for column in 0..<glyphWidth where bits & (1 << (glyphWidth - 1 - column)) != 0 {
                    frame.fillRect(x: originX + column * scale, y: y + row * scale, width: scale, height: scale, color: color)
                }
            }
            originX += (glyphWidth + 1) * scale
        }
    }

    /// Width in pixels of `count` glyphs drawn at `scale`, without the trailing gap.
    static func textWidth(count: Int, scale: Int) -> Int {
        count == 0 ? 0 : (count * (glyphWidth + 1) - 1) * scale
    }
}

extension VideoFrame {
    /// Fills a rectangle (clipped to the frame) with one colour. Chroma is written for
    /// every 2x2 block the rectangle touches.
    mutating func fillRect(x: Int, y top: Int, width w: Int, height h: Int, color: YUVColor) {
        let x0 = max(0, x), x1 = min(width, x + w)
        let y0 = max(0, top), y1 = min(height, top + h)
        guard x0 < x1, y0 < y1 else { return }
        let frameWidth = width
        y.withUnsafeMutableBufferPointer { luma in
            for row in y0..<y1 {
                let start = row * frameWidth
                luma[(start + x0)..<(start + x1)].update(repeating: color.y)
            }
        }
        let cw = chromaWidth
        let cx0 = x0 / 2, cx1 = (x1 + 1) / 2, cy0 = y0 / 2, cy1 = (y1 + 1) / 2
        u.withUnsafeMutableBufferPointer { plane in
            for row in cy0..<cy1 { plane[(row * cw + cx0)..<(row * cw + cx1)].update(repeating: color.u) }
        }
        v.withUnsafeMutableBufferPointer { plane in
            for row in cy0..<cy1 { plane[(row * cw + cx0)..<(row * cw + cx1)].update(repeating: color.v) }
        }
    }
}
