import Foundation
import Testing
import TestTools

@testable import LiveRoomServer

/// The settings table and its reader: where values come from, which wins, what is refused and
/// how it is said, and that `--help`, `--print-config` and docs/configuration.md agree with it.
@Suite struct ServerSettingsReaderTests {
    typealias Reader = ServerSettingsReader

    /// A temporary file with `text`, removed by the caller.
    static func file(_ text: String, named name: String = "liveroom.yaml") throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("settings-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let url = folder.appendingPathComponent(name)
        try Data(text.utf8).write(to: url)
        return url
    }

    static func configuration(_ arguments: [String], _ environment: [String: String] = [:]) async throws -> ServerConfiguration {
        guard case .run(let configuration) = try await Reader.read(arguments: arguments, environment: environment) else {
            Issue.record("\(arguments) did not ask to run")
            return ServerConfiguration()
        }
        return configuration
    }

    /// The problem the reader says for these inputs, or "" when it has none.
    static func problem(_ arguments: [String], _ environment: [String: String] = [:]) async -> String {
        do {
            _ = try await Reader.read(arguments: arguments, environment: environment)
            return ""
        } catch {
            return error.description
        }
    }

    @Test func namesFollowFromTheKeyAndAreUnique() throws {
        let ice = try #require(ServerSettings.named("iceTcpPort"))
        #expect(ice.flag == "--ice-tcp-port" && ice.environmentVariable == "LIVEROOM_ICE_TCP_PORT")
        #expect(ServerSettings.named("LIVEROOM_TASK_RETRY_INTERVAL_MS")?.key == "taskRetryIntervalMs")
        #expect(ServerSettings.named("--max-pk-anchors")?.environmentVariable == "LIVEROOM_MAX_PK_ANCHORS")
        for name in [\ServerSetting.key, \.flag, \.environmentVariable] {
            let names = ServerSettings.all.map { $0[keyPath: name] }
            #expect(Set(names).count == names.count, "\(names)")
        }
    }

    @Test func nothingGivenIsTheDefaultConfiguration() async throws {
        let read = try await Self.configuration([])
        for setting in ServerSettings.all {
            #expect(setting.read(read) == setting.read(ServerConfiguration()), "\(setting.key)")
        }
    }

    @Test func theCommandLineWinsOverTheEnvironmentWhichWinsOverTheFile() async throws {
        let file = try Self.file("pingInterval: 30\nmaxRooms: 7\nmaxAnchors: 3\negressAllow: [10.0.0.1, rtmp.internal]\n")
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let environment = ["LIVEROOM_PING_INTERVAL": "40", "LIVEROOM_MAX_ROOMS": "8"]
        let read = try await Self.configuration(["--config", file.path, "--ping-interval", "50"], environment)
        #expect(read.pingInterval == .seconds(50))
        #expect(read.maxRooms == 8)
        #expect(read.maxAnchorsPerRoom == 3)
        #expect(read.egressAllow == ["10.0.0.1", "rtmp.internal"])
        #expect(read.port == ServerConfiguration().port)
    }

