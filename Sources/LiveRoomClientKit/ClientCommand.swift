import Foundation
import LiveRoomCore

/// One line a user types on `liveroom join`'s standard input.
public enum ClientCommand: Sendable, Hashable {
    /// A signaling request to send.
    case request(SignalingRequest)
    /// Leave the room and end the session.
    case leave

    /// The commands and their arguments, for help and error messages.
    public static let usage = """
        custom <cmdID> <text>        send a custom message (cmdID 1-10) to the room
        switch-role anchor|audience  switch role (to anchor needs an accepted mic request or invitation)
        request-mic                  ask the anchors to bring you on mic
        accept-mic <user>            accept a user's mic request (anchor)
        reject-mic <user>            reject a user's mic request (anchor)
        invite-mic <user>            invite an audience member on mic (anchor)
        accept-invite                accept a mic invitation
        reject-invite                reject a mic invitation
        end-mic <user>               send a co-host back to the audience (anchor)
        mute-video on|off            stop (on) or resume (off) sending your video
        mute-audio on|off            stop (on) or resume (off) sending your audio
        leave                        exit the room and end the session
        """

    /// Parses one line. Blank lines and `#` comments give nil.
    public static func parse(_ line: String) throws(LiveRoomError) -> ClientCommand? {
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        if trimmed.isEmpty || trimmed.hasPrefix("#") { return nil }
        let (word, rest) = split(trimmed)
        func noArgument() throws(LiveRoomError) {
            guard rest.isEmpty else { throw LiveRoomError(ErrorCode.invalidField, "\(word) takes no argument") }
        }
        func user() throws(LiveRoomError) -> String {
            let (user, extra) = split(rest)
            guard !user.isEmpty, extra.isEmpty else {
                throw LiveRoomError(ErrorCode.missingField, "usage: \(word) <user>")
            }
            return user
        }
        func onOff() throws(LiveRoomError) -> Bool {
            switch rest {
            case "on": return true
            case "off": return false
            default: throw LiveRoomError(ErrorCode.invalidField, "usage: \(word) on|off")
            }
        }
        switch word {
        case "custom":
            let (idText, text) = split(rest)
            guard let cmdID = Int(idText), !text.isEmpty else {
                throw LiveRoomError(ErrorCode.missingField, "usage: custom <cmdID> <text>")
            }
            return .request(.sendCustomCmdMsg(CustomCmdMsg(cmdID: cmdID, data: text)))
        case "switch-role":
            guard let role = Role(rawValue: rest) else {
                throw LiveRoomError(ErrorCode.invalidField, "usage: switch-role anchor|audience")
            }
            return .request(.switchRole(role))
        case "request-mic":
            try noArgument()
            return .request(.requestMic)
        case "accept-mic": return .request(.acceptMic(userId: try user()))
        case "reject-mic": return .request(.rejectMic(userId: try user()))
        case "invite-mic": return .request(.inviteMic(userId: try user()))
        case "end-mic": return .request(.endMic(userId: try user()))
        case "accept-invite":
            try noArgument()
            return .request(.acceptInvitation)
        case "reject-invite":
            try noArgument()
            return .request(.rejectInvitation)
        case "mute-video": return .request(.muteLocalVideo(try onOff()))
        case "mute-audio": return .request(.muteLocalAudio(try onOff()))
        case "leave":
            try noArgument()
            return .leave
        default:
            throw LiveRoomError(ErrorCode.unknownRequest, "unknown command \"\(word)\"; commands:\n\(usage)")
        }
    }

    /// The first word and the rest, trimmed.
    private static func split(_ text: String) -> (String, String) {
        guard let space = text.firstIndex(where: { $0 == " " || $0 == "\t" }) else { return (text, "") }
        return (String(text[..<space]), text[space...].trimmingCharacters(in: .whitespaces))
    }
}
