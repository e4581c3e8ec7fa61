extension DTLSTransport {
    /// Tunables of a ``DTLSTransport``.
    public struct Configuration: Sendable, Hashable {
        /// Largest datagram to send, in bytes. 1200 keeps DTLS below any path MTU that
        /// WebRTC has to work with (and inside a TURN/IPv6 envelope).
        public var mtu: Int
        /// First retransmission timeout; OpenSSL doubles it up to 60 s and gives up after
        /// 12 retransmissions. RFC 6347 recommends 1 s.
        public var initialRetransmissionTimeout: Duration
        /// SRTP profiles to offer (client) or accept (server), most preferred first.
        public var srtpProfiles: [SRTPProtectionProfile]

        /// Creates a configuration; the defaults suit WebRTC.
        public init(
            mtu: Int = 1200,
            initialRetransmissionTimeout: Duration = .seconds(1),
            srtpProfiles: [SRTPProtectionProfile] = [.aeadAES128GCM, .aes128CMHMACSHA1_80]
        ) {
            self.mtu = mtu
            self.initialRetransmissionTimeout = initialRetransmissionTimeout
            self.srtpProfiles = srtpProfiles
        }
    }
}
