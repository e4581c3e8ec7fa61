import LiveRoomProtocol
import Testing

@testable import LiveRoomPublishTasks

@Suite("PublishTaskStateMachine: connections, retries, idle stop, updates")
struct PublishTaskStateMachineTests {
    let t0 = ContinuousClock.now
    let urlA = "rtmp://cdn-a.example.com/live/s"
    let urlB = "rtmp://cdn-b.example.com/live/s"

    func at(_ milliseconds: Int) -> ContinuousClock.Instant { t0.advanced(by: .milliseconds(milliseconds)) }

    func started(_ config: PublishTaskConfig? = nil, configuration: PublishTaskStateMachine.Configuration = .init(), present: Int = 2) -> PublishTaskStateMachine {
        var machine = PublishTaskStateMachine(config: config ?? mixConfig(urls: [urlA, urlB]), configuration: configuration)
        _ = machine.start(presentUserCount: present, now: t0)
        return machine
    }

    @Test func startConnectsEveryURL() {
        let config = mixConfig(urls: [urlA, urlB])
        var machine = PublishTaskStateMachine(config: config)
        #expect(machine.start(presentUserCount: 2, now: t0) == [
            .startOutput(config), .connect(url: urlA), .reportState(url: urlA, .connecting), .connect(url: urlB), .reportState(url: urlB, .connecting),
        ])
        #expect(machine.start(presentUserCount: 2, now: t0) == [])
        #expect(machine.rtmpConnected(url: urlA) == [.reportState(url: urlA, .pushing)])
        #expect(machine.rtmpConnected(url: urlA) == [])
        #expect(machine.rtmpConnected(url: "rtmp://unknown/live/x") == [])
        #expect(machine.cdnStreamStates.map(\.state) == [.pushing, .connecting])
    }

    @Test func aDroppedConnectionIsRetriedThenGivenUp() {
        var machine = started()
        _ = machine.rtmpConnected(url: urlA)
        _ = machine.rtmpConnected(url: urlB)
        #expect(machine.rtmpFailed(url: urlA, message: "broken pipe", now: at(0)) == [
            .reportState(url: urlA, .reconnecting(attempt: 1)), .scheduleRetry(url: urlA, at: at(1000)),
        ])
        // A second failure report while waiting changes nothing; an early timer does nothing.
        #expect(machine.rtmpFailed(url: urlA, message: "again", now: at(10)) == [])
        #expect(machine.timerFired(now: at(999)) == [])
        var now = 1000
        for attempt in 1...5 {
            #expect(machine.timerFired(now: at(now)) == [.connect(url: urlA)], "attempt \(attempt)")
            if attempt < 5 {
                #expect(machine.rtmpFailed(url: urlA, message: "refused", now: at(now + 50)) == [
                    .reportState(url: urlA, .reconnecting(attempt: attempt + 1)), .scheduleRetry(url: urlA, at: at(now + 1050)),
                ])
                now += 1050
            }
        }
        let gaveUp = machine.rtmpFailed(url: urlA, message: "refused", now: at(now + 50))
        #expect(gaveUp == [.reportState(url: urlA, .failed(message: "\(urlA): refused (gave up after 5 retries)"))])
        // The other URL still pushes: the task goes on.
        #expect(!machine.isStopped)
        #expect(machine.cdnStreamStates.map(\.state) == [.failed(message: "\(urlA): refused (gave up after 5 retries)"), .pushing])
    }

    @Test func theTaskStopsWhenEveryURLHasFailed() {
        var machine = started(configuration: .init(retryCount: 1, retryInterval: .milliseconds(250)))
        #expect(machine.rtmpFailed(url: urlA, message: "refused", now: at(0)) == [
            .reportState(url: urlA, .reconnecting(attempt: 1)), .scheduleRetry(url: urlA, at: at(250)),
        ])
        #expect(machine.timerFired(now: at(250)) == [.connect(url: urlA)])
        #expect(machine.rtmpFailed(url: urlA, message: "refused", now: at(300)) == [
            .reportState(url: urlA, .failed(message: "\(urlA): refused (gave up after 1 retries)"))
        ])
        _ = machine.rtmpFailed(url: urlB, message: "timeout", now: at(300))
        _ = machine.timerFired(now: at(550))
        let last = machine.rtmpFailed(url: urlB, message: "timeout", now: at(600))
        let message = "\(urlB): timeout (gave up after 1 retries)"
        #expect(last == [.reportState(url: urlB, .failed(message: message)), .stopOutput(.failed(message: message))])
        #expect(machine.stopReason == .failed(message: message))
        #expect(machine.rtmpFailed(url: urlB, message: "x", now: at(700)) == [])
    }

    @Test func aSuccessfulReconnectResetsTheAttempts() {
        var machine = started(configuration: .init(retryCount: 2))
        _ = machine.rtmpConnected(url: urlA)
        _ = machine.rtmpFailed(url: urlA, message: "drop", now: at(0))
        _ = machine.timerFired(now: at(1000))
        _ = machine.rtmpFailed(url: urlA, message: "refused", now: at(1100))
        _ = machine.timerFired(now: at(2100))
        #expect(machine.rtmpConnected(url: urlA) == [.reportState(url: urlA, .pushing)])
        #expect(machine.rtmpFailed(url: urlA, message: "drop", now: at(5000)) == [
            .reportState(url: urlA, .reconnecting(attempt: 1)), .scheduleRetry(url: urlA, at: at(6000)),
        ])
    }

    @Test func idleStopAfterEveryInputLeft() {
        var machine = started()
        #expect(machine.inputsChanged(presentUserCount: 0, now: at(1000)) == [.scheduleIdleStop(at: at(31_000))])
        #expect(machine.inputsChanged(presentUserCount: 0, now: at(2000)) == [])
        #expect(machine.timerFired(now: at(30_999)) == [])
        #expect(machine.timerFired(now: at(31_000)) == [
            .disconnect(url: urlA), .reportState(url: urlA, .stopped), .disconnect(url: urlB), .reportState(url: urlB, .stopped), .stopOutput(.idleTimeout),
        ])
        #expect(machine.stopReason == .idleTimeout)
        #expect(machine.stop() == [])
    }

    @Test func aReturningInputCancelsTheIdleStop() {
        var machine = started()
        _ = machine.inputsChanged(presentUserCount: 0, now: at(0))
        #expect(machine.inputsChanged(presentUserCount: 1, now: at(10_000)) == [])
        #expect(machine.timerFired(now: at(30_000)) == [])
        #expect(!machine.isStopped)
        // Leaving again starts a fresh idle time.
        #expect(machine.inputsChanged(presentUserCount: 0, now: at(40_000)) == [.scheduleIdleStop(at: at(70_000))])
    }

    @Test func idleTimeFromTheConfigAndAnEmptyStart() {
        var config = mixConfig(urls: [urlA])
        config.idleTimeout = .seconds(60)
        var machine = PublishTaskStateMachine(config: config, configuration: .init(idleTimeout: .seconds(5)))
        #expect(machine.start(presentUserCount: 0, now: t0).last == .scheduleIdleStop(at: at(60_000)))
        var defaults = PublishTaskStateMachine(config: mixConfig(urls: [urlA]), configuration: .init(idleTimeout: .seconds(5)))
        #expect(defaults.start(presentUserCount: 0, now: t0).last == .scheduleIdleStop(at: at(5000)))
    }

    @Test func stopAndRoomDismissed() {
        var machine = started()
        _ = machine.rtmpFailed(url: urlB, message: "x", now: at(0))
        #expect(machine.roomDismissed() == [
            .disconnect(url: urlA), .reportState(url: urlA, .stopped), .disconnect(url: urlB), .reportState(url: urlB, .stopped), .stopOutput(.roomDismissed),
        ])
        #expect(machine.stop() == [])
        #expect(machine.timerFired(now: at(1000)) == [])
        #expect(machine.cdnStreamStates.map(\.state) == [.stopped, .stopped])

        var requested = started()
        #expect(requested.stop().last == .stopOutput(.requested))
        #expect(requested.inputsChanged(presentUserCount: 0, now: at(0)) == [])
    }

    @Test func roomTargetsHaveNoConnections() {
        let config = PublishTaskConfig(
            target: PublishTarget(mode: .mixStreamToRoom, mixStreamIdentity: MixUser(userId: "robot")),
            encoderParam: StreamEncoderParam(videoEncodedWidth: 640, videoEncodedHeight: 360))
        var machine = PublishTaskStateMachine(config: config)
        #expect(machine.start(presentUserCount: 1, now: t0) == [.startOutput(config)])
        #expect(machine.stop() == [.stopOutput(.requested)])
    }

    @Test func updateChangesLayoutAndURLsOnTheSameConnections() throws {
        var machine = started()
        _ = machine.rtmpConnected(url: urlA)
        _ = machine.rtmpConnected(url: urlB)
        let urlC = "rtmp://cdn-c.example.com/live/s"
        var next = mixConfig(
            layouts: [VideoLayout(rect: MixRect(x: 0, y: 0, width: 540, height: 960), fixedVideoUser: MixUser(userId: "anchor"))], urls: [urlB, urlC])
        next.encoderParam?.videoEncodedKbps = 2000
        next.encoderParam?.videoEncodedFPS = 25
        #expect(try machine.update(next, now: at(0)) == [
            .applyConfig(next), .disconnect(url: urlA), .reportState(url: urlA, .stopped), .connect(url: urlC), .reportState(url: urlC, .connecting),
        ])
        #expect(machine.config == next)
        #expect(machine.cdnStreamStates.map(\.url) == [urlB, urlC])
        #expect(machine.cdnStreamStates.map(\.state) == [.pushing, .connecting])
    }

    @Test func updateRetriesAFailedURL() throws {
        var machine = started(configuration: .init(retryCount: 0))
        _ = machine.rtmpConnected(url: urlB)
        _ = machine.rtmpFailed(url: urlA, message: "refused", now: at(0))
        let actions = try machine.update(mixConfig(urls: [urlA, urlB]), now: at(100))
        #expect(actions.contains(.connect(url: urlA)))
        #expect(!actions.contains(.connect(url: urlB)))
    }

    @Test func updatesThatWouldBreakTheStreamAreRefused() {
        var machine = started()
        let before = machine.config
        expectError(ErrorCode.resolutionChange, "540x960", "1280x720") {
            _ = try machine.update(mixConfig(urls: [urlA, urlB], width: 1280, height: 720), now: at(0))
        }
        expectError(ErrorCode.mediaKindChange, "audio-only") {
            _ = try machine.update(mixConfig(urls: [urlA, urlB], width: 0, height: 0), now: at(0))
        }
        expectError(ErrorCode.audioFormatChange, "48000", "44100") {
            var next = mixConfig(urls: [urlA, urlB])
            next.encoderParam?.audioEncodedSampleRate = 44100
            _ = try machine.update(next, now: at(0))
        }
        expectError(ErrorCode.publishModeChange, "mixStreamToRoom") {
            var next = mixConfig(urls: [])
            next.target = PublishTarget(mode: .mixStreamToRoom, mixStreamIdentity: MixUser(userId: "robot"))
            _ = try machine.update(next, now: at(0))
        }
        #expect(machine.config == before)
        _ = machine.stop()
        expectError(ErrorCode.taskNotFound, "stopped") {
            _ = try machine.update(before, now: at(0))
        }
    }

    @Test func aRelayMayBecomeAMixButNotAudioOnly() throws {
        let relay = PublishTaskConfig(
            target: PublishTarget(mode: .bigStreamToCdn, cdnUrlList: [PublishCdnUrl(rtmpUrl: urlA)]), relaySource: MixUser(userId: "anchor"))
        var machine = PublishTaskStateMachine(config: relay)
        _ = machine.start(presentUserCount: 1, now: t0)
        _ = machine.rtmpConnected(url: urlA)
        expectError(ErrorCode.mediaKindChange) {
            _ = try machine.update(mixConfig(urls: [urlA], width: 0, height: 0), now: at(0))
        }
        let mix = mixConfig(urls: [urlA])
        #expect(try machine.update(mix, now: at(0)) == [.applyConfig(mix)])
        // And back to a relay of the same stream.
        #expect(try machine.update(relay, now: at(10)) == [.applyConfig(relay)])
    }

    @Test func updateBeforeStartOnlyReplacesTheConfig() throws {
        var machine = PublishTaskStateMachine(config: mixConfig(urls: [urlA]))
        let next = mixConfig(urls: [urlB])
        #expect(try machine.update(next, now: t0) == [])
        #expect(machine.start(presentUserCount: 1, now: t0) == [.startOutput(next), .connect(url: urlB), .reportState(url: urlB, .connecting)])
    }
}
