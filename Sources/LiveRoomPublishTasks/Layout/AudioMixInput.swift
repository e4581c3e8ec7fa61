/// One user's audio in the mix, with its volume (0–100).
public struct AudioMixInput: Sendable, Hashable {
    public var user: MixUser
    public var volume: Int

    public init(user: MixUser, volume: Int = 100) {
        self.user = user
        self.volume = volume
    }
}
