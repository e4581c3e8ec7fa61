import LiveRoomProtocol
import Logging

/// A log handler that escapes every message and metadata value before the handler it wraps
/// writes them: room ids, user ids, URLs and action names come from clients, and one with a
/// newline must not write a line of its own. Values are also cut to ``maxValueLength``
/// characters so a client cannot make one log line arbitrarily long.
public struct EscapingLogHandler: LogHandler {
    /// The most characters of one metadata value (or message) that reach the log.
    public static let maxValueLength = 256

    private var upstream: any LogHandler

    /// Wraps `upstream`, which does the writing.
    public init(_ upstream: any LogHandler) {
        self.upstream = upstream
    }

    public var logLevel: Logger.Level {
        get { upstream.logLevel }
        set { upstream.logLevel = newValue }
    }

    public var metadata: Logger.Metadata {
        get { upstream.metadata }
        set { upstream.metadata = newValue.mapValues(Self.escape) }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { upstream[metadataKey: key] }
        set { upstream[metadataKey: key] = newValue.map(Self.escape) }
    }

    public func log(event: LogEvent) {
        var event = event
        event.message = "\(event.message.description.escaped(maxLength: Self.maxValueLength))"
        event.metadata = event.metadata?.mapValues(Self.escape)
        upstream.log(event: event)
    }

    static func escape(_ value: Logger.Metadata.Value) -> Logger.Metadata.Value {
        switch value {
        case .string(let text): .string(text.escaped(maxLength: maxValueLength))
        case .stringConvertible(let convertible): .string(convertible.description.escaped(maxLength: maxValueLength))
        case .array(let values): .array(values.map(escape))
        case .dictionary(let values):
            // Keys cut to the same prefix keep the first value instead of trapping.
            .dictionary(Dictionary(values.map { ($0.key.escaped(maxLength: maxValueLength), escape($0.value)) }, uniquingKeysWith: { first, _ in first }))
        }
    }
}
