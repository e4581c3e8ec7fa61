import Foundation
import LiveRoomCore

/// Reads the fields of one JSON object, throwing errors that name the field by its full path
/// (`mixingConfig.videoLayoutList[2].rect.right`).
struct JSONFields {
    let object: [String: JSONValue]
    let path: String

    /// `value` must be an object; `code` is the error code when it is not.
    init(_ value: JSONValue, path: String, code: Int) throws(LiveRoomError) {
        guard let object = value.objectValue else {
            throw LiveRoomError(code, "\(path) must be a JSON object, not \(value.typeName)")
        }
        self.object = object
        self.path = path
    }

    func name(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    /// The value of `key`, or `nil` when absent or null.
    func value(_ key: String) -> JSONValue? {
        guard let value = object[key], value != .null else { return nil }
        return value
    }

    func has(_ key: String) -> Bool { value(key) != nil }

    func missing(_ key: String) -> LiveRoomError {
        LiveRoomError(MixerErrorCode.missingParameter, "missing field \(name(key))")
    }

    func int(_ key: String, code: Int) throws(LiveRoomError) -> Int? {
        guard let value = value(key) else { return nil }
        guard let int = value.intValue else {
            throw LiveRoomError(code, "\(name(key)) must be an integer, not \(value.typeName == "number" ? "a fraction" : value.typeName)")
        }
        return int
    }

    func requiredInt(_ key: String, code: Int) throws(LiveRoomError) -> Int {
        guard let int = try int(key, code: code) else { throw missing(key) }
        return int
    }

    func string(_ key: String, code: Int) throws(LiveRoomError) -> String? {
        guard let value = value(key) else { return nil }
        guard let string = value.stringValue else {
            throw LiveRoomError(code, "\(name(key)) must be a string, not \(value.typeName)")
        }
        return string
    }

    func requiredString(_ key: String, code: Int) throws(LiveRoomError) -> String {
        guard let string = try string(key, code: code) else { throw missing(key) }
        return string
    }

    /// A boolean, also accepting 0 and 1.
    func bool(_ key: String, code: Int) throws(LiveRoomError) -> Bool? {
        guard let value = value(key) else { return nil }
        if let bool = value.boolValue { return bool }
        if let int = value.intValue, int == 0 || int == 1 { return int == 1 }
        throw LiveRoomError(code, "\(name(key)) must be a boolean, not \(value.typeName)")
    }

    func fields(_ key: String, code: Int) throws(LiveRoomError) -> JSONFields? {
        guard let value = value(key) else { return nil }
        return try JSONFields(value, path: name(key), code: code)
    }

    func requiredFields(_ key: String, code: Int) throws(LiveRoomError) -> JSONFields {
        guard let fields = try fields(key, code: code) else { throw missing(key) }
        return fields
    }

    /// The elements of an array of objects, each with its indexed path.
    func objectArray(_ key: String, code: Int) throws(LiveRoomError) -> [JSONFields]? {
        guard let value = value(key) else { return nil }
        guard let array = value.arrayValue else {
            throw LiveRoomError(code, "\(name(key)) must be an array, not \(value.typeName)")
        }
        var result: [JSONFields] = []
        for (index, element) in array.enumerated() {
            result.append(try JSONFields(element, path: "\(name(key))[\(index)]", code: code))
        }
        return result
    }

    /// A 0xRRGGBB colour: a number, or text `0x61B9F1`, `#61B9F1` or `61B9F1`.
    func color(_ key: String, code: Int) throws(LiveRoomError) -> UInt32? {
        guard let value = value(key) else { return nil }
        if let int = value.intValue {
            guard (0...0xFF_FFFF).contains(int) else {
                throw LiveRoomError(code, "\(name(key)) \(int) is not a 0xRRGGBB colour")
            }
            return UInt32(int)
        }
        if let text = value.stringValue {
            var hex = Substring(text.trimmingCharacters(in: .whitespaces))
            if hex.lowercased().hasPrefix("0x") { hex = hex.dropFirst(2) } else if hex.hasPrefix("#") { hex = hex.dropFirst() }
            if hex.isEmpty { return 0 }
            guard hex.count <= 6, let rgb = UInt32(hex, radix: 16) else {
                throw LiveRoomError(code, "\(name(key)) \"\(text)\" is not a colour like \"0x61B9F1\"")
            }
            return rgb
        }
        throw LiveRoomError(code, "\(name(key)) must be a colour like \"0x61B9F1\", not \(value.typeName)")
    }

    /// An enumeration given as TRTC's number or as its name (`"mixStreamToCdn"`,
    /// `"TRTCPublishMixStreamToCdn"`, `"TRTCVideoFillMode_Fit"`), case-insensitively.
    func enumeration<T>(
        _ key: String, code: Int, numbers: [Int: T], names: [String: T], prefixes: [String]
    ) throws(LiveRoomError) -> T? {
        guard let value = value(key) else { return nil }
        if let int = value.intValue {
            guard let result = numbers[int] else {
                throw LiveRoomError(code, "\(name(key)) \(int) is not one of \(numbers.keys.sorted().map(String.init).joined(separator: ", "))")
            }
            return result
        }
        if let text = value.stringValue {
            var normalized = text.lowercased().replacingOccurrences(of: "_", with: "")
            for prefix in prefixes where normalized.hasPrefix(prefix) {
                normalized.removeFirst(prefix.count)
            }
            guard let result = names[normalized] else {
                throw LiveRoomError(code, "\(name(key)) \"\(text)\" is not one of \(names.keys.sorted().joined(separator: ", "))")
            }
            return result
        }
        throw LiveRoomError(code, "\(name(key)) must be a number or a name, not \(value.typeName)")
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
        throw LiveRoomError(code, "\(path) must have left, top, right, bottom (or x, y, width, height)")
    }
}
