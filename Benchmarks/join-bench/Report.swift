import BenchSupport
import Foundation
import LiveRoomProtocol

/// p50, p95 and max (ms) of the joins that got there in time, and how many did not.
struct Distribution: Sendable {
    var p50: Double
    var p95: Double
    var max: Double
    var timeouts: Double

    init(_ values: [Double?]) {
        let done = values.compactMap { $0 }
        p50 = percentile(done, 50)
        p95 = percentile(done, 95)
        max = done.max() ?? .nan
        timeouts = Double(values.count - done.count)
    }

    /// The median over rounds of each figure.
    init(medianOf rounds: [Distribution]) {
        func m(_ values: [Double]) -> Double { median(values.filter(\.isFinite)) }
        p50 = m(rounds.map(\.p50))
        p95 = m(rounds.map(\.p95))
        max = m(rounds.map(\.max))
        timeouts = m(rounds.map(\.timeouts))
    }

    var json: JSONValue {
        .object(["p50": number(p50), "p95": number(p95), "max": number(max), "timeouts": number(timeouts)])
    }
}

/// One phase against one binary, over every round.
struct PhaseSummary: Sendable {
    var phase: Phase
    var rounds: Int
    var joinsPerRound: Int
    /// enterRoom → onEnterRoom, and onEnterRoom → first complete keyframe: medians over rounds.
    var enter: Distribution
    var keyframe: Distribution
    /// Summed over rounds.
    var enterTimeoutsTotal: Int
    var keyframeTimeoutsTotal: Int
    /// Medians over rounds of each round's p50, in ms: subscribe → answer, answer → ICE,
    /// ICE → DTLS, DTLS → keyframe, first video packet → keyframe.
    var answerP50: Double
    var iceP50: Double
    var dtlsP50: Double
    var connectedToKeyframeP50: Double
    var firstPacketToKeyframeP50: Double
    /// Totals over rounds, on the audience side.
    var keyframeRequests: UInt64
    var sequenceNumbersNacked: UInt64
    var droppedBeforeConnected: Int
    /// Receive-buffer drops during the phase, totals over rounds.
    var serverSocketDrops: Int
    var benchSocketDrops: Int
    var failures: [String]

    init(phase: Phase, rounds results: [PhaseResult]) {
        let rounds = results.map(\.joins)
        serverSocketDrops = results.reduce(0) { $0 + $1.serverSocketDrops }
        benchSocketDrops = results.reduce(0) { $0 + $1.benchSocketDrops }
        self.phase = phase
        self.rounds = rounds.count
        joinsPerRound = rounds.first?.count ?? 0
        enter = Distribution(medianOf: rounds.map { Distribution($0.map(\.enterMilliseconds)) })
        keyframe = Distribution(medianOf: rounds.map { Distribution($0.map(\.keyframeMilliseconds)) })
        enterTimeoutsTotal = rounds.reduce(0) { $0 + $1.filter { $0.enterMilliseconds == nil }.count }
        keyframeTimeoutsTotal = rounds.reduce(0) { $0 + $1.filter { $0.keyframeMilliseconds == nil }.count }
        func p50(_ value: (JoinSample) -> Double?) -> Double {
            median(rounds.map { percentile($0.compactMap(value), 50) }.filter(\.isFinite))
        }
        answerP50 = p50(\.answerMilliseconds)
        iceP50 = p50(\.iceMilliseconds)
        dtlsP50 = p50(\.dtlsMilliseconds)
        connectedToKeyframeP50 = p50(\.connectedToKeyframeMilliseconds)
        firstPacketToKeyframeP50 = p50(\.firstPacketToKeyframeMilliseconds)
        let all = rounds.joined()
        keyframeRequests = all.reduce(0) { $0 + ($1.media?.keyframeRequests ?? 0) }
        sequenceNumbersNacked = all.reduce(0) { $0 + ($1.media?.sequenceNumbersNacked ?? 0) }
        droppedBeforeConnected = all.reduce(0) { $0 + ($1.media?.droppedBeforeConnected ?? 0) }
        failures = all.compactMap { $0.failure ?? $0.media?.closedReason }
    }
}

