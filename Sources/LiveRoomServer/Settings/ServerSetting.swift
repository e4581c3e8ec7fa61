/// One setting of `liveroom-server`: its name in a configuration file, from which its flag
/// (`--ping-interval`) and environment variable (`LIVEROOM_PING_INTERVAL`) follow, what values
/// it takes, and where in ``ServerConfiguration`` it goes. ``ServerSettings/all`` lists them;
/// ``ServerSettingsReader`` reads them from the command line, the environment and a file.
public struct ServerSetting: Sendable {
    /// What a setting takes.
    public enum Kind: Sendable, Equatable {
        /// A whole number in a range.
        case integer(ClosedRange<Int>)
        /// Text; empty text counts as not set.
        case text
        /// One of a few words.
        case choice([String])
        /// On or off; a flag on the command line takes no value.
        case flag
        /// Several texts: a repeated flag, a comma-separated variable, a list in the file.
        case list
    }

    /// A value read for a setting.
    public enum Value: Sendable, Equatable {
        case integer(Int)
        case text(String)
        case flag(Bool)
        case list([String])
    }

    /// The key in a configuration file, in lower camel case (`pingInterval`).
    public let key: String
    public let kind: Kind
    /// What the setting does, one or two sentences without its default or range.
    public let help: String
    /// A value that must not be printed (keys, database passwords).
    public let isSecret: Bool
    /// The setting's value in a configuration, nil where it is not set.
    let read: @Sendable (ServerConfiguration) -> Value?
    /// Puts a value read from a source into a configuration.
    let write: @Sendable (inout ServerConfiguration, Value) -> Void
    /// What a whole number counts, for `--help` (`seconds`); nil for a plain number.
    var unit: String? = nil

    /// `--ping-interval` for `pingInterval`.
    public var flag: String { "--" + Self.words(of: key).joined(separator: "-") }
    /// `LIVEROOM_PING_INTERVAL` for `pingInterval`.
    public var environmentVariable: String { "LIVEROOM_" + Self.words(of: key).joined(separator: "_").uppercased() }

    /// The words of a lower-camel-case key: `iceTcpPort` → ice, tcp, port.
    static func words(of key: String) -> [String] {
        var words: [String] = []
        var word = ""
        for character in key {
            if character.isUppercase, !word.isEmpty {
                words.append(word)
                word = ""
            }
            word.append(character.lowercased())
        }
        words.append(word)
        return words
    }
}

extension ServerSetting {
    /// A whole number kept as an `Int`.
    static func integer(
        _ key: String, _ path: WritableKeyPath<ServerConfiguration, Int> & Sendable, _ range: ClosedRange<Int>, _ help: String
    ) -> ServerSetting {
        ServerSetting(
            key: key, kind: .integer(range), help: help, isSecret: false,
            read: { .integer($0[keyPath: path]) },
            write: { configuration, value in if case .integer(let number) = value { configuration[keyPath: path] = number } })
    }

    /// A time in whole seconds (or `unit`) kept as a `Duration`.
    static func duration(
        _ key: String, _ path: WritableKeyPath<ServerConfiguration, Duration> & Sendable, _ range: ClosedRange<Int>,
        unit: Duration = .seconds(1), _ help: String
    ) -> ServerSetting {
        ServerSetting(
            key: key, kind: .integer(range), help: help, isSecret: false,
            read: { .integer(Int($0[keyPath: path] / unit)) },
            write: { configuration, value in if case .integer(let number) = value { configuration[keyPath: path] = unit * number } },
            unit: unit == .seconds(1) ? "seconds" : "milliseconds")
    }

    /// Text that may be left out.
    static func text(
        _ key: String, _ path: WritableKeyPath<ServerConfiguration, String?> & Sendable, secret: Bool = false, _ help: String
    ) -> ServerSetting {
        ServerSetting(
            key: key, kind: .text, help: help, isSecret: secret,
            read: { $0[keyPath: path].map { .text($0) } },
            write: { configuration, value in if case .text(let text) = value { configuration[keyPath: path] = text } })
    }

    /// Text that always has a value.
    static func text(_ key: String, _ path: WritableKeyPath<ServerConfiguration, String> & Sendable, _ help: String) -> ServerSetting {
        ServerSetting(
            key: key, kind: .text, help: help, isSecret: false,
            read: { .text($0[keyPath: path]) },
            write: { configuration, value in if case .text(let text) = value { configuration[keyPath: path] = text } })
    }

    /// On or off.
    static func flag(_ key: String, _ path: WritableKeyPath<ServerConfiguration, Bool> & Sendable, _ help: String) -> ServerSetting {
        ServerSetting(
            key: key, kind: .flag, help: help, isSecret: false,
            read: { .flag($0[keyPath: path]) },
            write: { configuration, value in if case .flag(let on) = value { configuration[keyPath: path] = on } })
    }

    /// A list of texts.
    static func list(_ key: String, _ path: WritableKeyPath<ServerConfiguration, [String]> & Sendable, _ help: String) -> ServerSetting {
        ServerSetting(
            key: key, kind: .list, help: help, isSecret: false,
            read: { .list($0[keyPath: path]) },
            write: { configuration, value in if case .list(let items) = value { configuration[keyPath: path] = items } })
    }
}
