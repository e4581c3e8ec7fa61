extension DTLSTransport {
    /// What the owner of a ``DTLSTransport`` must do, in order.
    public enum Output: Sendable, Hashable {
        /// Write this datagram to the peer (at most ``Configuration/mtu`` bytes, unless a
        /// single record is larger, which OpenSSL does not produce).
        case send([UInt8])
        /// The handshake completed and the peer's certificate matched the expected
        /// fingerprint: create ``SRTPSession``s from the keying material.
        case connected(SRTPKeyingMaterial)
        /// The handshake or session failed; the transport ignores all further input.
        /// Any alert for the peer precedes this as a ``send(_:)``.
        case failed(DTLSError)
        /// The peer sent close_notify; our reply precedes this as a ``send(_:)``.
        case closed
    }
}
