import LiveRoomCluster
import LiveRoomCore
import LiveRoomProtocol
import Testing

@testable import LiveRoomServer

/// The PK messages between nodes (`POST /v1/cluster/pk`): every kind round trips, and hostile
/// bodies are refused with the PK parameter code, never taken in part.
@Suite struct PKPeerMessageTests {
    static let hostA = PKEnd(roomId: "pkA", userId: "hostA")
    static let hostB = PKEnd(roomId: "*42", userId: "hostB")

    static var messages: [PKPeerMessage] {
        var battle = PKPeerMessage(kind: .battle, node: "n1", caller: hostA, callee: hostB)
        battle.event = ("onPKBattleScore", ["battleId": "pk-1", "remainingSec": 3])
        return [
            PKPeerMessage(kind: .link, node: "n1", caller: hostA, callee: hostB, state: AnchorState(publishing: PublishState(audio: true, video: false)), since: 1_700_000_000_123),
            PKPeerMessage(kind: .state, node: "node-7.a_b", caller: hostA, state: AnchorState(publishing: nil, audioMuted: true, videoMuted: true)),
            PKPeerMessage(kind: .unlink, node: "n2", caller: hostA, callee: hostB),
            battle,
        ]
    }

    @Test func everyKindRoundTrips() throws {
        for message in Self.messages {
            #expect(try PKPeerMessage.parse(message.json.jsonText) == message, "\(message.json.jsonText)")
        }
        let state = AnchorState(publishing: PublishState(audio: false, video: true), videoMuted: true)
        #expect(try PKPeerMessage.parseAnswer(PKPeerMessage.answer(.success(state)).jsonText)?.get() == state)
        let refused = PKPeerMessage.parseAnswer(PKPeerMessage.answer(.failure(LiveRoomError(ErrorCode.pkUserNotFound, "no"))).jsonText)
        guard case .failure(let error)? = refused else {
            Issue.record("\(String(describing: refused))")
            return
        }
        #expect(error.code == ErrorCode.pkUserNotFound && error.message == "no")
        #expect(PKPeerMessage.parseAnswer("<html>") == nil && PKPeerMessage.parseAnswer(#"{"ErrorCode":0}"#) == nil)
    }

    @Test func hostileBodiesAreRefusedWithTheParameterCode() {
        let link = Self.messages[0].json.jsonText
        let bad = [
            "", "[]", "{", #"{"Kind":"merge"}"#, link.replacingOccurrences(of: #""Node":"n1""#, with: #""Node":"n 1""#),
            link.replacingOccurrences(of: "hostA", with: String(repeating: "u", count: 33)),
            link.replacingOccurrences(of: "pkA", with: String(repeating: "r", count: 66)),
            link.replacingOccurrences(of: "hostA", with: "host\\u0000A"), link.replacingOccurrences(of: "hostA", with: "host\\nA"),
            link.replacingOccurrences(of: #""AudioMuted":false"#, with: #""AudioMuted":"no""#),
            link.replacingOccurrences(of: "1700000000123", with: "-1"), link.replacingOccurrences(of: "1700000000123", with: "1.5"),
            String(repeating: " ", count: PKPeerMessage.maxBodyBytes) + link,
            #"{"Kind":"battle","Node":"n1","Caller":{"RoomKey":"a","UserId":"b"},"Callee":{"RoomKey":"c","UserId":"d"},"Event":{"Name":"onEnterRoom","Fields":{}}}"#,
        ]
        for body in bad {
            #expect(throws: LiveRoomError.self, "\(body.prefix(120))") { try PKPeerMessage.parse(body) }
            do {
                _ = try PKPeerMessage.parse(body)
            } catch {
                #expect(error.code == ErrorCode.pkInvalidParameter)
            }
        }
    }

    /// Random byte changes to valid bodies: each parses to a whole message or is refused.
    @Test func mutatedBodiesParseWholeOrNotAtAll() {
        var generator = SystemRandomNumberGenerator()
        for message in Self.messages {
            let bytes = Array(message.json.jsonText.utf8)
            for _ in 0..<500 {
                var mutated = bytes
                for _ in 0..<Int.random(in: 1...4, using: &generator) {
                    mutated[Int.random(in: 0..<mutated.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
                }
                guard let parsed = try? PKPeerMessage.parse(String(decoding: mutated, as: UTF8.self)) else { continue }
                #expect(ClusterRules.isValidNodeId(parsed.node) && !parsed.caller.roomId.isEmpty && !parsed.caller.userId.isEmpty)
                #expect(parsed.kind == .state || parsed.callee != nil)
            }
        }
    }
}
