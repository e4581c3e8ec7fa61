/// How a source picture fills its layout rect.
public enum VideoFillMode: Sendable, Hashable, Codable {
    /// Scale to cover the rect, cropping the source centred (`TRTCVideoFillMode_Fill`, admin `RenderMode` 0).
    case fill
    /// Scale to fit inside the rect keeping the aspect, with the rest of the rect in the
    /// background colour (`TRTCVideoFillMode_Fit`, admin `RenderMode` 2).
    case fit
    /// Stretch the whole source onto the rect, distorting the aspect (admin `RenderMode` 1).
    case stretch
}
