import Foundation
import LiveRoomServer
import Logging

/// `liveroom-server`: reads its settings (``ServerSettingsReader``: flags, `LIVEROOM_…`
/// variables, a `--config` file), then runs until SIGTERM or SIGINT.
@main
enum LiveRoomServerCommand {
    static func main() async {
        let outcome: ServerSettingsReader.Outcome
        do {
            outcome = try await ServerSettingsReader.read(arguments: Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment)
        } catch {
            // 64 (EX_USAGE): the settings cannot be used.
            standardError("liveroom-server: error: \(error.description)\n")
            exit(64)
        }
        switch outcome {
        case .help(let text), .printConfig(let text):
            FileHandle.standardOutput.write(Data(text.utf8))
        case .run(let configuration):
            await run(configuration)
        }
    }

    static func run(_ configuration: ServerConfiguration) async {
        // Broken pipes and hang-ups cannot stop the server; a trap or fault leaves a line and its backtrace.
        ProcessSignals.install()
        let level = Logger.Level(rawValue: configuration.logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = EscapingLogHandler(StreamLogHandler.standardError(label: label))
            handler.logLevel = level
            return handler
        }
        // Each connection and peer is a file descriptor: allow as many as the hard limit does.
        var files = rlimit()
        if getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &files) == 0, files.rlim_cur < files.rlim_max {
            files.rlim_cur = files.rlim_max
            _ = setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &files)
        }
        let server = LiveRoomServer(configuration: configuration, logger: Logger(label: "liveroom-server"))
        do {
            try await server.run { credentials, address, ports in
                let scheme = configuration.tlsCertificate == nil ? "http" : "https"
                var lines = ["LiveRoom server listening on \(scheme)://\(configuration.host):\(address.port ?? configuration.port)"]
                lines.append("Media UDP port: \(ports.udp)")
                lines.append("ICE-TCP port: \(ports.tcp.map(String.init) ?? "off")")
                lines.append("SDKAppID: \(credentials.sdkAppId)")
                if credentials.isDevelopment {
                    lines.append("Secret key: \(credentials.secretKey) (development key kept in \(configuration.dataDirectory))")
                }
                // Written straight to the file descriptor: a script reading our output sees it at once.
                FileHandle.standardOutput.write(Data((lines.joined(separator: "\n") + "\n").utf8))
            }
            standardError("liveroom-server: stopped: graceful shutdown (SIGTERM or SIGINT)\n")
        } catch let error as ClusterStartError {
            // A clear line and exit code 3 (not 1): scripts can tell "the database is down" apart.
            standardError("liveroom-server: \(error.description)\n")
            exit(3)
        } catch {
            standardError("liveroom-server: error: \(error)\n")
            exit(1)
        }
    }

    static func standardError(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }
}
