import Foundation
import LiveRoomCore
import NIOPosix

/// The figures of one subscriber count. CPU percentages are of one core; "per packet" is
/// per forwarded packet (publisher packets × N), or per received publisher packet for N = 0.
struct Row: Sendable {
    var subscribers: Int
    var seconds: Double
    var publishedPacketsPerSecond: Double
    var publishedKbps: Double
    var forwardedPacketsPerSecond: Double
    var receivedPacketsPerSecond: Double
    /// From sequence gaps, per SSRC.
    var lossPercent: Double
    /// Received ÷ (published × N).
    var deliveredPercent: Double
    var delayP50Milliseconds: Double
    var delayP99Milliseconds: Double
    /// Medians of the per-second samples.
    var serverCPUPercent: Double
    var serverMicrosecondsPerPacket: Double
    var benchCPUPercent: Double
    /// Over the whole window.
    var serverCPUPercentMean: Double
    /// (server CPU − idle server CPU) ÷ N.
    var cpuPercentPerSubscriber: Double?
    var floorMicrosecondsPerPacket: Double
    var floorCPUPercent: Double
    var serverToFloor: Double

    init(subscribers n: Int, window: Window, floor: CryptoFloor.Figures, idleCPUPercent: Double?) {
        let elapsed = window.elapsedSeconds
        let published = window.last.published.packets - window.first.published.packets
        let received = window.last.received - window.first.received
        let packetsPerInput = Double(max(1, n))
        subscribers = n
        seconds = elapsed
        publishedPacketsPerSecond = Double(published) / elapsed
        publishedKbps = Double(window.last.published.bytes - window.first.published.bytes) * 8 / elapsed / 1000
        forwardedPacketsPerSecond = Double(published * n) / elapsed
        receivedPacketsPerSecond = Double(received.receivedPackets) / elapsed
        lossPercent = received.expectedPackets > 0 ? Double(max(0, received.expectedPackets - received.receivedPackets)) * 100 / Double(received.expectedPackets) : 0
        deliveredPercent = n > 0 && published > 0 ? Double(received.receivedPackets) * 100 / Double(published * n) : .nan
        delayP50Milliseconds = window.delayMilliseconds(quantile: 0.5)
        delayP99Milliseconds = window.delayMilliseconds(quantile: 0.99)
        let ticks = clockTicksPerSecond
        serverCPUPercent = median(window.perSecond { a, b, dt in Double(b.serverTicks - a.serverTicks) / ticks / dt * 100 })
        serverMicrosecondsPerPacket = median(window.perSecond { a, b, _ in
            let packets = Double(b.published.packets - a.published.packets) * packetsPerInput
            return packets > 0 ? Double(b.serverTicks - a.serverTicks) / ticks * 1e6 / packets : nil
        })
        benchCPUPercent = median(window.perSecond { a, b, dt in (b.benchCPUSeconds - a.benchCPUSeconds) / dt * 100 })
        serverCPUPercentMean = Double(window.last.serverTicks - window.first.serverTicks) / ticks / elapsed * 100
        cpuPercentPerSubscriber = idleCPUPercent.flatMap { n > 0 ? (serverCPUPercent - $0) / Double(n) : nil }
        floorMicrosecondsPerPacket = floor.microsecondsPerPacket
        floorCPUPercent = floor.microsecondsPerPacket * publishedPacketsPerSecond * packetsPerInput / 1e4
        serverToFloor = serverMicrosecondsPerPacket / floor.microsecondsPerPacket
    }

