import Foundation
import LiveRoomCore

/// Prints events: one JSON object a line (`--json`), or readable lines for a person.
public struct EventPrinter: Sendable {
    public var json: Bool

    public init(json: Bool) {
        self.json = json
    }

    /// Prints an event received from the server (a JSON object with `"event"`).
    public func print(_ event: JSONValue) {
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
        let fields = object.filter { $0.key != "event" }.sorted { $0.key < $1.key }.map { key, value in
            var text = value.stringValue.map { $0.contains(" ") || $0.isEmpty ? JSONValue.string($0).jsonText : $0 } ?? value.jsonText
            if name == "onCdnStreamStateChanged", key == "status", let status = ServerEvent.cdnStreamStatusName(value.intValue ?? -1) {
                text += "(\(status))"
            }
            return "\(key)=\(text)"
        }
        return ([name] + fields).joined(separator: " ")
    }

    private func write(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}
