/// `liveroom-server --help` and `--print-config`, both made from ``ServerSettings/all``.
enum ServerSettingsText {
    static let width = 80

    static var help: String {
        var lines = [
            "USAGE: liveroom-server [--config FILE] [--print-config] [OPTIONS]",
            "",
        ]
        lines += wrap(
            """
            The LiveRoom room server: rooms, roles, mic-connection, room messages, media, publish \
            tasks, the shop, PK and the admin API. With no options it listens on 127.0.0.1:7880 \
            with a development SDKAppID and secret key kept in ./liveroom-data, and prints them. \
            Audiences watch at http://HOST:PORT/watch/ROOM. With --cluster-db several servers \
            share one PostgreSQL database as a cluster (docs/cluster.md).
            """, indent: "")
        lines.append("")
        lines += wrap(
            """
            Each option can also be set by its environment variable or by its key in a YAML or \
            JSON file given with --config; the command line wins over the environment, which wins \
            over the file (docs/configuration.md).
            """, indent: "")
        lines += ["", "  --config FILE", "        A YAML file (or JSON, named *.json) of settings, at most 1 MiB.",
                  "  --print-config", "        Print the settings in effect as a --config file, without secrets.",
                  "  -h, --help", "        Show this help.", ""]
        for setting in ServerSettings.all {
            lines.append("  " + setting.flag + (setting.kind == .flag ? "" : " <\(setting.placeholder)>"))
            lines += wrap(setting.help, indent: "        ")
            lines += wrap("\(setting.environmentVariable); key \(setting.key); \(facts(setting))", indent: "        ")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The default and the range of a setting, for `--help`.
    static func facts(_ setting: ServerSetting) -> String {
        var facts: [String] = []
        switch setting.read(ServerConfiguration()) {
        case .integer(let number)?: facts.append("default \(number)")
        case .text(let text)?: facts.append("default \(text)")
        case .flag(let on)?: facts.append(on ? "on by default" : "off by default")
        case .list, nil: break
        }
        if case .integer(let range) = setting.kind { facts.append("\(range.lowerBound) to \(range.upperBound)") }
        if setting.kind == .list { facts.append("repeatable; comma-separated in the environment") }
        return facts.joined(separator: ", ")
    }

    /// The settings in effect as a YAML file `--config` reads back, each with where it came from.
    /// Secrets, and settings not set, are comments.
    static func effective(_ configuration: ServerConfiguration, origins: [String: ServerSettingsReader.Source]) -> String {
        var lines = ["# liveroom-server settings in effect (liveroom-server --print-config); secrets are left out."]
        for setting in ServerSettings.all {
            let origin = origins[setting.key]?.name ?? "default"
            guard let value = setting.read(configuration) else {
                lines.append("# \(setting.key): not set")
                continue
            }
            if setting.isSecret {
                lines.append("# \(setting.key): set, from \(origin) (secret)")
                continue
            }
            let text: String
            switch value {
            case .integer(let number): text = String(number)
            case .text(let string): text = quoted(string)
            case .flag(let on): text = on ? "true" : "false"
            case .list(let items): text = "[" + items.map(quoted).joined(separator: ", ") + "]"
            }
            lines.append("\(setting.key): \(text)  # \(origin)")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// A YAML double-quoted scalar.
    static func quoted(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F: result += (scalar.value < 0x10 ? "\\x0" : "\\x") + String(scalar.value, radix: 16, uppercase: true)
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }

    /// `text` broken into lines of at most ``width`` columns after `indent`.
    static func wrap(_ text: String, indent: String) -> [String] {
        var lines: [String] = []
        var line = indent
        for word in text.split(separator: " ") {
            if line.count > indent.count, line.count + 1 + word.count > width {
                lines.append(line)
                line = indent
            }
            line += (line.count > indent.count ? " " : "") + word
        }
        lines.append(line)
        return lines
    }
}

extension ServerSetting {
    /// What `--help` shows after the flag: `<seconds>`, `<text>`.
    var placeholder: String {
        switch kind {
        case .integer: unit ?? "number"
        case .text, .list: Self.words(of: key).last ?? "text"
        case .choice: "level"
        case .flag: ""
        }
    }
}
