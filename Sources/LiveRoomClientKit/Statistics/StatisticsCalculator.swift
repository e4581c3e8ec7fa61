import LiveRoomProtocol
import LiveRoomWire

/// Computes `onStatistics` from successive ``StatisticsSnapshot``s: bitrates in kbit/s and
/// frame rates over the interval since the previous snapshot, loss in percent, delays in ms.
public struct StatisticsCalculator: Sendable {
    private var previous: StatisticsSnapshot?

    public init() {}

    /// The event for `current`, measured against the previous call's snapshot (or zero
    /// counters over `defaultInterval` for the first).
    public mutating func event(for current: StatisticsSnapshot, defaultInterval: Duration = .seconds(2)) -> JSONValue {
        let before = previous
        previous = current
        let seconds = max(0.001, (before.map { current.time - $0.time } ?? defaultInterval).inSeconds)
        func rate(_ now: UInt64, _ then: UInt64?) -> Double { Double(now &- min(now, then ?? 0)) / seconds }
        func kbps(_ now: UInt64, _ then: UInt64?) -> Int { Int((rate(now, then) * 8 / 1000).rounded()) }

        var local: [JSONValue] = []
        if let stream = current.local {
            let old = before?.local
            local.append([
                "width": .number(Double(stream.width)), "height": .number(Double(stream.height)),
                "frameRate": .number(rate(stream.videoFrames, old?.videoFrames).rounded()),
                "videoBitrate": .number(Double(kbps(stream.videoBytes, old?.videoBytes))),
                "audioBitrate": .number(Double(kbps(stream.audioBytes, old?.audioBytes))),
                "streamType": "big",
            ])
        }
        var remote: [JSONValue] = []
        var expectedAll: UInt64 = 0
        var missingAll: UInt64 = 0
        for user in current.remotes.sorted(by: { $0.userId < $1.userId }) {
            let old = before?.remotes.first { $0.userId == user.userId }
            let expected = user.packetsExpected &- min(user.packetsExpected, old?.packetsExpected ?? 0)
            let received = user.packetsReceived &- min(user.packetsReceived, old?.packetsReceived ?? 0)
            let missing = user.packetsMissing &- min(user.packetsMissing, old?.packetsMissing ?? 0)
            expectedAll += expected
            missingAll += missing
            let finalLoss = expected == 0 || received >= expected ? 0 : Double(expected - received) * 100 / Double(expected)
            let frames = user.jitterBufferFrames &- min(user.jitterBufferFrames, old?.jitterBufferFrames ?? 0)
            let jitterDelay = frames == 0 ? 0 : (user.jitterBufferDelayTotal - (old?.jitterBufferDelayTotal ?? 0)) / Double(frames)
            let samples = user.point2PointSamples &- min(user.point2PointSamples, old?.point2PointSamples ?? 0)
            let delay = samples == 0 ? 0 : (user.point2PointDelayTotal - (old?.point2PointDelayTotal ?? 0)) / Double(samples)
            remote.append([
                "userId": .string(user.userId),
                "width": .number(Double(user.width)), "height": .number(Double(user.height)),
                "frameRate": .number(rate(user.videoFrames, old?.videoFrames).rounded()),
                "videoBitrate": .number(Double(kbps(user.videoBytes, old?.videoBytes))),
                "audioBitrate": .number(Double(kbps(user.audioBytes, old?.audioBytes))),
                "finalLoss": .number(finalLoss.rounded()),
                "jitterBufferDelay": .number(max(0, jitterDelay).rounded()),
                "point2PointDelay": .number(max(0, delay).rounded()),
            ])
        }
        let downLoss = expectedAll == 0 ? 0 : min(100, Double(missingAll) * 100 / Double(expectedAll))
        return [
            "event": "onStatistics",
            "rtt": .number((current.roundTripTime ?? 0).rounded()),
            "upLoss": .number(current.upLoss.rounded()),
            "downLoss": .number(downLoss.rounded()),
            "localStatistics": .array(local),
            "remoteStatistics": .array(remote),
        ]
    }
}
