import Foundation
import Testing

@testable import LiveRoomProtocol

@Suite struct JSONTextTests {
    /// What Foundation's encoder writes, as `jsonText` did before ``JSONText``.
    static func foundationText(_ value: JSONValue) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// A random value of at most `depth` levels, its strings drawn from awkward characters (its
    /// keys, with `asciiKeys`, from printable ASCII: Foundation sorts other keys by a collation).
    static func randomValue(_ rng: inout some RandomNumberGenerator, depth: Int, asciiKeys: Bool = true) -> JSONValue {
        let characters: [String] = ["a", "Z", "0", " ", "\"", "\\", "/", "\u{0}", "\u{1f}", "\n", "\t", "\u{8}", "\u{c}", "\r", "\u{7f}", "é", "e\u{301}", "😀", "\u{2028}", "\u{feff}", "中", "_", "-", "{", "]"]
        let keyCharacters = asciiKeys ? ["a", "b", "B", "Z", "0", "9", " ", "\"", "\\", "/", "_", "-", "{", "]", "~"] : characters
        func string(_ characters: [String]) -> String { (0..<Int.random(in: 0...8, using: &rng)).map { _ in characters.randomElement(using: &rng)! }.joined() }
        let numbers: [Double] = [0, -0.0, 1, -1, 0.1, 1e-7, 1.5e20, 1e16, 9e15, 8_999_999_999_999_999, 123.456, Double.leastNonzeroMagnitude, 1.7976931348623157e308, 2.5, 1e21, 4_294_967_295]
        switch Int.random(in: 0..<(depth > 0 ? 8 : 5), using: &rng) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &rng))
        case 2: return .number(Bool.random(using: &rng) ? numbers.randomElement(using: &rng)! : Double(Int.random(in: -1_000_000...1_000_000, using: &rng)) / 64)
        case 3, 4: return .string(string(characters))
        case 5: return .array((0..<Int.random(in: 0...4, using: &rng)).map { _ in randomValue(&rng, depth: depth - 1, asciiKeys: asciiKeys) })
        default:
            var members: [String: JSONValue] = [:]
            for _ in 0..<Int.random(in: 0...5, using: &rng) { members[string(keyCharacters)] = randomValue(&rng, depth: depth - 1, asciiKeys: asciiKeys) }
            return .object(members)
        }
    }

    @Test func theTextIsFoundationsByteForByteAndParsesBack() throws {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<3000 {
            let value = Self.randomValue(&rng, depth: 4)
            let text = value.jsonText
            let foundation = try Self.foundationText(value)
            #expect(text == foundation, "mine: \(text)\nfoundation: \(foundation)")
            #expect(try JSONValue.parse(text) == value, "\(text)")
        }
    }

    @Test func anyKeysAreWrittenInTheOrderOfTheirBytesAndParseBack() throws {
        #expect(JSONValue.object(["é": 1, "😀": 2, "\n": 3, "Z": 4, "a": 5, "e\u{301}x": 6]).jsonText == #"{"\n":3,"Z":4,"a":5,"e\#u{301}x":6,"é":1,"😀":2}"#)
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<1000 {
            let value = Self.randomValue(&rng, depth: 4, asciiKeys: false)
            #expect(try JSONValue.parse(value.jsonText) == value)
        }
    }

    @Test func foundationsTextParsesToTheSameValues() throws {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<1000 {
            let text = try Self.foundationText(Self.randomValue(&rng, depth: 4, asciiKeys: false))
            #expect(try JSONValue.parse(text) == (try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))), "\(text)")
        }
    }

    @Test(arguments: [
        #" {"a" : [1, -2.5e3, true, false, null, "x\u00e9\ud83d\ude00\/\n"] } "#, "-0", "1E+2", "0.5", "\u{feff}1", #"{"a":1,"a":2}"#, "[]", "{}", #""""#,
        "123456789012345678901234567890",
    ])
    func validTextParsesAsFoundationParsedIt(_ text: String) throws {
        #expect(try JSONValue.parse(text) == (try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))))
    }

    @Test(arguments: [
        "", " ", "[1,]", "{\"a\":1,}", "01", "[01]", "-", "1.", ".5", "1e", "+1", "[1 2]", "{\"a\" 1}", "{1:2}", "{\"a\":}", "tru", "nul", "nulll",
        "\"a\u{1}b\"", "\"\\x\"", "\"\\ud800\"", "\"\\udc00x\"", "\"\\ud800\\u0041\"", "\"\\u12\"", "\"abc", "1e400", "-1e400", "[1]]", "{\"a\":1}}", "NaN",
        "Infinity", "'a'", String(repeating: "[", count: 600) + String(repeating: "]", count: 600),
    ])
    func malformedTextIsRefused(_ text: String) {
        #expect(throws: (any Error).self) { try JSONValue.parse(text) }
    }

    @Test func nestingUpToTheLimitParses() throws {
        let depth = JSONText.maxDepth
        let text = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        var value = try JSONValue.parse(text)
        for _ in 1..<depth {
            guard case .array(let items) = value, items.count == 1 else { Issue.record("not nested"); return }
            value = items[0]
        }
        #expect(value == .array([]))
    }

    @Test func numbersJSONCannotWriteAreNull() {
        #expect(JSONValue.array([.number(.nan), .number(.infinity), 1]).jsonText == "[null,null,1]")
    }
}
