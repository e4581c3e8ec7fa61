/// JSON text to and from ``JSONValue``, written for the signaling path: every request is parsed
/// and every event written here, thousands a second in a flash sale, where Foundation's Codable
/// JSON spent most of its time on generic metadata lookups and casts.
///
/// The writer's output is what `JSONEncoder` with `[.sortedKeys, .withoutEscapingSlashes]` wrote
/// before it (tests compare the two): integers up to 9e15 without a fraction, other numbers as
/// Swift prints them (no trailing ".0"), only `"`, `\` and control characters escaped, and keys in
/// the order of their UTF-8 bytes (Foundation's order for the ASCII keys every message has; it
/// sorts other keys by a collation of its own). The parser follows RFC 8259 strictly (no trailing commas, no leading
/// zeros, no unescaped control characters, no lone surrogates, finite numbers only), takes the
/// first of repeated keys as `JSONDecoder` did, and nests at most ``maxDepth`` deep.
enum JSONText {
    /// Arrays and objects nest at most this deep (`JSONDecoder`'s limit).
    static let maxDepth = 512

    struct Malformed: Error {}

    // MARK: Writing

    static func write(_ value: JSONValue) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(value, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    private static func write(_ value: JSONValue, to out: inout [UInt8]) {
        switch value {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .number(let n): writeNumber(n, to: &out)
        case .string(let s): writeString(s, to: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                write(item, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (index, key) in members.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }).enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                writeString(key, to: &out)
                out.append(UInt8(ascii: ":"))
                write(members[key]!, to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    private static func writeNumber(_ n: Double, to out: inout [UInt8]) {
        if n == n.rounded(), abs(n) < 9.0e15 {
            out.append(contentsOf: String(Int64(n)).utf8)
        } else if n.isFinite {
            var text = n.description
            if text.hasSuffix(".0") { text.removeLast(2) }
            out.append(contentsOf: text.utf8)
        } else {
            // JSON cannot write NaN or infinity; no parsed input holds one.
            out.append(contentsOf: "null".utf8)
        }
    }

    private static let hex = Array("0123456789abcdef".utf8)

    private static func writeString(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in s.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x08: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
            case 0x09: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0x0A: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0C: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
            case 0x0D: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0..<0x20:
                out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    // MARK: Parsing

    static func parse(_ text: String) throws(Malformed) -> JSONValue {
        var text = text
        return try text.withUTF8 { bytes in
            Result { () throws(Malformed) -> JSONValue in
                var parser = Parser(bytes: bytes)
                // A byte order mark before the text, as JSONDecoder took it.
                if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { parser.index = 3 }
                let value = try parser.value(depth: 0)
                parser.skipWhitespace()
                guard parser.index == bytes.count else { throw Malformed() }
                return value
            }
        }.get()
    }

    private struct Parser {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        init(bytes: UnsafeBufferPointer<UInt8>) {
            self.bytes = bytes
        }

        mutating func skipWhitespace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        mutating func take(_ byte: UInt8) -> Bool {
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        mutating func expect(_ word: String) throws(Malformed) {
            for byte in word.utf8 {
                guard take(byte) else { throw Malformed() }
            }
        }

        mutating func value(depth: Int) throws(Malformed) -> JSONValue {
            skipWhitespace()
            guard index < bytes.count else { throw Malformed() }
            switch bytes[index] {
            case UInt8(ascii: "n"):
                try expect("null")
                return .null
            case UInt8(ascii: "t"):
                try expect("true")
                return .bool(true)
            case UInt8(ascii: "f"):
                try expect("false")
                return .bool(false)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "["):
                guard depth < JSONText.maxDepth else { throw Malformed() }
                index += 1
                var items: [JSONValue] = []
                skipWhitespace()
                if take(UInt8(ascii: "]")) { return .array(items) }
                repeat {
                    items.append(try value(depth: depth + 1))
                    skipWhitespace()
                } while take(UInt8(ascii: ","))
                guard take(UInt8(ascii: "]")) else { throw Malformed() }
                return .array(items)
            case UInt8(ascii: "{"):
                guard depth < JSONText.maxDepth else { throw Malformed() }
                index += 1
                var members: [String: JSONValue] = [:]
                skipWhitespace()
                if take(UInt8(ascii: "}")) { return .object(members) }
                repeat {
                    skipWhitespace()
                    guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw Malformed() }
                    let key = try string()
                    skipWhitespace()
                    guard take(UInt8(ascii: ":")) else { throw Malformed() }
                    let member = try value(depth: depth + 1)
                    // The first of repeated keys, as JSONDecoder took it.
                    if members[key] == nil { members[key] = member }
                    skipWhitespace()
                } while take(UInt8(ascii: ","))
                guard take(UInt8(ascii: "}")) else { throw Malformed() }
                return .object(members)
            default: return .number(try number())
            }
        }

        private func isDigit(_ at: Int) -> Bool { at < bytes.count && (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[at]) }

        mutating func number() throws(Malformed) -> Double {
            let start = index
            _ = take(UInt8(ascii: "-"))
            guard isDigit(index) else { throw Malformed() }
            if !take(UInt8(ascii: "0")) {
                while isDigit(index) { index += 1 }
            }
            if take(UInt8(ascii: ".")) {
                guard isDigit(index) else { throw Malformed() }
                while isDigit(index) { index += 1 }
            }
            if take(UInt8(ascii: "e")) || take(UInt8(ascii: "E")) {
                if !take(UInt8(ascii: "+")) { _ = take(UInt8(ascii: "-")) }
                guard isDigit(index) else { throw Malformed() }
                while isDigit(index) { index += 1 }
            }
            guard let number = Double(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)), number.isFinite
            else { throw Malformed() }
            return number
        }

        mutating func hexDigit() throws(Malformed) -> UInt32 {
            guard index < bytes.count else { throw Malformed() }
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw Malformed()
            }
        }

        mutating func codeUnit() throws(Malformed) -> UInt32 {
            var unit: UInt32 = 0
            for _ in 0..<4 { unit = unit << 4 | (try hexDigit()) }
            return unit
        }

        /// A string from its opening quote to its closing one.
        mutating func string() throws(Malformed) -> String {
            index += 1
            let start = index
            // Most strings have no escapes: their bytes are taken as they are.
            while index < bytes.count, bytes[index] != UInt8(ascii: "\""), bytes[index] != UInt8(ascii: "\\") {
                guard bytes[index] >= 0x20 else { throw Malformed() }
                index += 1
            }
            var out = Array(bytes[start..<index])
            while true {
                guard index < bytes.count else { throw Malformed() }
                let byte = bytes[index]
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    return String(decoding: out, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    guard index < bytes.count else { throw Malformed() }
                    let escape = bytes[index]
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "u"):
                        var scalar = try codeUnit()
                        if (0xD800...0xDBFF).contains(scalar) {
                            // A high surrogate must be followed by an escaped low one.
                            guard take(UInt8(ascii: "\\")), take(UInt8(ascii: "u")) else { throw Malformed() }
                            let low = try codeUnit()
                            guard (0xDC00...0xDFFF).contains(low) else { throw Malformed() }
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        }
                        guard let character = Unicode.Scalar(scalar) else { throw Malformed() }
                        UTF8.encode(character) { out.append($0) }
                    default: throw Malformed()
                    }
                default:
                    guard byte >= 0x20 else { throw Malformed() }
                    out.append(byte)
                }
            }
        }
    }
}
