import Configuration
import Foundation
import SystemPackage
import Yams

/// Reads `liveroom-server`'s settings through swift-configuration's providers, first match
/// wins: the command line, then the environment (`LIVEROOM_…`), then a configuration file given
/// with `--config` (YAML, or JSON when its name ends in `.json`), then ``ServerConfiguration``'s
/// defaults. Every value is checked against its setting's kind and range, and the settings that
/// go together against each other; a problem names the setting and where the value came from.
public enum ServerSettingsReader {
    /// What the command line asks for.
    public enum Outcome: Sendable {
        /// Run the server with this configuration.
        case run(ServerConfiguration)
        /// Print this text (`--help`) and stop.
        case help(String)
        /// Print the effective settings (`--print-config`) and stop.
        case printConfig(String)
    }

    /// A setting that cannot be used, said in one line.
    public struct Problem: Error, CustomStringConvertible, Sendable {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    /// The largest configuration file read.
    public static let maxFileBytes = 1 << 20
    /// The longest text and the most items a list setting takes.
    static let maxTextBytes = 4_096
    static let maxListItems = 100

    /// Where a value came from.
    enum Source: Sendable, Equatable {
        case commandLine
        case environment
        case file(String)

        /// The value as it was written there: `--port 80`, `LIVEROOM_PORT=80`, `port: 80 in a.yaml`.
        func quoting(_ setting: ServerSetting, _ raw: String) -> String {
            switch self {
            case .commandLine: setting.flag + " " + raw
            case .environment: setting.environmentVariable + "=" + raw
            case .file(let path): "\(setting.key): \(raw) in \(path)"
            }
        }

        var name: String {
            switch self {
            case .commandLine: "the command line"
            case .environment: "the environment"
            case .file(let path): path
            }
        }
    }

    /// Reads the settings for `arguments` (without the program's name) and `environment`.
    public static func read(arguments: [String], environment: [String: String]) async throws(Problem) -> Outcome {
        let line = try CommandLineSettings(arguments)
        if line.wantsHelp { return .help(ServerSettingsText.help) }
        var sources: [(Source, any ConfigProvider)] = [
            (.commandLine, EnvironmentVariablesProvider(environmentVariables: line.asEnvironment).prefixKeys(with: ["liveroom"])),
            (.environment, EnvironmentVariablesProvider(environmentVariables: environment).prefixKeys(with: ["liveroom"])),
        ]
        if let path = line.configFile {
            sources.append((.file(path), try await fileProvider(path)))
        }
        var configuration = ServerConfiguration()
        var origins: [String: Source] = [:]
        for setting in ServerSettings.all {
            for (source, provider) in sources {
                guard let value = try value(of: setting, in: provider, from: source) else { continue }
                setting.write(&configuration, value)
                origins[setting.key] = source
                break
            }
        }
        try check(configuration)
        if line.printConfig {
            return .printConfig(ServerSettingsText.effective(configuration, origins: origins))
        }
        return .run(configuration)
    }

    /// The value `provider` holds for `setting`, checked, or nil when it holds none.
    static func value(of setting: ServerSetting, in provider: any ConfigProvider, from source: Source) throws(Problem) -> ServerSetting.Value? {
        let key = AbsoluteConfigKey([setting.key])
        func raw() -> String {
            guard case .string(let text)? = (try? provider.value(forKey: key, type: .string))?.value?.content else { return "(not text)" }
            return setting.isSecret ? "<redacted>" : String(text.prefix(80))
        }
        let content: ConfigContent?
        do {
            content = try provider.value(forKey: key, type: setting.configType).value?.content
        } catch {
            throw Problem("\(source.quoting(setting, raw())) is not \(setting.kind.expected)")
        }
        guard let content else { return nil }
        switch (setting.kind, content) {
        case (.integer(let range), .int(let number)):
            guard range.contains(number) else {
                throw Problem("\(setting.flag) (\(setting.environmentVariable)) must be \(range.lowerBound) to \(range.upperBound), not \(number) (from \(source.name))")
            }
            return .integer(number)
        case (.text, .string(let text)), (.choice, .string(let text)):
            guard !text.isEmpty else { return nil }
            guard text.utf8.count <= maxTextBytes, !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
                throw Problem("\(setting.flag) (\(setting.environmentVariable)) takes at most \(maxTextBytes) bytes of text without control characters (from \(source.name))")
            }
            if case .choice(let words) = setting.kind, !words.contains(text) {
                throw Problem("\(source.quoting(setting, raw())) is not one of \(words.joined(separator: ", "))")
            }
            return .text(text)
        case (.flag, .bool(let on)):
            return .flag(on)
        case (.list, .stringArray(let items)):
            let items = items.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            guard items.count <= maxListItems, items.allSatisfy({ $0.utf8.count <= 300 }) else {
                throw Problem("\(setting.flag) (\(setting.environmentVariable)) takes at most \(maxListItems) items of at most 300 bytes (from \(source.name))")
            }
            return .list(items)
        default:
            throw Problem("\(source.quoting(setting, raw())) is not \(setting.kind.expected)")
        }
    }

