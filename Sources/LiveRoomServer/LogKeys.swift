/// Metadata keys for structured logs, all with one prefix.
enum LogKey {
    static let session = "liveroom.session"
    static let room = "liveroom.room"
    static let user = "liveroom.user"
    static let request = "liveroom.request"
    static let action = "liveroom.action"
    static let error = "liveroom.error"
    static let address = "liveroom.address"
    static let task = "liveroom.task"
    static let mode = "liveroom.mode"
    static let url = "liveroom.url"
    static let state = "liveroom.state"
    static let reason = "liveroom.reason"
}
