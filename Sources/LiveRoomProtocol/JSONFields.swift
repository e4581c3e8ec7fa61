/// Reads the fields of one JSON object, throwing errors that name each field by its full path
/// (`mixingConfig.videoLayoutList[2].rect.right`) and, for ranged numbers, the range allowed.
///
/// Signaling requests, server events, the admin API and publish task configurations all read
/// through it. Every error is a ``LiveRoomError`` whose ``LiveRoomError/field`` is the path:
/// ``missingCode`` for a required field that is absent (or null), otherwise the `code` the read
/// names, or the reader's ``code``.
public struct JSONFields: Sendable {
    /// The object's fields as given.
    public let object: [String: JSONValue]
    /// The object's own path; empty for a top-level object.
    public let path: String
    /// The code of a required field that is absent or null.
    public let missingCode: Int
    /// The code of a field of the wrong type or value, where a read names none.
    public let code: Int
    /// Whether integers may also be given as decimal text (`"1400000000"`), as the admin API allows.
    public let integersMayBeText: Bool

    /// Reads `value`, which must be an object (otherwise an error with `code`).
    public init(
        _ value: JSONValue, path: String = "", missingCode: Int = ErrorCode.missingField, code: Int = ErrorCode.invalidField,
        integersMayBeText: Bool = false
    ) throws(LiveRoomError) {
        guard let object = value.objectValue else {
            let name = path.isEmpty ? "the message" : path
            throw LiveRoomError(code, "\(name) must be a JSON object, not \(value.typeName)", field: path.isEmpty ? nil : path)
        }
        self.object = object
        self.path = path
        self.missingCode = missingCode
        self.code = code
        self.integersMayBeText = integersMayBeText
    }

