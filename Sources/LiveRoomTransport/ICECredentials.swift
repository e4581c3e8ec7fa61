/// An ICE username fragment and password (RFC 8445 §5.3): ufrag of 8 and pwd of 24 ice-chars,
/// more than the 4 and 22 the RFC asks for.
public struct ICECredentials: Sendable, Hashable {
    public var ufrag: String
    public var pwd: String

    public init(ufrag: String, pwd: String) {
        self.ufrag = ufrag
        self.pwd = pwd
    }

    private static let iceChars = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")

    /// Fresh random credentials.
    public static func random<G: RandomNumberGenerator>(using generator: inout G) -> ICECredentials {
        func text(_ count: Int) -> String {
            String((0..<count).map { _ in iceChars.randomElement(using: &generator)! })
        }
        return ICECredentials(ufrag: text(8), pwd: text(24))
    }

    public static func random() -> ICECredentials {
        var g = SystemRandomNumberGenerator()
        return random(using: &g)
    }
}
