import Foundation
import LiveRoomProtocol

/// Prints events: one JSON object a line (`--json`), or readable lines for a person.
public struct EventPrinter: Sendable {
    public var json: Bool
    /// Whether events that are no TRTC callback but carry whole SDP blobs (`onPublishAnswer`,
    /// `onSubscribeAnswer`) are printed too.
    public var verbose: Bool

    /// The events printed only when ``verbose``.
    public static let verboseEvents: Set<String> = ["onPublishAnswer", "onSubscribeAnswer", "onIceRestartAnswer"]

    public init(json: Bool, verbose: Bool = false) {
        self.json = json
        self.verbose = verbose
    }

    /// Prints an event as a JSON object with `"event"`: one received from the server (printed as
    /// received, fields a newer server adds included) or one the client makes (`onStatistics`).
    public func print(_ event: JSONValue) {
        if !verbose, let name = event["event"]?.stringValue, Self.verboseEvents.contains(name) { return }
        write(json ? event.jsonText : Self.readable(event))
    }

    /// Prints an error of the client itself (bad command, lost connection) as an onError event.
    public func printError(_ error: LiveRoomError, requestType: String? = nil) {
        print(ServerEvent.error(error, requestType: requestType).json)
    }

    /// `onRecvCustomCmdMsg cmdID=1 data=hello seq=3 userId=anchor1`; an
    /// `onCdnStreamStateChanged` status number gets its name: `status=2(pushing)`.
    public static func readable(_ event: JSONValue) -> String {
        guard let object = event.objectValue else { return event.jsonText }
        let name = object["event"]?.stringValue ?? "event"
        var statusName: String?
        if case .onCdnStreamStateChanged(_, _, let status, _, _)? = try? ServerEvent.parse(event) {
            statusName = ServerEvent.cdnStreamStatusName(status)
        }
        let fields = object.filter { $0.key != "event" }.sorted { $0.key < $1.key }.map { key, value in
            var text = value.stringValue.map { $0.contains(" ") || $0.isEmpty ? JSONValue.string($0).jsonText : $0 } ?? value.jsonText
            if key == "status", let statusName { text += "(\(statusName))" }
            return "\(key)=\(text)"
        }
        return ([name] + fields).joined(separator: " ")
    }

    private func write(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}
