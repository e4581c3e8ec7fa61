import LiveRoomCore
import Testing

@testable import LiveRoomClientKit

@Suite struct ClientCommandTests {
    @Test func commandsParse() throws {
        #expect(try ClientCommand.parse("custom 2 hello world") == .request(.sendCustomCmdMsg(CustomCmdMsg(cmdID: 2, data: "hello world"))))
        #expect(try ClientCommand.parse("  switch-role anchor ") == .request(.switchRole(.anchor)))
        #expect(try ClientCommand.parse("request-mic") == .request(.requestMic))
        #expect(try ClientCommand.parse("accept-mic fan") == .request(.acceptMic(userId: "fan")))
        #expect(try ClientCommand.parse("reject-mic fan") == .request(.rejectMic(userId: "fan")))
        #expect(try ClientCommand.parse("invite-mic fan") == .request(.inviteMic(userId: "fan")))
        #expect(try ClientCommand.parse("accept-invite") == .request(.acceptInvitation))
        #expect(try ClientCommand.parse("reject-invite") == .request(.rejectInvitation))
        #expect(try ClientCommand.parse("end-mic fan") == .request(.endMic(userId: "fan")))
        #expect(try ClientCommand.parse("leave") == .leave)
        #expect(try ClientCommand.parse("") == nil)
        #expect(try ClientCommand.parse("# a comment") == nil)
    }

    @Test(arguments: ["dance", "custom", "custom x hi", "custom 1", "switch-role king", "accept-mic", "accept-mic a b", "leave now"])
    func badCommandsAreErrors(line: String) {
        #expect(throws: LiveRoomError.self) { try ClientCommand.parse(line) }
    }

    @Test func signalingURL() throws {
        #expect(try JoinOptions.signalingURL(server: "http://127.0.0.1:7880") == "ws://127.0.0.1:7880/ws")
        #expect(try JoinOptions.signalingURL(server: "https://live.example/") == "wss://live.example/ws")
        #expect(throws: LiveRoomError.self) { try JoinOptions.signalingURL(server: "127.0.0.1:7880") }
    }

    @Test func readableEvents() {
        let line = EventPrinter.readable(["event": "onRecvCustomCmdMsg", "userId": "a", "cmdID": 1, "seq": 2, "data": "hi there"])
        #expect(line == #"onRecvCustomCmdMsg cmdID=1 data="hi there" seq=2 userId=a"#)
    }
}
