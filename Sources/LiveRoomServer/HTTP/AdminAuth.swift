import LiveRoomAuth
import LiveRoomProtocol

/// Checks the credentials an admin call carries in its query string
/// (`sdkappid`, `identifier=administrator`, `usersig`), or with `anyUser` those of any user
/// of the application (a replay's viewer).
struct AdminAuth: Sendable {
    var sdkAppId: UInt64
    var secretKey: String

    enum Failure: Error, Equatable {
        /// 401: a credential is missing.
        case missing(String)
        /// 403: credentials present but wrong.
        case refused(code: Int, message: String)

        var message: String {
            switch self {
            case .missing(let m): m
            case .refused(_, let m): m
            }
        }
    }

    func check(sdkappid: String?, identifier: String?, usersig: String?, now: Int64, anyUser: Bool = false) throws(Failure) {
        guard let sdkappid, !sdkappid.isEmpty else { throw .missing("missing query parameter sdkappid") }
        guard let identifier, !identifier.isEmpty else { throw .missing("missing query parameter identifier") }
        guard let usersig, !usersig.isEmpty else { throw .missing("missing query parameter usersig") }
        guard let appId = UInt64(sdkappid), appId == sdkAppId else {
            throw .refused(code: ErrorCode.invalidSdkAppId, message: "unknown sdkappid \(sdkappid)")
        }
        guard anyUser || identifier == UserSig.administrator else {
            throw .refused(code: ErrorCode.userSigCheckFailed, message: "identifier must be \"administrator\", not \(identifier.quoted)")
        }
        do {
            try UserSig.verify(usersig, sdkAppId: sdkAppId, secretKey: secretKey, identifier: identifier, now: now)
        } catch {
            throw .refused(code: error.code, message: error.message)
        }
    }
}
