import Foundation
import LiveRoomProtocol

/// The readers of TRTC's task parameters: colours, enumerations by number or name, rects.
extension JSONFields {
    /// Task parameters at `path`: a missing field is ``ErrorCode/missingParameter``, one of the
    /// wrong type `code` (or the code a read names).
    init(taskParameters value: JSONValue, path: String = "", code: Int) throws(LiveRoomError) {
        try self.init(value, path: path, missingCode: ErrorCode.missingParameter, code: code)
    }

    /// A 0xRRGGBB colour: a number, or text `0x61B9F1`, `#61B9F1` or `61B9F1`.
    func color(_ key: String, code: Int) throws(LiveRoomError) -> UInt32? {
        guard let value = value(key) else { return nil }
        if let int = value.intValue {
            guard (0...0xFF_FFFF).contains(int) else {
                throw invalid(key, "\(int) is not a 0xRRGGBB colour", code: code)
            }
            return UInt32(int)
        }
        if let text = value.stringValue {
            var hex = Substring(text.trimmingCharacters(in: .whitespaces))
            if hex.lowercased().hasPrefix("0x") { hex = hex.dropFirst(2) } else if hex.hasPrefix("#") { hex = hex.dropFirst() }
            if hex.isEmpty { return 0 }
            guard hex.count <= 6, let rgb = UInt32(hex, radix: 16) else {
                throw invalid(key, "\(text.quoted) is not a colour like \"0x61B9F1\"", code: code)
            }
            return rgb
        }
        throw invalid(key, "must be a colour like \"0x61B9F1\", not \(value.typeName)", code: code)
    }

    /// An enumeration given as TRTC's number or as its name (`"mixStreamToCdn"`,
    /// `"TRTCPublishMixStreamToCdn"`, `"TRTCVideoFillMode_Fit"`), case-insensitively.
    func enumeration<T>(
        _ key: String, code: Int, numbers: [Int: T], names: [String: T], prefixes: [String]
    ) throws(LiveRoomError) -> T? {
        guard let value = value(key) else { return nil }
        if let int = value.intValue {
            guard let result = numbers[int] else {
                throw invalid(key, "\(int) is not one of \(numbers.keys.sorted().map(String.init).joined(separator: ", "))", code: code)
            }
            return result
        }
        if let text = value.stringValue {
            var normalized = text.lowercased().replacingOccurrences(of: "_", with: "")
            for prefix in prefixes where normalized.hasPrefix(prefix) {
                normalized.removeFirst(prefix.count)
            }
            guard let result = names[normalized] else {
                throw invalid(key, "\(text.quoted) is not one of \(names.keys.sorted().joined(separator: ", "))", code: code)
            }
            return result
        }
        throw invalid(key, "must be a number or a name, not \(value.typeName)", code: code)
    }

    /// A rect given as `{left, top, right, bottom}` or `{x, y, width, height}`.
    func rect(_ key: String, code: Int) throws(LiveRoomError) -> MixRect? {
        guard let fields = try fields(key, code: code) else { return nil }
        return try fields.asRect(code: code)
    }

    func asRect(code: Int) throws(LiveRoomError) -> MixRect {
        if has("right") || has("bottom") {
            return MixRect(
                left: try int("left", code: code) ?? 0, top: try int("top", code: code) ?? 0,
                right: try requiredInt("right", code: code), bottom: try requiredInt("bottom", code: code))
        }
        if has("width") || has("height") {
            let x = has("x") ? try int("x", code: code) : try int("left", code: code)
            let y = has("y") ? try int("y", code: code) : try int("top", code: code)
            return MixRect(x: x ?? 0, y: y ?? 0, width: try requiredInt("width", code: code), height: try requiredInt("height", code: code))
        }
        throw LiveRoomError(code, "\(path) must have left, top, right, bottom (or x, y, width, height)", field: path)
    }
}
