import LiveRoomProtocol
import Testing

@Suite struct QuotedTests {
    @Test func shortTextIsQuotedAsItIs() {
        #expect("shop1".quoted == "\"shop1\"")
        #expect("".quoted == "\"\"")
    }

    @Test func longTextIsCutAndControlCharactersAreEscaped() {
        #expect(String(repeating: "x", count: 100).quoted == "\"" + String(repeating: "x", count: 64) + "…\"")
        #expect("a\nb\r\u{1B}".quoted == "\"a\\nb\\r\\u{1B}\"")
    }

    @Test func escapingLeavesNoWayToStartOrFakeALine() {
        // Line and paragraph separators, NEL, a right-to-left override, and a backslash that
        // would make a literal "\n" in the input look like an escaped newline.
        let forged = "x\u{2028}y\u{2029}z\u{85}w\u{202E}v\\n"
        let escaped = forged.escaped(maxLength: 100)
        #expect(escaped == "x\\u{2028}y\\u{2029}z\\u{0085}w\\u{202E}v\\\\n")
        #expect(!escaped.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) || $0.value == 0x2028 })
        #expect("abc".escaped(maxLength: 2) == "ab…")
    }

    @Test func anErrorAnswerNeverEchoesALargeInput() throws {
        let type = String(repeating: "A", count: 60_000) + "\nforged"
        #expect(throws: LiveRoomError.self) { try SignalingRequest.parse("{\"type\": \"\(type)\"}") }
        do {
            _ = try SignalingRequest.parse("{\"type\": \"\(type.replacingOccurrences(of: "\n", with: "\\n"))\"}")
            Issue.record("an unknown type parsed")
        } catch {
            #expect(error.code == ErrorCode.unknownRequest)
            // The input quoted (64 characters) and the list of known types, never the input itself.
            #expect(error.message.utf8.count < 1000, "\(error.message.utf8.count) bytes")
            #expect(!error.message.contains("\n"))
        }
        do {
            _ = try SignalingRequest.parse("{\"type\": \"switchRole\", \"role\": \"\(String(repeating: "r", count: 10_000))\"}")
            Issue.record("a bad role parsed")
        } catch {
            #expect(error.code == ErrorCode.invalidField)
            #expect(error.message.utf8.count < 200, "\(error.message)")
        }
    }
}