    var json: JSONValue {
        func number(_ value: Double?) -> JSONValue {
            guard let value, value.isFinite else { return .null }
            return .number((value * 1000).rounded() / 1000)
        }
        return .object([
            "subscribers": .number(Double(subscribers)),
            "seconds": number(seconds),
            "publishedPacketsPerSecond": number(publishedPacketsPerSecond),
            "publishedKbps": number(publishedKbps),
            "forwardedPacketsPerSecond": number(forwardedPacketsPerSecond),
            "receivedPacketsPerSecond": number(receivedPacketsPerSecond),
            "lossPercent": number(lossPercent),
            "deliveredPercent": number(deliveredPercent),
            "delayP50Milliseconds": number(delayP50Milliseconds),
            "delayP99Milliseconds": number(delayP99Milliseconds),
            "serverCPUPercent": number(serverCPUPercent),
            "serverCPUPercentMean": number(serverCPUPercentMean),
            "serverMicrosecondsPerPacket": number(serverMicrosecondsPerPacket),
            "cpuPercentPerSubscriber": number(cpuPercentPerSubscriber),
            "floorMicrosecondsPerPacket": number(floorMicrosecondsPerPacket),
            "floorCPUPercent": number(floorCPUPercent),
            "serverToFloor": number(serverToFloor),
            "benchCPUPercent": number(benchCPUPercent),
        ])
    }
}

/// Prints the table (or JSON lines) as rows come in.
struct Report: Sendable {
    let json: Bool

    private static let columns: [(title: String, width: Int)] = [
        ("N", 4), ("srv CPU%", 9), ("µs/pkt", 7), ("floor µs", 9), ("ratio", 6), ("floor CPU%", 11), ("CPU%/sub", 9),
        ("fwd pkt/s", 10), ("recv pkt/s", 11), ("loss%", 7), ("delay p50", 10), ("p99 ms", 7), ("bench CPU%", 11),
    ]

    private func out(_ line: String) {
        if json { progress(line) } else { Swift.print(line) }
    }

    func printHeader(media: PreencodedMedia, server: ServerProcess, loops: Int, seconds: Int) {
        let load = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3).joined(separator: " ") ?? "?"
        out("sfu-bench: liveroom-server pid \(server.pid), 1 publisher -> N subscribers on loopback, \(seconds) s windows, medians of 1 s samples")
        out(String(format: "media: VP8 %dx%d@%d %.0f kbit/s + Opus %.1f kbit/s (pre-encoded, replayed), RTP payload <= %d bytes, send-time header extension",
                   media.width, media.height, media.fps, media.videoKbps, media.audioKbps, BenchPublisher.maxPayloadSize))
        out("machine: \(System.coreCount) cores, load average \(load) at start; bench client loops: \(loops); SRTP \(Bench.srtpProfile.openSSLName)")
        out("baseline (floor): SRTP unprotect once + N x (copy, SRTP protect, loopback UDP send via sendmmsg), CPU µs per forwarded packet in a tight loop")
        if !json {
            out("")
            out(Self.columns.map { pad($0.title, $0.width) }.joined(separator: " "))
        }
    }

    func print(_ row: Row) {
        if json {
            Swift.print(row.json.jsonText)
            fflush(stdout)
            return
        }
        func f(_ value: Double?, _ digits: Int) -> String {
            guard let value, value.isFinite else { return "-" }
            return String(format: "%.\(digits)f", value)
        }
        let cells = [
            String(row.subscribers), f(row.serverCPUPercent, 1), f(row.serverMicrosecondsPerPacket, 2), f(row.floorMicrosecondsPerPacket, 2),
            f(row.serverToFloor, 1), f(row.floorCPUPercent, 1), f(row.cpuPercentPerSubscriber, 2), f(row.forwardedPacketsPerSecond, 0),
            f(row.receivedPacketsPerSecond, 0), f(row.lossPercent, 2), f(row.delayP50Milliseconds, 2), f(row.delayP99Milliseconds, 2),
            f(row.benchCPUPercent, 1),
        ]
        Swift.print(zip(cells, Self.columns).map { pad($0, $1.width) }.joined(separator: " "))
        fflush(stdout)
    }

    func printFooter(stoppedAt: Int?, maxLoss: Double) {
        if let stoppedAt {
            out(String(format: "stopped after N=%d: loss above %.1f%%", stoppedAt, maxLoss))
        }
        out("N=0 is the idle server (publisher only): µs/pkt and floor are per received publisher packet; ratio = server µs/pkt ÷ floor µs/pkt")
    }

    private func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
    }
}
