import LiveRoomCluster
import LiveRoomCore
import LiveRoomProtocol
import LiveRoomPublishTasks
import Testing

@testable import LiveRoomServer

/// The PK messages between nodes (``NodeMessage/pk(_:)``): every kind round trips, and hostile
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
            PKPeerMessage(kind: .request, node: "n1", caller: hostA, callee: hostB),
            PKPeerMessage(kind: .answer, node: "n2", caller: hostA, callee: hostB),
            PKPeerMessage(kind: .answer, node: "n2", caller: hostA, callee: hostB, error: LiveRoomError(ErrorCode.pkRejected, "\"hostB\" rejected the PK request")),
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
        // A request's answer carries no state.
        #expect((try? PKPeerMessage.parseAcknowledgement(PKPeerMessage.acknowledgement(.success(())).jsonText)?.get()) != nil)
        guard case .failure(let notShown)? = PKPeerMessage.parseAcknowledgement(PKPeerMessage.acknowledgement(.failure(LiveRoomError(-3, "x"))).jsonText) else {
            Issue.record("a refused request read as shown")
            return
        }
        #expect(notShown == LiveRoomError(-3, "x"))
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
            #"{"Kind":"request","Node":"n1","Caller":{"RoomKey":"a","UserId":"b"}}"#,
            #"{"Kind":"answer","Node":"n1","Caller":{"RoomKey":"a","UserId":"b"},"Callee":{"RoomKey":"c","UserId":"d"},"Error":{"Code":0,"Message":""}}"#,
            #"{"Kind":"answer","Node":"n1","Caller":{"RoomKey":"a","UserId":"b"},"Callee":{"RoomKey":"c","UserId":"d"},"Error":{"Code":-1}}"#,
            #"{"Kind":"answer","Node":"n1","Caller":{"RoomKey":"a","UserId":"b"},"Callee":{"RoomKey":"c","UserId":"d"},"Error":{"Code":-1,"Message":""#
                + String(repeating: "m", count: 513) + #""}}"#,
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

/// The task messages between a task's home and the node running its runner: a whole config
/// round trips, and bodies out of bounds are not messages.
@Suite struct TaskHostMessageTests {
    static func config() throws -> PublishTaskConfig {
        let target = try JSONValue.parse(#"{"mode":"mixStreamToCdn","cdnUrlList":[{"rtmpUrl":"rtmp://cdn.example/live/a"},{"rtmpUrl":"rtmp://cdn.example/live/b"}]}"#)
        let encoder = try JSONValue.parse(#"{"videoEncodedWidth":640,"videoEncodedHeight":360,"videoEncodedFPS":15,"videoEncodedGOP":2,"videoEncodedKbps":800,"audioEncodedSampleRate":48000,"audioEncodedChannelNum":2,"audioEncodedKbps":64}"#)
        let mixing = try JSONValue.parse(
            #"{"backgroundColor":65280,"videoLayoutList":[{"fixedVideoUser":{"userId":"red","strRoomId":"A"},"rect":{"left":0,"top":0,"right":320,"bottom":360},"zOrder":1,"fillMode":1},"#
                + #"{"rect":{"left":320,"top":0,"right":640,"bottom":360},"zOrder":2,"backgroundColor":255}],"#
                + #""audioMixUserList":[{"userId":"red","strRoomId":"A"}],"watermarkList":[{"watermarkUrl":"logo.png","rect":{"left":0,"top":0,"right":64,"bottom":64},"zOrder":3}]}"#)
        var config = try PublishTaskConfig.parseClient(target: target, encoderParam: encoder, mixingConfig: mixing, caller: MixUser(userId: "red", roomId: "A"))
        config.idleTimeout = .seconds(30)
        return config
    }

    @Test func aStartWithAWholeConfigAndAnEventRoundTrip() throws {
        let config = try Self.config()
        var start = TaskHostMessage(kind: .start, node: "n1", taskId: "n1~abc-1", roomId: "A", config: config)
        start.anchors = [MixAnchor(user: MixUser(userId: "red", roomId: "A"), hasVideo: true, hasAudio: true)]
        start.inputs = [.init(roomKey: "A", userId: "red", node: "n1", media: "127.0.0.1:7882")]
        let parsed = try #require(TaskHostMessage.parse(start.text))
        #expect(parsed == start)
        #expect(parsed.config == config)
        let event = TaskHostMessage.event(.imageUnavailable(url: "logo.png", error: LiveRoomError(ErrorCode.imageUnavailable, "gone")), taskId: "n1~abc-1", from: "n2")
        #expect(TaskHostMessage.parse(event.text)?.runnerEvent == .imageUnavailable(url: "logo.png", error: LiveRoomError(ErrorCode.imageUnavailable, "gone")))
        #expect(TaskHostMessage.parse(TaskHostMessage.event(.rtmpFailed(url: "rtmp://x/y", message: "refused"), taskId: "t", from: "n2").text)?.runnerEvent
            == .rtmpFailed(url: "rtmp://x/y", message: "refused"))
        // What a hosted relay encodes reaches its home, which counts it against its budget.
        #expect(TaskHostMessage.parse(TaskHostMessage.event(.encoding(pixelsPerSecond: 720 * 1280 * 30), taskId: "t", from: "n2").text)?.runnerEvent
            == .encoding(pixelsPerSecond: 720 * 1280 * 30))
        var negative = TaskHostMessage.event(.encoding(pixelsPerSecond: 1), taskId: "t", from: "n2")
        negative.code = -5
        #expect(negative.runnerEvent == .encoding(pixelsPerSecond: 0))
    }

    @Test func bodiesOutOfBoundsAreNotMessages() {
        for body in [
            "", "{", #"{"kind":"start"}"#, #"{"kind":"launch","node":"n1","taskId":"t"}"#, #"{"kind":"stop","node":"n 1","taskId":"t"}"#,
            #"{"kind":"stop","node":"n1","taskId":""}"#, #"{"kind":"stop","node":"n1","taskId":"\#(String(repeating: "t", count: 129))"}"#,
            String(repeating: " ", count: TaskHostMessage.maxBodyBytes) + #"{"kind":"stop","node":"n1","taskId":"t"}"#,
        ] {
            #expect(TaskHostMessage.parse(body) == nil, "\(body.prefix(80))")
        }
        #expect(TaskHostMessage.parse(#"{"kind":"stop","node":"n1","taskId":"t"}"#) != nil)
        #expect(TaskHostMessage(kind: .event, node: "n2", taskId: "t", url: "u", event: "rtmpExploded").runnerEvent == nil)
    }
}

/// Everything one node tells another, in its one envelope: every kind round trips, and an
/// envelope that is not exactly one is refused with a code, its body never read.
@Suite struct NodeMessageTests {
    static func messages() throws -> [NodeMessage] {
        PKPeerMessageTests.messages.map(NodeMessage.pk) + [
            .task(TaskHostMessage(kind: .start, node: "n1", taskId: "n1~abc-1", roomId: "A", config: try TaskHostMessageTests.config())),
            .task(TaskHostMessage(kind: .stop, node: "n1", taskId: "n1~abc-1")),
            .playback(.close(owner: UInt64.max, from: "n1")), .playback(.ended(session: 7, from: "n2")),
            .media(NodeMediaFrame(kind: .subscribe, id: 3, roomId: "r", publisherId: "p", sdp: "v=0\r\n", mediaHome: "10.0.0.2:7882")),
            .media(NodeMediaFrame(kind: .answer, id: 3, error: "no \"such\" subscription")),
            .media(NodeMediaFrame(kind: .close)),
        ]
    }

