extension String {
    /// The most characters of a client's text that an error message repeats.
    public static let maxQuotedLength = 64

    /// The text in double quotes for an error message: at most ``maxQuotedLength`` characters
    /// (then "…"), with control characters escaped, so an answer never echoes a large input
    /// back and no input can start a new line.
    public var quoted: String {
        "\"" + escaped(maxLength: Self.maxQuotedLength) + "\""
    }

    /// The text with every character that could end or rewrite a line escaped (control
    /// characters, the Unicode line and paragraph separators, and the backslash itself, so an
    /// escaped `\n` cannot be told from one in the input), cut after `maxLength` characters
    /// with "…". Used for client text in error messages and in every log line.
    public func escaped(maxLength: Int) -> String {
        var result = ""
        for (index, character) in self.enumerated() {
            if index == maxLength {
                result += "…"
                break
            }
            if character == "\\" {
                result += "\\\\"
            } else if character.unicodeScalars.contains(where: Self.breaksLines) {
                result += character.unicodeScalars.map { $0.escaped(asASCII: true) }.joined()
            } else {
                result.append(character)
            }
        }
        return result
    }

    private static func breaksLines(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .control, .lineSeparator, .paragraphSeparator, .format: true
        default: false
        }
    }
}
