// join-bench: how soon an audience member sees video after joining. An anchor publishes
// pre-encoded VP8 540x960@15 (a keyframe every 2 s, PLI not answered) plus Opus through
// liveroom-server; audience members (light clients in this process) open a WebSocket, send
// enterRoom, on onEnterRoom subscribe with a recvonly offer, connect ICE and DTLS, and feed
// the video RTP into a VideoFrameAssembler (NACK and PLI sent back) until the first complete
// keyframe comes out. Nothing is decoded: the figures are the server's share of the time to
// first frame. Two phases: "sequence" (one after another, random pauses so joins land at
// different points of the GOP) and "burst" (all at once).
//
// With --baseline-binary, each round measures the baseline first and then --server-binary,
// and the figures are printed next to each other with new/baseline ratios.
//
// Usage: join-bench --server-binary .build/release/liveroom-server [--baseline-binary /tmp/liveroom-server-base] [--rounds 3] [--json]
// Build with -c release.

import ArgumentParser
import BenchSupport
import Foundation
import LiveRoomSecureTransport
import Logging
import NIOCore

@main
struct JoinBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "join-bench",
        abstract: "Measures how soon audience members joining a live room get their first complete video keyframe from liveroom-server.")

    @Option(help: "The liveroom-server executable under test (a release build).")
    var serverBinary: String
    @Option(help: "A baseline liveroom-server executable, measured first in every round.")
    var baselineBinary: String?
    @Option(help: "Audience members that join one after another in the sequence phase.")
    var sequence: Int = 12
    @Option(help: "Audience members that join at once in the burst phase.")
    var burst: Int = 50
    @Option(help: "Rounds; every figure is the median over rounds.")
    var rounds: Int = 3
    @Option(help: "Seconds a join may take, from opening its WebSocket to its first keyframe.")
    var timeout: Double = 10
    @Option(help: "Longest random pause before each join of the sequence phase, in seconds.")
    var maxPause: Double = 2
    @Option(help: "Seconds the publisher sends before the first join.")
    var settle: Double = 2
    @Option(help: "VP8 target bitrate in kbit/s.")
    var videoKbps: Int = 1300
    @Option(help: "Event loops for the bench's clients (default: one per core).")
    var threads: Int?
    @Flag(help: "Print one JSON object per phase and binary (progress and notes go to standard error).")
    var json = false

    func validate() throws {
        guard sequence >= 0, burst >= 0, sequence + burst > 0 else { throw ValidationError("--sequence and --burst must not be negative, and not both 0") }
        // The server takes at most 100 signaling connections from one address by default; the anchor is one.
        guard sequence <= 95, burst <= 95 else { throw ValidationError("--sequence and --burst must be at most 95 (connections per address)") }
        guard rounds >= 1 else { throw ValidationError("--rounds must be at least 1") }
        guard timeout > 0, maxPause >= 0, settle >= 0 else { throw ValidationError("--timeout must be positive, --max-pause and --settle not negative") }
        for binary in [serverBinary] + (baselineBinary.map { [$0] } ?? []) {
            guard FileManager.default.isExecutableFile(atPath: binary) else { throw ValidationError("\(binary) is not an executable") }
        }
    }

    func run() async throws {
        var logger = Logger(label: "join-bench")
        logger.logLevel = .warning
        let report = Report(json: json)
        let options = JoinOptions(
            sequenceJoins: sequence, burstJoins: burst, timeout: .milliseconds(Int64(timeout * 1000)), maxPause: .milliseconds(Int64(maxPause * 1000)),
            settle: .milliseconds(Int64(settle * 1000)), threads: threads ?? System.coreCount)
        let servers = (baselineBinary.map { [ServerUnderTest(label: "baseline", binary: $0)] } ?? []) + [ServerUnderTest(label: "new", binary: serverBinary)]

        progress("pre-encoding 4 s of VP8 540x960@15 at \(videoKbps) kbit/s (noisy test card) and 200 Opus frames…")
        let media = try PreencodedMedia.make(
            width: 540, height: 960, fps: 15, videoKbps: videoKbps, seconds: 4, audioKbps: 56, audioFrameCount: 200, label: "JOIN-BENCH")
        let identity = BenchIdentity(sdkAppId: JoinRun.sdkAppId, secretKey: JoinRun.secretKey, certificate: try DTLSCertificate(commonName: "join-bench"))
        report.printHeader(media: media, servers: servers, options: options, rounds: rounds)

        // results[server label][phase] = one result per round.
        var results: [String: [Phase: [PhaseResult]]] = [:]
        for round in 1...rounds {
            for server in servers {
                progress("round \(round)/\(rounds): \(server.label) (\(server.binary))")
                let result = try await JoinRun.measure(binary: server.binary, round: round, identity: identity, media: media, options: options, logger: logger)
                for phase in Phase.allCases {
                    let phaseResult = result[phase] ?? PhaseResult()
                    results[server.label, default: [:]][phase, default: []].append(phaseResult)
                    let joins = phaseResult.joins
                    let enter = Distribution(joins.map(\.enterMilliseconds)), keyframe = Distribution(joins.map(\.keyframeMilliseconds))
                    progress("  \(phase.rawValue) \(server.label): " + String(
                        format: "enter p50 %.1f ms, keyframe p50 %.1f p95 %.1f max %.1f ms, %.0f of %d timed out",
                        enter.p50, keyframe.p50, keyframe.p95, keyframe.max, keyframe.timeouts, joins.count))
                }
            }
        }

        var all: [(ServerUnderTest, PhaseSummary)] = []
        for phase in Phase.allCases {
            let row = servers.map { server in (server, PhaseSummary(phase: phase, rounds: results[server.label]?[phase] ?? [])) }
            report.print(row)
            all += row
        }
        report.printFooter(all)
    }
}

func progress(_ message: String) {
    FileHandle.standardError.write(Data(("join-bench: " + message + "\n").utf8))
}
