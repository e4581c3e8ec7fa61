import Testing
@testable import LiveRoomWire

@Suite("IP address text")
struct IPAddressTests {
    @Test func parsesAndFormats() {
        #expect(IPAddress("192.0.2.1") == .v4(0xC000_0201))
        #expect(IPAddress("::1")?.description == "::1")
        #expect(IPAddress("::")?.description == "::")
        #expect(IPAddress("2001:0db8:0000:0000:0000:0000:0000:0001")?.description == "2001:db8::1")
        #expect(IPAddress("2001:db8:0:1:0:0:0:1")?.description == "2001:db8:0:1::1")
        #expect(IPAddress("::ffff:192.0.2.1") == .v6(high: 0, low: 0x0000_FFFF_C000_0201))
        #expect(IPAddress(bytes: IPAddress("fe80::1:2")!.bytes) == IPAddress("fe80::1:2"))
        #expect(TransportAddress(address: IPAddress("2001:db8::1")!, port: 443).description == "[2001:db8::1]:443")
    }

    @Test func rejectsGarbage() {
        for text in ["", "1.2.3", "1.2.3.4.5", "256.1.1.1", "1.2.3.x", "1:2:3:4:5:6:7:8:9", "1::2::3", ":::", "12345::", "g::1", "1.2.3.4:5", "::1.2.3"] {
            #expect(IPAddress(text) == nil, "\(text)")
        }
        #expect(IPAddress(bytes: [1, 2, 3]) == nil)
    }
}
