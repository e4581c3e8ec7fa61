import Logging
import Synchronization
import Testing

@testable import LiveRoomServer

@Suite struct EscapingLogHandlerTests {
    /// Keeps what reaches it, as a stream handler would write it.
    final class Capture: Sendable {
        let events = Mutex<[LogEvent]>([])
    }

    struct CapturingHandler: LogHandler {
        let capture: Capture
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) { capture.events.withLock { $0.append(event) } }
    }

    @Test func clientTextCannotStartALineOrGrowOneWithoutBound() throws {
        let capture = Capture()
        var logger = Logger(label: "test") { _ in EscapingLogHandler(CapturingHandler(capture: capture)) }
        logger[metadataKey: "liveroom.room"] = "shop\n[critical] forged"
        let url = "rtmp://cdn/live\r\nliveroom-server: error forged" + String(repeating: "x", count: 10_000)
        logger.info("Admin call \u{2028}forged", metadata: ["liveroom.url": "\(url)", "list": ["a\nb"], "map": ["k\n": "v\u{85}"]])

        let event = try #require(capture.events.withLock { $0.first })
        let texts = [event.message.description, logger[metadataKey: "liveroom.room"]?.description ?? ""]
            + (event.metadata ?? [:]).values.map(\.description)
        for text in texts {
            #expect(!text.unicodeScalars.contains { $0 == "\n" || $0 == "\r" || $0 == "\u{85}" || $0 == "\u{2028}" }, "\(text)")
        }
        #expect(logger[metadataKey: "liveroom.room"]?.description == #"shop\n[critical] forged"#)
        let logged = try #require(event.metadata?["liveroom.url"]?.description)
        #expect(logged.hasSuffix("…") && logged.count < EscapingLogHandler.maxValueLength + 10, "cut after 256 characters of input")
        #expect(logged.hasPrefix(#"rtmp://cdn/live\r\nliveroom-server"#))
    }
}