    @Test func everyKindRoundTrips() throws {
        for message in try Self.messages() {
            #expect(NodeMessage.isNodeMessage(message.text))
            #expect(try NodeMessage.parse(message.text) == message, "\(message.text.prefix(200))")
        }
    }

    @Test func envelopesThatAreNotExactlyOneAreRefused() throws {
        let stop = NodeMessage.task(TaskHostMessage(kind: .stop, node: "n1", taskId: "t")).text
        let body = #"{"kind":"stop","node":"n1","taskId":"t"}"#
        let bad = [
            "", body, "{}", #"{"liveroomNode":"task"}"#, #"{"liveroomNode":"task","body":"#, #"{"liveroomNode":"task","body":\#(body)"#,
            #"{"liveroomNode": "task","body":\#(body)}"#, #"{"liveroomNode":"task" ,"body":\#(body)}"#, #"{"liveroomNode":"tasks","body":\#(body)}"#,
            #"{"liveroomNode":"task","body":\#(body)}}"#, #"{"liveroomNode":"task","body":\#(body),"x":1}"#, #"{"liveroomNode":"pk","body":\#(body)}"#,
            #"{"liveroomNode":"media","body":\#(body)}"#, #"{"liveroomNode":"playback","body":\#(body)}"#, #"{"liveroomNode":"","body":{}}"#,
            #"{"liveroomNode":"task"#, String(stop.dropLast()) + String(repeating: " ", count: NodeMessage.maximumSize) + "}",
        ]
        for text in bad {
            #expect(throws: LiveRoomError.self, "\(text.prefix(120))") { try NodeMessage.parse(text) }
        }
        #expect(try NodeMessage.parse(stop) == .task(TaskHostMessage(kind: .stop, node: "n1", taskId: "t")))
    }

    /// Random byte changes to valid messages: each parses to a whole message or is refused.
    @Test func mutatedMessagesParseWholeOrNotAtAll() throws {
        var generator = SystemRandomNumberGenerator()
        for message in try Self.messages() {
            let bytes = Array(message.text.utf8)
            for _ in 0..<300 {
                var mutated = bytes
                for _ in 0..<Int.random(in: 1...3, using: &generator) {
                    mutated[Int.random(in: 0..<mutated.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
                }
                guard let parsed = try? NodeMessage.parse(String(decoding: mutated, as: UTF8.self)) else { continue }
                #expect(try NodeMessage.parse(parsed.text) == parsed)
            }
        }
    }
}
