extension String {
    /// The most characters of a client's text that an error message repeats.
    public static let maxQuotedLength = 64

    /// The text in double quotes for an error message or a log line: at most
    /// ``maxQuotedLength`` characters (then "…"), with control characters escaped, so an
    /// answer never echoes a large input back and no input can start a new line.
    public var quoted: String {
        var result = "\""
        for (index, character) in self.enumerated() {
            if index == Self.maxQuotedLength {
                result += "…"
                break
            }
            if character.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
                result += character.unicodeScalars.map { $0.escaped(asASCII: true) }.joined()
            } else {
                result.append(character)
            }
        }
        return result + "\""
    }
}
