import Foundation
import HTTPTypes
import Hummingbird
import LiveRoomAuth
import LiveRoomProtocol
import NIOCore

/// The audience's watch page, compiled into the binary (`Sources/LiveRoomServer/Web`, embedded
/// by SwiftPM as `PackageResources`): what is served, with which headers. Pure: no I/O.
struct WatchPage: Sendable {
    /// One file of the page.
    struct Asset: Sendable {
        var contentType: String
        var bytes: [UInt8]
        /// A strong validator of the bytes (FNV-1a 64), for `If-None-Match`.
        var eTag: String

        init(contentType: String, bytes: [UInt8]) {
            self.contentType = contentType
            self.bytes = bytes
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
            eTag = "\"\(String(hash, radix: 16))\""
        }
    }

    /// The files under `/watch/assets/<name>`; any other name is 404.
    static let assets: [String: Asset] = [
        "watch.css": Asset(contentType: "text/css; charset=utf-8", bytes: PackageResources.watch_css),
        "watch.js": Asset(contentType: "text/javascript; charset=utf-8", bytes: PackageResources.watch_js),
        "signaling.js": Asset(contentType: "text/javascript; charset=utf-8", bytes: PackageResources.signaling_js),
        "whep.js": Asset(contentType: "text/javascript; charset=utf-8", bytes: PackageResources.whep_js),
        "sei.js": Asset(contentType: "text/javascript; charset=utf-8", bytes: PackageResources.sei_js),
    ]

    /// Scripts, styles, fetches and the WebSocket from this origin only; no inline script or
    /// style, no plugins, no framing, no forms. (`connect-src 'self'` covers ws: and wss: of the
    /// same host in CSP Level 3, which every current browser implements.)
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; media-src 'self' blob:; connect-src 'self'; "
        + "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    /// Headers of every page response. The page's URL carries a UserSig: no Referer leaves it.
    static let securityHeaders: HTTPFields = [
        .contentSecurityPolicy: contentSecurityPolicy,
        .xContentTypeOptions: "nosniff",
        .referrerPolicy: "no-referrer",
        .xFrameOptions: "DENY",
    ]

    /// How long a browser may keep an asset before asking again (with its ETag).
    static let assetMaxAge = 300

    let sdkAppId: UInt64
    let isDevelopment: Bool
    /// The page itself, with the application's SDKAppID and the development flag filled in
    /// (both are ours, not the client's: numbers and a boolean), made once.
    let html: String

    init(sdkAppId: UInt64, isDevelopment: Bool) {
        self.sdkAppId = sdkAppId
        self.isDevelopment = isDevelopment
        html = String(decoding: PackageResources.watch_html, as: UTF8.self)
            .replacingOccurrences(of: "{{sdkAppId}}", with: String(sdkAppId))
            .replacingOccurrences(of: "{{development}}", with: isDevelopment ? "true" : "false")
    }

    /// A path parameter, percent-decoded (Hummingbird hands paths on as they came).
    static func decoded(_ component: String) -> String? {
        component.removingPercentEncoding
    }

    /// The response to `GET /watch/assets/<name>`: the asset, 304 when the client has it, 404 for any other name.
    static func assetResponse(name: String, ifNoneMatch: String?) -> (status: HTTPResponse.Status, headers: HTTPFields, body: [UInt8]) {
        var headers = securityHeaders
        guard let asset = assets[name] else {
            headers[.contentType] = "text/plain; charset=utf-8"
            headers[.cacheControl] = "no-store"
            return (.notFound, headers, Array("no such asset\n".utf8))
        }
        headers[.eTag] = asset.eTag
        headers[.cacheControl] = "public, max-age=\(assetMaxAge)"
        if let ifNoneMatch, ifNoneMatch.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == asset.eTag }) {
            return (.notModified, headers, [])
        }
        headers[.contentType] = asset.contentType
        return (.ok, headers, asset.bytes)
    }
}

/// `GET /watch/<room>`: the watch page for a string room (400 for an id TRTC would refuse);
/// `GET /watch/assets/<name>`: its scripts and style; `POST /watch/<room>/usersig`: in
/// development mode only (the server runs on the development secret of its data directory), a
/// UserSig for a random viewer id, so the page can be opened without one (400 with `?userId=`).
/// 404 otherwise.
struct WatchRoutes: Sendable {
    let hub: RoomHub
    let page: WatchPage
    /// The development secret, only when the server runs on it.
    let developmentSecret: String?

    /// How long a development UserSig is valid.
    static let developmentUserSigLifetime: Int64 = 24 * 3600

    func add(to router: Router<ServerRequestContext>) {
        router.get("/watch/assets/:name") { request, context -> Response in
            let name = try context.parameters.require("name")
            let (status, headers, body) = WatchPage.assetResponse(name: name, ifNoneMatch: request.headers[.ifNoneMatch])
            return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
        }
        router.get("/watch/:room") { _, context -> Response in
            guard let room = WatchPage.decoded(try context.parameters.require("room")), await hub.mediaSessions.isValidRoomId(room) else {
                return Self.text("the room id is not a valid strRoomId (1-64 bytes of letters, digits, space and !#$%&()+-:;<=.>?@[]^_{}|~,)", status: .badRequest)
            }
            var headers = WatchPage.securityHeaders
            headers[.contentType] = "text/html; charset=utf-8"
            // The page names the application and whether it runs in development mode: always asked again.
            headers[.cacheControl] = "no-cache"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: page.html)))
        }
        router.post("/watch/:room/usersig") { request, context -> Response in
            guard let secret = developmentSecret else {
                return Self.text("not found", status: .notFound)
            }
            guard let room = WatchPage.decoded(try context.parameters.require("room")), await hub.mediaSessions.isValidRoomId(room) else {
                return Self.text("the room id is not a valid strRoomId", status: .badRequest)
            }
            // Only for a new random viewer: a chosen id would let anyone who reaches the server
            // sign as an anchor of the room or as the administrator.
            guard request.uri.queryParameters.get("userId") == nil else {
                return Self.text("a development UserSig is only for a random viewer id: leave out userId", status: .badRequest)
            }
            let userId = "viewer-" + String(UInt32.random(in: 0...UInt32.max), radix: 16)
            let sig = UserSig.make(
                sdkAppId: page.sdkAppId, secretKey: secret, identifier: userId, time: Int64(Date().timeIntervalSince1970),
                expire: Self.developmentUserSigLifetime
            ).encoded()
            let answer: JSONValue = [
                "sdkAppId": .number(Double(page.sdkAppId)), "userId": .string(userId), "userSig": .string(sig), "strRoomId": .string(room),
                "expireSeconds": .number(Double(Self.developmentUserSigLifetime)),
            ]
            var headers = WatchPage.securityHeaders
            headers[.contentType] = "application/json; charset=utf-8"
            headers[.cacheControl] = "no-store"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: answer.jsonText)))
        }
    }

    static func text(_ message: String, status: HTTPResponse.Status) -> Response {
        var headers = WatchPage.securityHeaders
        headers[.contentType] = "text/plain; charset=utf-8"
        headers[.cacheControl] = "no-store"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: message + "\n")))
    }
}

extension HTTPField.Name {
    static let referrerPolicy = Self("Referrer-Policy")!
    static let xFrameOptions = Self("X-Frame-Options")!
}