    /// A YAML or JSON file of settings, at most ``maxFileBytes``, whose keys are all settings.
    static func fileProvider(_ path: String) async throws(Problem) -> any ConfigProvider {
        let text: String
        do {
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            guard attributes[.type] as? FileAttributeType == .typeRegular else { throw Problem("--config \(path): not a regular file") }
            guard let size = attributes[.size] as? Int, size <= maxFileBytes else {
                throw Problem("--config \(path): larger than \(maxFileBytes) bytes")
            }
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch let problem as Problem {
            throw problem
        } catch {
            throw Problem("--config \(path): cannot be read (\(error.localizedDescription))")
        }
        let node: Node?
        do {
            node = try Yams.compose(yaml: text)
        } catch {
            let reason = String(describing: error).split(separator: "\n").first.map(String.init) ?? ""
            throw Problem("--config \(path): not YAML or JSON: \(reason.prefix(300))")
        }
        let pairs = node?.mapping.map { Array($0) } ?? []
        guard node == nil || node?.mapping != nil else { throw Problem("--config \(path): not a mapping of setting names to values") }
        for (key, value) in pairs {
            guard let name = key.string, let setting = ServerSettings.all.first(where: { $0.key == name }) else {
                throw Problem("--config \(path): no setting is called \"\(String((key.string ?? "?").prefix(80)))\" (liveroom-server --help lists them)")
            }
            if value.mapping != nil || (value.sequence != nil && setting.kind != .list) {
                throw Problem("--config \(path): \(name) takes \(setting.kind.expected)")
            }
        }
        do {
            if path.hasSuffix(".json") {
                return try await FileProvider<JSONSnapshot>(filePath: FilePath(path))
            }
            return try await FileProvider<YAMLSnapshot>(filePath: FilePath(path))
        } catch {
            throw Problem("--config \(path): \(String(describing: error).prefix(300))")
        }
    }

    /// The checks between settings that go together.
    static func check(_ configuration: ServerConfiguration) throws(Problem) {
        if configuration.sdkAppId != nil, configuration.secretKey == nil {
            throw Problem("--sdk-app-id needs --secret-key (LIVEROOM_SECRET_KEY)")
        }
        guard (configuration.tlsCertificate == nil) == (configuration.tlsKey == nil) else {
            throw Problem("--tls-cert and --tls-key go together")
        }
        if let bad = configuration.announceAddresses.first(where: { !ServerConfiguration.isIPAddress($0) }) {
            throw Problem("--announce-ip (LIVEROOM_ANNOUNCE_IP) takes IP addresses, not \"\(bad.prefix(80))\"")
        }
        if let problem = ServerConfiguration.webhookProblem(url: configuration.webhookURL, key: configuration.webhookKey) {
            throw Problem(problem)
        }
        if let problem = ServerConfiguration.clusterProblem(
            database: configuration.clusterDatabase, nodeId: configuration.nodeId, nodeURL: configuration.nodeURL)
        {
            throw Problem(problem)
        }
    }
}

extension ServerSetting {
    /// The type its value is looked up as.
    var configType: ConfigType {
        switch kind {
        case .integer: .int
        case .text, .choice: .string
        case .flag: .bool
        case .list: .stringArray
        }
    }
}

extension ServerSetting.Kind {
    /// What a value must be, for messages: "a whole number from 0 to 65535".
    var expected: String {
        switch self {
        case .integer(let range): "a whole number from \(range.lowerBound) to \(range.upperBound)"
        case .text: "text"
        case .choice(let words): "one of \(words.joined(separator: ", "))"
        case .flag: "true or false"
        case .list: "a list"
        }
    }
}

/// The command line: settings as flags (`--port 80`, `--port=80`, a flag alone for on), and
/// `--config FILE`, `--print-config`, `--help`. Anything else is refused.
struct CommandLineSettings {
    /// The values given, by the environment variable each flag stands for.
    var values: [String: [String]] = [:]
    var configFile: String?
    var printConfig = false
    var wantsHelp = false

    init(_ arguments: [String]) throws(ServerSettingsReader.Problem) {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            let (name, inline) = Self.split(argument)
            func next() throws(ServerSettingsReader.Problem) -> String {
                if let inline { return inline }
                guard index < arguments.count else { throw ServerSettingsReader.Problem("\(name) needs a value") }
                index += 1
                return arguments[index - 1]
            }
            switch name {
            case "--help", "-h": wantsHelp = true
            case "--print-config": printConfig = true
            case "--config": configFile = try next()
            default:
                guard name.hasPrefix("--"), let setting = ServerSettings.all.first(where: { $0.flag == name }) else {
                    throw ServerSettingsReader.Problem("unknown option \"\(argument.prefix(80))\" (liveroom-server --help lists the options)")
                }
                if setting.kind == .flag {
                    guard inline == nil else { throw ServerSettingsReader.Problem("\(name) takes no value") }
                    values[setting.environmentVariable] = ["true"]
                } else if setting.kind == .list {
                    values[setting.environmentVariable, default: []].append(try next())
                } else {
                    values[setting.environmentVariable] = [try next()]  // the last one given wins
                }
            }
        }
    }

    /// `--port=80` → ("--port", "80"); `--port` → ("--port", nil).
    static func split(_ argument: String) -> (String, String?) {
        guard argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") else { return (argument, nil) }
        return (String(argument[..<equals]), String(argument[argument.index(after: equals)...]))
    }

    /// The flags as the environment variables they stand for, so that one provider reads both
    /// alike (a repeated flag becomes a comma-separated list).
    var asEnvironment: [String: String] {
        values.mapValues { $0.joined(separator: ",") }
    }
}