    @Test func eachKindReadsFromEachSource() async throws {
        let json = try Self.file(#"{"noIceTcp": true, "taskRetryIntervalMs": 250, "logLevel": "debug", "announceIp": ["192.0.2.1"]}"#, named: "a.json")
        defer { try? FileManager.default.removeItem(at: json.deletingLastPathComponent()) }
        let fromFile = try await Self.configuration(["--config", json.path])
        #expect(fromFile.iceTCPPort == nil && fromFile.taskRetryInterval == .milliseconds(250) && fromFile.logLevel == "debug")
        #expect(fromFile.announceAddresses == ["192.0.2.1"])

        let fromEnvironment = try await Self.configuration(
            [], ["LIVEROOM_NO_ICE_TCP": "1", "LIVEROOM_ANNOUNCE_IP": "192.0.2.1, 192.0.2.2", "LIVEROOM_SIGNALING_NICE": "-5", "LIVEROOM_WEBHOOK_URL": ""])
        #expect(fromEnvironment.iceTCPPort == nil && fromEnvironment.signalingNice == -5 && fromEnvironment.webhookURL == nil)
        #expect(fromEnvironment.announceAddresses == ["192.0.2.1", "192.0.2.2"])

        let fromFlags = try await Self.configuration([
            "--egress-allow", "10.0.0.1", "--egress-allow=10.0.0.2", "--signaling-nice", "-20", "--require-private-map-key",
            "--sdk-app-id", "1400000001", "--secret-key", "s",
        ])
        #expect(fromFlags.egressAllow == ["10.0.0.1", "10.0.0.2"] && fromFlags.signalingNice == -20 && fromFlags.requirePrivateMapKey)
        #expect(fromFlags.sdkAppId == 1_400_000_001 && fromFlags.secretKey == "s")
    }

    @Test func aBadValueIsNamedWithItsSettingAndSource() async throws {
        #expect(await Self.problem(["--port", "99999"]) == "--port (LIVEROOM_PORT) must be 0 to 65535, not 99999 (from the command line)")
        #expect(await Self.problem(["--port", "abc"]) == "--port abc is not a whole number from 0 to 65535")
        #expect(await Self.problem([], ["LIVEROOM_SIGNALING_NICE": "high"]) == "LIVEROOM_SIGNALING_NICE=high is not a whole number from -20 to 0")
        #expect(await Self.problem([], ["LIVEROOM_NO_ICE_TCP": "maybe"]) == "LIVEROOM_NO_ICE_TCP=maybe is not true or false")
        #expect(await Self.problem(["--log-level", "loud"]).contains("is not one of trace, debug"))
        #expect(await Self.problem(["--prot", "80"]).hasPrefix("unknown option \"--prot\""))
        #expect(await Self.problem(["80"]).hasPrefix("unknown option \"80\""))
        #expect(await Self.problem(["--port"]) == "--port needs a value")
        #expect(await Self.problem(["--no-ice-tcp=1"]) == "--no-ice-tcp takes no value")
        #expect(await Self.problem(["--host", "a\u{0}b"]).contains("without control characters"))
        #expect(await Self.problem(["--host", String(repeating: "h", count: 5_000)]).contains("at most 4096 bytes"))
        #expect(await Self.problem(Array(repeating: ["--egress-allow", "10.0.0.1"], count: 101).flatMap { $0 }).contains("at most 100 items"))
        // A secret is never repeated in a message.
        let secret = await Self.problem([], ["LIVEROOM_CLUSTER_DB": "mysql://u:hunter2@db/x"])
        #expect(!secret.isEmpty && !secret.contains("hunter2"), "\(secret)")
    }

    @Test func settingsThatGoTogetherAreCheckedTogether() async {
        #expect(await Self.problem(["--sdk-app-id", "5"]).contains("--sdk-app-id needs --secret-key"))
        #expect(await Self.problem(["--tls-cert", "a.pem"]) == "--tls-cert and --tls-key go together")
        #expect(await Self.problem(["--webhook-url", "http://hooks.example/"]).contains("needs --webhook-key"))
        #expect(await Self.problem(["--announce-ip", "not-an-ip"]).contains("takes IP addresses"))
        #expect(await Self.problem(["--node-id", "a"]).contains("need --cluster-db"))
    }

    @Test func aFileIsCheckedBeforeAnyOfItIsUsed() async throws {
        func problem(_ text: String, named name: String = "liveroom.yaml") async throws -> String {
            let file = try Self.file(text, named: name)
            defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
            return await Self.problem(["--config", file.path]).replacingOccurrences(of: file.path, with: "FILE")
        }
        #expect(try await problem("pingIntervall: 30\n") == "--config FILE: no setting is called \"pingIntervall\" (liveroom-server --help lists them)")
        #expect(try await problem("port: abc\n") == "port: abc in FILE is not a whole number from 0 to 65535")
        #expect(try await problem("port: 70000\n") == "--port (LIVEROOM_PORT) must be 0 to 65535, not 70000 (from FILE)")
        #expect(try await problem("port: [1, 2]\n") == "--config FILE: port takes a whole number from 0 to 65535")
        #expect(try await problem("host: {a: b}\n") == "--config FILE: host takes text")
        #expect(try await problem("- port\n") == "--config FILE: not a mapping of setting names to values")
        #expect(try await problem("a: b: c:\n").hasPrefix("--config FILE: not YAML or JSON: "))
        #expect(try await problem("{\"port\": \"x\"", named: "b.json").hasPrefix("--config FILE: not YAML or JSON"))
        #expect(try await problem(String(repeating: "# padding\n", count: Reader.maxFileBytes / 10 + 1)) == "--config FILE: larger than 1048576 bytes")
        #expect(await Self.problem(["--config", "/dev/zero"]) == "--config /dev/zero: not a regular file")
        #expect(await Self.problem(["--config", "/nonexistent/liveroom.yaml"]).hasPrefix("--config /nonexistent/liveroom.yaml: cannot be read"))
    }

    @Test func printConfigIsAFileThatReadsBackTheSameWithoutSecrets() async throws {
        let arguments = ["--ping-interval", "30", "--egress-allow", "10.0.0.1", "--host", "a \"quoted\" host\\", "--no-ice-tcp", "--log-level", "debug"]
        guard case .printConfig(let printed) = try await Reader.read(
            arguments: arguments + ["--print-config"], environment: ["LIVEROOM_WEBHOOK_URL": "http://h.example/", "LIVEROOM_WEBHOOK_KEY": "topsecret1"])
        else {
            Issue.record("no --print-config")
            return
        }
        #expect(!printed.contains("topsecret1"))
        #expect(printed.contains("# webhookKey: set, from the environment (secret)"))
        #expect(printed.contains("pingInterval: 30  # the command line"))
        let file = try Self.file(printed.replacingOccurrences(of: "webhookUrl:", with: "# webhookUrl:"))
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let original = try await Self.configuration(arguments)
        let readBack = try await Self.configuration(["--config", file.path])
        for setting in ServerSettings.all {
            #expect(setting.read(readBack) == setting.read(original), "\(setting.key)")
        }
    }

    @Test func helpListsEverySettingWithinEightyColumns() async throws {
        guard case .help(let help) = try await Reader.read(arguments: ["--port", "1", "--help"], environment: [:]) else {
            Issue.record("no help")
            return
        }
        for line in help.split(separator: "\n") {
            #expect(line.count <= 80, "\(line)")
        }
        for setting in ServerSettings.all {
            #expect(help.contains("  \(setting.flag)") && help.contains("\(setting.environmentVariable); key \(setting.key)"), "\(setting.key)")
        }
    }

    @Test func docsConfigurationListsEverySettingAsTheTableDoes() throws {
        let root = try #require(RepositoryRoot.find(from: #filePath))
        let page = try String(contentsOf: root.appendingPathComponent("docs/configuration.md"), encoding: .utf8)
        let rows = page.split(separator: "\n").filter { $0.hasPrefix("| `--") }
        #expect(rows.count == ServerSettings.all.count, "docs/configuration.md has \(rows.count) rows for \(ServerSettings.all.count) settings")
        for setting in ServerSettings.all {
            let row = rows.first { $0.hasPrefix("| `\(setting.flag)` |") }
            var range = ""
            if case .integer(let bounds) = setting.kind { range = " \(bounds.lowerBound) to \(bounds.upperBound) |" }
            #expect(
                row?.contains("| `\(setting.environmentVariable)`") == true && row?.contains("| `\(setting.key)` |") == true
                    && (range.isEmpty || row?.contains(range) == true),
                "docs/configuration.md: \(setting.flag) should have \(setting.environmentVariable), \(setting.key) and\(range): \(row ?? "no row")")
        }
    }

    @Test func theExampleFileReads() async throws {
        let root = try #require(RepositoryRoot.find(from: #filePath))
        let read = try await Self.configuration(["--config", root.appendingPathComponent("docs/liveroom.example.yaml").path], ["LIVEROOM_SECRET_KEY": "k"])
        #expect(read.host == "0.0.0.0" && read.announceAddresses == ["203.0.113.7"] && read.egressAllow == ["10.0.0.5"])
    }
}
