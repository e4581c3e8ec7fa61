internal import CSRTP

/// libsrtp2's process-wide initialization.
enum SRTPLibrary {
    /// `srtp_init` is not thread safe; a static let runs it exactly once (Swift guards
    /// global and static initializers with `swift_once`).
    private static let initializationStatus: UInt32 = srtp_init().rawValue

    /// Runs `srtp_init` on first use and reports its result on every call.
    static func ensureInitialized() throws(SRTPError) {
        let status = initializationStatus
        guard status == srtp_err_status_ok.rawValue else {
            throw SRTPError(code: SRTPError.Code(rawValue: status), operation: "srtp_init")
        }
    }
}
