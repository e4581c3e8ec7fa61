import Testing

@testable import LiveRoomServer

/// The pure parts of forwarding a request to a room's home node: the resource ids of WHIP/WHEP
/// sessions made on another node.
@Suite struct ClusterForwardingTests {
    @Test func aTaggedResourceNamesItsNodeAndSession() {
        #expect(ClusterForwarding.taggedResource("42", node: "n1") == "n1~42")
        let tagged = ClusterForwarding.untag("node-0a1b.2_c~18446744073709551615")
        #expect(tagged?.node == "node-0a1b.2_c" && tagged?.session == "18446744073709551615")
        #expect(ClusterForwarding.untag("42") == nil, "a plain session")
    }

    @Test func hostileResourcesAreNotTagged() {
        let long = String(repeating: "n", count: 65)
        for resource in ["~42", "n1~", "n1~4a", "n1~42~1", "n 1~42", "n/1~42", "\(long)~1", "n1~-1", "n1~+1", "~", "n1~\u{0663}"] {
            #expect(ClusterForwarding.untag(resource) == nil, "\(resource)")
        }
    }
}
