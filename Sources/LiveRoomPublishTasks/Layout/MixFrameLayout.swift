/// What the mixer draws and mixes at one moment: the result of ``MixLayoutEngine/compose(config:canvas:anchors:taskRoomId:excluding:)``.
public struct MixFrameLayout: Sendable, Hashable {
    public var canvas: MixSize
    /// The canvas colour, 0xRRGGBB, drawn first.
    public var backgroundColor: UInt32
    /// The canvas image drawn over the colour; empty for none.
    public var backgroundImage: String
    /// Pictures, placeholders and watermarks, bottom layer first.
    public var items: [MixDrawItem]
    /// The users whose audio is mixed, each once.
    public var audio: [AudioMixInput]

    public init(canvas: MixSize, backgroundColor: UInt32, backgroundImage: String, items: [MixDrawItem], audio: [AudioMixInput]) {
        self.canvas = canvas
        self.backgroundColor = backgroundColor
        self.backgroundImage = backgroundImage
        self.items = items
        self.audio = audio
    }

    /// Every user whose stream is an input (video or audio), each once; at most 16.
    public var inputUsers: Set<MixUser> {
        Set(items.compactMap { item -> MixUser? in
            if case .video(let user, _, _) = item.content { return user }
            return nil
        }).union(audio.map(\.user))
    }
}
