import Foundation
import LiveRoomCluster
import LiveRoomCore
import LiveRoomProtocol
import Testing

@testable import LiveRoomServer

/// A connection relayed from another node (cluster mode): the hub decides its subscriptions
/// as always, and asks the relaying node to make them (NodeMediaFrame) instead of its own media port.
@Suite("RoomHub with a relayed connection", .timeLimit(.minutes(1)))
struct RelayedMediaHubTests {
    /// The next node frame `client` got (after those already seen), of `kind`.
    func nodeFrame(_ client: Client, _ kind: String, after seen: Int) async throws -> (NodeMediaFrame, Int) {
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline {
            let events = client.events
            if let index = events.indices.dropFirst(seen).first(where: { events[$0]["liveroomNode"] == "media" && events[$0]["body"]?["kind"]?.stringValue == kind }) {
                // The event log re-serialises the JSON (its keys sorted): the envelope's own order again.
                let text = NodeMessage.prefix + #""media","body":"# + (events[index]["body"]?.jsonText ?? "{}") + "}"
                guard case .media(let frame) = try NodeMessage.parse(text) else { throw TimedOut(description: "not a media frame: \(text)") }
                return (frame, index + 1)
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw TimedOut(description: "no \(kind) node frame in \(client.events.map(\.jsonText))")
    }

    @Test func aRelayedViewersSubscriptionIsMadeByTheRelayingNode() async throws {
        let h = try await HubHarness()
        let host = try await h.entered("host", role: .anchor)
        host.send(.publish(sdp: "offer"))
        _ = try await host.next("onPublishAnswer")
        let fan = await Client(hub: h.hub)
        await h.hub.mediaSessions.markRelayed(fan.session)
        fan.send(.enterRoom(EnterRoomParams(sdkAppId: HubHarness.appId, userId: "fan", userSig: HubHarness.sig("fan"), roomId: 0, strRoomId: "room1", role: .audience)))
        _ = try await fan.next("onEnterRoom")

        // The room's rules still apply: a subscription to nobody is refused here, no node asked.
        fan.send(.subscribe(userId: "nobody", sdp: "offer"))
        _ = try await fan.next("onError")
        #expect(!fan.events.contains { $0["liveroomNode"] != nil })

        fan.send(.subscribe(userId: "host", sdp: "the fan's offer"))
        var (ask, seen) = try await nodeFrame(fan, "subscribe", after: 0)
        #expect(ask.roomId == "room1" && ask.publisherId == "host" && ask.sdp == "the fan's offer")
        let id = try #require(ask.id)
        #expect(!h.media.calls.contains { if case .subscribe = $0 { true } else { false } }, "not on this node's media port")

        // An answer to another request, or on a connection that is not relayed, is ignored.
        await h.hub.mediaSessions.nodeFrame(NodeMessage.media(NodeMediaFrame(kind: .answer, id: id + 1, sdp: "forged")).text, from: fan.session)
        await h.hub.mediaSessions.nodeFrame(NodeMessage.media(NodeMediaFrame(kind: .answer, id: id, sdp: "forged")).text, from: host.session)
        await h.hub.mediaSessions.nodeFrame(NodeMessage.media(NodeMediaFrame(kind: .answer, id: id, sdp: "the relaying node's answer")).text, from: fan.session)
        let answer = try await fan.next("onSubscribeAnswer")
        #expect(answer["userId"] == "host" && answer["sdp"] == "the relaying node's answer")
        #expect(!host.events.contains { $0["event"] == "onSubscribeAnswer" })
        // Answered once.
        await h.hub.mediaSessions.nodeFrame(NodeMessage.media(NodeMediaFrame(kind: .answer, id: id, sdp: "again")).text, from: fan.session)

        // An ICE restart of the subscription goes there too.
        fan.send(.restartIce(userId: "host", sdp: "a restart offer"))
        let restart: NodeMediaFrame
        (restart, seen) = try await nodeFrame(fan, "restartIce", after: seen)
        #expect(restart.publisherId == "host" && restart.sdp == "a restart offer")
        await h.hub.mediaSessions.nodeFrame(NodeMessage.media(NodeMediaFrame(kind: .answer, id: restart.id, error: "no such subscription")).text, from: fan.session)
        let refused = try await fan.next("onError") { $0["requestType"] == "restartIce" }
        #expect(refused["errCode"]?.intValue == ErrorCode.badSessionDescription)

        // Unsubscribing and leaving are told to the relaying node.
        fan.send(.unsubscribe(userId: "host"))
        let unsubscribe: NodeMediaFrame
        (unsubscribe, seen) = try await nodeFrame(fan, "unsubscribe", after: seen)
        #expect(unsubscribe.publisherId == "host")
        fan.send(.exitRoom)
        _ = try await nodeFrame(fan, "close", after: seen)
        #expect(fan.events.filter { $0["event"] == "onSubscribeAnswer" }.count == 1)
    }

    @Test func nodeFramesAreRecognisedByTheirBeginningAndBounded() {
        let frame = NodeMessage.media(NodeMediaFrame(kind: .subscribe, id: 3, roomId: "r", publisherId: "p", sdp: "v=0\r\n"))
        #expect(NodeMessage.isNodeMessage(frame.text))
        #expect((try? NodeMessage.parse(frame.text)) == frame)
        #expect(!NodeMessage.isNodeMessage(#"{"cmd":"enterRoom"}"#))
        #expect((try? NodeMessage.parse(#" {"liveroomNode":"media","body":{"kind":"answer"}}"#)) == nil, "only at the very beginning")
        #expect((try? NodeMessage.parse(#"{"liveroomNode":"media","body":{"kind":"nonsense"}}"#)) == nil)
        let huge = NodeMessage.media(NodeMediaFrame(kind: .answer, id: 1, sdp: String(repeating: "a", count: NodeMediaFrame.maximumSize))).text
        #expect((try? NodeMessage.parse(huge)) == nil)
    }
}
