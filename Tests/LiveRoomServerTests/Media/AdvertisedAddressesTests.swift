import LiveRoomWire
import Testing

@testable import LiveRoomServer

/// Which addresses the server's ICE candidates name.
@Suite struct AdvertisedAddressesTests {
    func interface(_ name: String, _ address: String) -> AdvertisedAddresses.Interface {
        AdvertisedAddresses.Interface(name: name, address: IPAddress(address)!)
    }

    var machine: [AdvertisedAddresses.Interface] {
        [interface("lo", "127.0.0.1"), interface("eth1", "10.0.0.5"), interface("eth0", "192.0.2.7"), interface("eth0", "2001:db8::7"),
         interface("eth0", "fe80::1"), interface("docker0", "169.254.3.3")]
    }

    @Test func announcedAddressesWinOverEverything() {
        #expect(AdvertisedAddresses.choose(bindHost: "0.0.0.0", announced: ["203.0.113.9", "203.0.113.9", "2001:db8::9"], interfaces: machine)
            == ["203.0.113.9", "2001:db8::9"])
    }

    @Test func aSingleBindAddressIsItself() {
        #expect(AdvertisedAddresses.choose(bindHost: "127.0.0.1", announced: [], interfaces: machine) == ["127.0.0.1"])
        #expect(AdvertisedAddresses.choose(bindHost: "10.0.0.5", announced: [], interfaces: machine) == ["10.0.0.5"])
    }

    @Test func boundToEveryInterfaceItNamesEachRoutableOne() {
        #expect(AdvertisedAddresses.choose(bindHost: "0.0.0.0", announced: [], interfaces: machine) == ["192.0.2.7", "10.0.0.5"])
        #expect(AdvertisedAddresses.choose(bindHost: "::", announced: [], interfaces: machine) == ["192.0.2.7", "10.0.0.5", "2001:db8::7"])
    }

    @Test func loopbackOnlyWhenNothingElseExists() {
        #expect(AdvertisedAddresses.choose(bindHost: "0.0.0.0", announced: [], interfaces: [interface("lo", "127.0.0.1")]) == ["127.0.0.1"])
        #expect(AdvertisedAddresses.choose(bindHost: "::", announced: [], interfaces: []) == ["::1"])
    }

    @Test func thisMachinesInterfacesAreRead() {
        #expect(AdvertisedAddresses.interfaces().contains { $0.address == IPAddress("127.0.0.1") })
    }
}