/// A named server binary of the run.
struct ServerUnderTest: Sendable {
    /// "baseline" or "new".
    var label: String
    var binary: String
}

/// Prints the table (or JSON lines).
struct Report: Sendable {
    let json: Bool

    private static let columns: [(title: String, width: Int)] = [
        ("phase", 8), ("server", 8), ("joins", 5), ("enter p50", 10), ("p95", 7), ("max", 7), ("t/o", 5),
        ("keyframe p50", 13), ("p95", 7), ("max", 7), ("t/o", 5), ("answer", 7), ("ICE", 6), ("DTLS", 6), ("conn→kf", 8), ("pkt→kf", 7),
    ]

    private func out(_ line: String) {
        if json { progress(line) } else { Swift.print(line) }
    }

    func printHeader(media: PreencodedMedia, servers: [ServerUnderTest], options: JoinOptions, rounds: Int) {
        let load = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3).joined(separator: " ") ?? "?"
        out("join-bench: audience members join a room whose anchor publishes; time to the first complete VP8 keyframe, on loopback")
        let sizes = media.frameSizes
        out(String(format: "media: VP8 %dx%d@%d %.0f kbit/s, key frame every 2 s (%d bytes, %d packets), other frames %d bytes; Opus %.1f kbit/s (pre-encoded, replayed; PLI not answered)",
                   media.width, media.height, media.fps, media.videoKbps, sizes.keyframe, (sizes.keyframe + BenchPublisher.maxPayloadSize - 1) / BenchPublisher.maxPayloadSize,
                   sizes.interframe, media.audioKbps))
        out("phases: sequence = \(options.sequenceJoins) joins one after another (random pause 0-\(options.maxPause.milliseconds / 1000) s before each, next once the last has its keyframe); burst = \(options.burstJoins) joins at once")
        for server in servers { out("\(server.label): \(server.binary)") }
        out("machine: \(ProcessInfo.processInfo.activeProcessorCount) cores, load average \(load) at start; bench client loops: \(options.threads); rounds: \(rounds), timeout \(options.timeout.milliseconds / 1000) s per join")
        if !json {
            out("")
            out(Self.columns.map { pad($0.title, $0.width) }.joined(separator: " "))
        }
    }

    /// The summaries of one phase, the baseline's first, then the ratio row (new/baseline).
    func print(_ summaries: [(ServerUnderTest, PhaseSummary)]) {
        let baseline = summaries.first { $0.0.label == "baseline" }?.1
        if json {
            for (server, summary) in summaries {
                Swift.print(object(summary, server: server, baseline: server.label == "baseline" ? nil : baseline).jsonText)
            }
            fflush(nil)
            return
        }
        for (server, s) in summaries {
            let cells = [
                s.phase.rawValue, server.label, String(s.joinsPerRound),
                f(s.enter.p50, 1), f(s.enter.p95, 1), f(s.enter.max, 1), "\(s.enterTimeoutsTotal)",
                f(s.keyframe.p50, 1), f(s.keyframe.p95, 1), f(s.keyframe.max, 1), "\(s.keyframeTimeoutsTotal)",
                f(s.answerP50, 1), f(s.iceP50, 1), f(s.dtlsP50, 1), f(s.connectedToKeyframeP50, 1), f(s.firstPacketToKeyframeP50, 1),
            ]
            Swift.print(zip(cells, Self.columns).map { pad($0, $1.width) }.joined(separator: " "))
        }
        if let baseline, let new = summaries.first(where: { $0.0.label != "baseline" })?.1 {
            let cells = [
                "", "new/base", "", f(new.enter.p50 / baseline.enter.p50, 2), f(new.enter.p95 / baseline.enter.p95, 2), "", "",
                f(new.keyframe.p50 / baseline.keyframe.p50, 2), f(new.keyframe.p95 / baseline.keyframe.p95, 2), "", "", "", "", "", "", "",
            ]
            Swift.print(zip(cells, Self.columns).map { pad($0, $1.width) }.joined(separator: " "))
        }
        fflush(nil)
    }

    func printFooter(_ summaries: [(ServerUnderTest, PhaseSummary)]) {
        out("")
        for (server, s) in summaries {
            var line = "\(s.phase.rawValue) \(server.label): audience side over \(s.rounds) rounds: \(s.keyframeRequests) PLIs, \(s.sequenceNumbersNacked) sequence numbers NACKed, \(s.droppedBeforeConnected) SRTP packets before DTLS finished; datagrams dropped for a full receive buffer: \(s.serverSocketDrops) at the server, \(s.benchSocketDrops) at the bench"
            if !s.failures.isEmpty { line += "; failures: \(s.failures.count), first: \(s.failures[0])" }
            out(line)
        }
        out("enter = enterRoom sent -> onEnterRoom; keyframe = onEnterRoom -> first complete keyframe out of the frame assembler (no decoding)")
        out("p50/p95/max in ms are medians over rounds of each round's figure; t/o = joins without it within the timeout, summed over rounds")
        out("parts of keyframe (p50, ms): answer = subscribe -> answer; ICE = answer -> ICE pair selected; DTLS = -> DTLS finished;")
        out("conn->kf = DTLS finished -> first keyframe; pkt->kf = first video packet -> first keyframe; new/base = ratio of the medians")
    }

    private func object(_ s: PhaseSummary, server: ServerUnderTest, baseline: PhaseSummary?) -> JSONValue {
        var fields: [String: JSONValue] = [
            "phase": .string(s.phase.rawValue),
            "server": .string(server.label),
            "binary": .string(server.binary),
            "rounds": .number(Double(s.rounds)),
            "joinsPerRound": .number(Double(s.joinsPerRound)),
            "enterRoomMs": s.enter.json,
            "firstKeyframeMs": s.keyframe.json,
            "enterTimeoutsTotal": .number(Double(s.enterTimeoutsTotal)),
            "keyframeTimeoutsTotal": .number(Double(s.keyframeTimeoutsTotal)),
            "partsP50Ms": .object([
                "answer": number(s.answerP50), "ice": number(s.iceP50), "dtls": number(s.dtlsP50),
                "connectedToKeyframe": number(s.connectedToKeyframeP50), "firstPacketToKeyframe": number(s.firstPacketToKeyframeP50),
            ]),
            "keyframeRequests": .number(Double(s.keyframeRequests)),
            "sequenceNumbersNacked": .number(Double(s.sequenceNumbersNacked)),
            "droppedBeforeConnected": .number(Double(s.droppedBeforeConnected)),
            "serverSocketDrops": .number(Double(s.serverSocketDrops)),
            "benchSocketDrops": .number(Double(s.benchSocketDrops)),
            "failures": .number(Double(s.failures.count)),
        ]
        if let baseline {
            fields["ratioToBaseline"] = .object([
                "enterRoomP50": number(s.enter.p50 / baseline.enter.p50), "enterRoomP95": number(s.enter.p95 / baseline.enter.p95),
                "firstKeyframeP50": number(s.keyframe.p50 / baseline.keyframe.p50), "firstKeyframeP95": number(s.keyframe.p95 / baseline.keyframe.p95),
            ])
        }
        return .object(fields)
    }

    private func f(_ value: Double, _ digits: Int) -> String {
        value.isFinite ? String(format: "%.\(digits)f", value) : "-"
    }

    private func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
    }
}

/// A JSON number rounded to 0.001, or null when not finite.
func number(_ value: Double) -> JSONValue {
    value.isFinite ? .number((value * 1000).rounded() / 1000) : .null
}
