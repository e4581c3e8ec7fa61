import LiveRoomProtocol
import Testing

@testable import LiveRoomPublishTasks

@Suite struct EgressPolicyTests {
    func allowed(_ policy: EgressPolicy, _ address: String) -> Bool {
        policy.allows(address: IPRange.parse(address)!)
    }

    @Test func internalAndSpecialAddressesAreRefusedByDefault() {
        let policy = EgressPolicy()
        for address in [
            "127.0.0.1", "127.9.9.9", "10.0.0.1", "172.16.5.4", "172.31.255.255", "192.168.1.1", "100.64.0.1", "169.254.169.254", "0.0.0.0",
            "224.0.0.1", "255.255.255.255", "192.0.2.1", "198.18.0.1", "::1", "::", "fe80::1", "fd12:3456::1", "ff02::1", "2001:db8::1",
            "::ffff:127.0.0.1", "::ffff:10.1.2.3", "::127.0.0.1", "[::1]",
        ] {
            #expect(!allowed(policy, address), "\(address) must be refused")
        }
        for address in ["8.8.8.8", "1.1.1.1", "172.32.0.1", "100.128.0.1", "2606:4700:4700::1111", "::ffff:8.8.8.8"] {
            #expect(allowed(policy, address), "\(address) is on the internet")
        }
    }

    @Test func theOperatorAllowsRangesAddressesAndHosts() throws {
        let policy = try EgressPolicy(allow: ["127.0.0.1", "10.20.0.0/16", "fd00::/8", "rtmp.internal.example", " "])
        #expect(allowed(policy, "127.0.0.1") && !allowed(policy, "127.0.0.2"))
        #expect(allowed(policy, "10.20.3.4") && !allowed(policy, "10.21.0.1"))
        #expect(allowed(policy, "fd12::1"))
        #expect(policy.allows(host: "RTMP.internal.example", resolved: [IPRange.parse("10.9.9.9")!]))
        #expect(!policy.allows(host: "other.example", resolved: [IPRange.parse("10.9.9.9")!]))
        #expect(!policy.allows(host: "mixed.example", resolved: [IPRange.parse("8.8.8.8")!, IPRange.parse("127.0.0.2")!]), "every address must pass")
        #expect(!policy.allows(host: "nowhere.example", resolved: []), "a name that does not resolve is refused")
        #expect(throws: LiveRoomError.self) { try EgressPolicy(allow: ["10.0.0.0/33"]) }
        #expect(throws: LiveRoomError.self) { try EgressPolicy(allow: ["http://x"]) }
    }

    @Test func destinationURLsKeepEverythingButTheHost() throws {
        let url = try #require(DestinationURL("rtmps://user:pw@cdn.example.com:443/live/app2/stream?txSecret=a/b"))
        #expect(url.scheme == "rtmps" && url.host == "cdn.example.com" && url.port == "443" && url.userInfo == "user:pw@")
        #expect(url.replacingHost(with: "203.0.113.9") == "rtmps://user:pw@203.0.113.9:443/live/app2/stream?txSecret=a/b")
        #expect(url.tcURL == "rtmps://cdn.example.com:443/live/app2", "RTMP's app is the path without the stream name")
        let v6 = try #require(DestinationURL("rtmp://[::1]:1935/live/x"))
        #expect(v6.host == "::1" && v6.port == "1935" && v6.tcURL == "rtmp://[::1]:1935/live")
        #expect(DestinationURL("/dev/null") == nil)
    }

    @Test func literalCdnAddressesAreRefusedWhenTheTaskStarts() throws {
        var book = TaskBook()
        for url in ["rtmp://127.0.0.1:1935/live/a", "rtmp://10.0.0.1/live/a", "rtmp://[::1]/live/a", "rtmps://169.254.169.254/live/a"] {
            expectError(ErrorCode.egressRefused, "egress policy") { _ = try book.admin(mixConfig(urls: [url])) }
        }
        _ = try book.admin(mixConfig(urls: ["rtmp://203.0.114.1/live/a"]))
        var allowing = TaskBook(egress: try EgressPolicy(allow: ["127.0.0.1"]))
        _ = try allowing.admin(mixConfig(urls: ["rtmp://127.0.0.1:1935/live/a"]))
    }
}
