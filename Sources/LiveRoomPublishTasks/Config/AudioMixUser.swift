/// One user of the audio mix (TRTC's `audioMixUserList` entry, the admin API's `SubscribeAudioList`).
public struct AudioMixUser: Sendable, Hashable, Codable {
    public var user: MixUser
    /// 0 (silent) to 100 (as published).
    public var volume: Int

    public init(user: MixUser, volume: Int = 100) {
        self.user = user
        self.volume = volume
    }
}
