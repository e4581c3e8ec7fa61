internal import CSRTP

/// libsrtp2's process-wide initialization.
enum SRTPLibrary {
    /// `srtp_init` is not thread safe; a static let runs it exactly once (Swift guards
    /// global and static initializers with `swift_once`).
    private static let initializationStatus: UInt32 = srtp_init().rawValue

    /// Runs `srtp_init` on first use and reports its result on every call.
    ///
    /// A second `srtp_init` in one process (another module of the same process called it
    /// first) answers `bad_param` because its debug module is already loaded; the library
    /// is initialized then, so that counts as success.
    static func ensureInitialized() throws(SRTPError) {
        let status = initializationStatus
        guard status == srtp_err_status_ok.rawValue || status == srtp_err_status_bad_param.rawValue else {
            throw SRTPError(code: SRTPError.Code(rawValue: status), operation: "srtp_init")
        }
    }
}