    /// The full path of `key`.
    public func name(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    /// The value of `key`, or `nil` when absent or null.
    public func value(_ key: String) -> JSONValue? {
        guard let value = object[key], value != .null else { return nil }
        return value
    }

    /// Whether `key` is present and not null.
    public func has(_ key: String) -> Bool { value(key) != nil }

    /// The error for a required field that is absent.
    public func missing(_ key: String) -> LiveRoomError {
        LiveRoomError(missingCode, "missing field \(name(key))", field: name(key))
    }

    /// An error about `key` with `message` after its path: `"\(path.key) \(message)"`.
    public func invalid(_ key: String, _ message: String, code: Int? = nil) -> LiveRoomError {
        LiveRoomError(code ?? self.code, "\(name(key)) \(message)", field: name(key))
    }

    // MARK: Scalars

    /// An integer (a whole number; with ``integersMayBeText`` also decimal text); nil when absent or null.
    public func int(_ key: String, code: Int? = nil) throws(LiveRoomError) -> Int? {
        guard let value = value(key) else { return nil }
        if let int = value.intValue { return int }
        if integersMayBeText, let text = value.stringValue, let int = Int(text) { return int }
        throw invalid(key, "must be an integer, not \(value.typeName == "number" ? "a fraction" : value.typeName)", code: code)
    }

    /// An integer that must be present.
    public func requiredInt(_ key: String, code: Int? = nil) throws(LiveRoomError) -> Int {
        try required(key, int(key, code: code))
    }

    /// An integer that must lie in `range` (`1...100`, `0...`): `"PageSize must be 1–100, not 0"`.
    public func int(_ key: String, in range: some RangeExpression<Int>, code: Int? = nil) throws(LiveRoomError) -> Int? {
        guard let int = try int(key, code: code) else { return nil }
        guard range.contains(int) else { throw invalid(key, "must be \(Self.describe(range)), not \(int)", code: code) }
        return int
    }

    /// A string; nil when absent or null.
    public func string(_ key: String, code: Int? = nil) throws(LiveRoomError) -> String? {
        try read(key, "a string", code: code) { $0.stringValue }
    }

    /// A string that must be present.
    public func requiredString(_ key: String, code: Int? = nil) throws(LiveRoomError) -> String {
        try required(key, string(key, code: code))
    }

    /// A JSON boolean; nil when absent or null.
    public func bool(_ key: String, code: Int? = nil) throws(LiveRoomError) -> Bool? {
        try read(key, "a boolean", code: code) { $0.boolValue }
    }

    /// A JSON boolean that must be present.
    public func requiredBool(_ key: String, code: Int? = nil) throws(LiveRoomError) -> Bool {
        try required(key, bool(key, code: code))
    }

    /// A boolean also given as 0 or 1, as TRTC's admin API and C-style clients send them.
    public func bit(_ key: String, code: Int? = nil) throws(LiveRoomError) -> Bool? {
        if let int = value(key)?.intValue, int == 0 || int == 1 { return int == 1 }
        return try bool(key, code: code)
    }

    /// An identifier given as a string or an integer (TRTC room ids are either): the text, or the integer's digits.
    public func identifier(_ key: String, code: Int? = nil) throws(LiveRoomError) -> String? {
        try read(key, "a string or an integer", code: code) { $0.stringValue ?? $0.intValue.map(String.init) }
    }

    /// An array of strings.
    public func stringArray(_ key: String, code: Int? = nil) throws(LiveRoomError) -> [String]? {
        try read(key, "an array of strings", code: code) { value in
            guard let array = value.arrayValue, array.allSatisfy({ $0.stringValue != nil }) else { return nil }
            return array.compactMap(\.stringValue)
        }
    }

    // MARK: Objects and arrays

    /// A nested object as it is, unread (to be read later by its owner).
    public func object(_ key: String, code: Int? = nil) throws(LiveRoomError) -> JSONValue? {
        try read(key, "an object", code: code) { $0.objectValue != nil ? $0 : nil }
    }

    /// A nested object that must be present, as it is.
    public func requiredObject(_ key: String, code: Int? = nil) throws(LiveRoomError) -> JSONValue {
        try required(key, object(key, code: code))
    }

    /// A nested object's fields; its reads default to `code`.
    public func fields(_ key: String, code: Int? = nil) throws(LiveRoomError) -> JSONFields? {
        guard let value = value(key) else { return nil }
        return try child(value, path: name(key), code: code)
    }

    /// A nested object's fields; the object must be present.
    public func requiredFields(_ key: String, code: Int? = nil) throws(LiveRoomError) -> JSONFields {
        try required(key, fields(key, code: code))
    }

    /// The elements of an array of objects, each with its indexed path (`videoLayoutList[2]`).
    public func objectArray(_ key: String, code: Int? = nil) throws(LiveRoomError) -> [JSONFields]? {
        guard let array = try read(key, "an array", code: code, \.arrayValue) else { return nil }
        var result: [JSONFields] = []
        for (index, element) in array.enumerated() {
            result.append(try child(element, path: "\(name(key))[\(index)]", code: code))
        }
        return result
    }

    private func child(_ value: JSONValue, path: String, code: Int?) throws(LiveRoomError) -> JSONFields {
        try JSONFields(value, path: path, missingCode: missingCode, code: code ?? self.code, integersMayBeText: integersMayBeText)
    }

    /// The value of `key` converted by `convert`; nil when absent; an error naming `kind` when `convert` gives nil.
    private func read<T>(_ key: String, _ kind: String, code: Int?, _ convert: (JSONValue) -> T?) throws(LiveRoomError) -> T? {
        guard let value = value(key) else { return nil }
        guard let result = convert(value) else { throw invalid(key, "must be \(kind), not \(value.typeName)", code: code) }
        return result
    }

    private func required<T>(_ key: String, _ value: T?) throws(LiveRoomError) -> T {
        guard let value else { throw missing(key) }
        return value
    }

    private static func describe(_ range: some RangeExpression<Int>) -> String {
        switch range {
        case let range as ClosedRange<Int>: "\(range.lowerBound)–\(range.upperBound)"
        case let range as PartialRangeFrom<Int>: "at least \(range.lowerBound)"
        case let range as PartialRangeThrough<Int>: "at most \(range.upperBound)"
        default: "in \(range)"
        }
    }
}
