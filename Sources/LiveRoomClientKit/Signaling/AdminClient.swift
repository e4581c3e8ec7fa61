import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LiveRoomAuth
import LiveRoomProtocol

/// Calls the admin API as `administrator`, signing a fresh UserSig for each call.
public struct AdminClient: Sendable {
    public var server: String
    public var sdkAppId: UInt64
    public var secretKey: String

    public init(server: String, sdkAppId: UInt64, secretKey: String) {
        self.server = server
        self.sdkAppId = sdkAppId
        self.secretKey = secretKey
    }

    /// The URL for an action: `DismissRoomByStrRoomId` → `/v1/DismissRoomByStrRoomId`,
    /// a path with a slash (`v4/group_open_http_svc/send_group_msg`) is taken as it is.
    public func url(for action: String, now: Int64) -> URL? {
        var base = server
        while base.hasSuffix("/") { base.removeLast() }
        let path = action.contains("/") ? (action.hasPrefix("/") ? action : "/" + action) : "/v1/" + action
        let sig = UserSig.make(sdkAppId: sdkAppId, secretKey: secretKey, identifier: UserSig.administrator, time: now, expire: 300).encoded()
        var components = URLComponents(string: base + path)
        components?.queryItems = [
            URLQueryItem(name: "sdkappid", value: String(sdkAppId)),
            URLQueryItem(name: "identifier", value: UserSig.administrator),
            URLQueryItem(name: "usersig", value: sig),
            URLQueryItem(name: "random", value: String(UInt32.random(in: 0...UInt32.max))),
            URLQueryItem(name: "contenttype", value: "json"),
        ]
        return components?.url
    }

    /// POSTs `body` and returns the HTTP status and the response text.
    public func call(_ action: String, body: String) async throws -> (status: Int, body: String) {
        guard let url = url(for: action, now: Int64(Date().timeIntervalSince1970)) else {
            throw LiveRoomError(ErrorCode.invalidField, "cannot make a URL from server \"\(server)\" and action \"\(action)\"")
        }
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(body.utf8)
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }
}
