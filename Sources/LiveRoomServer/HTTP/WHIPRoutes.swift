import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdWebSocket
import LiveRoomAuth
import NIOCore

/// WHIP (RFC 9725) and WHEP: `POST /whip/{room}/{user}` publishes as an anchor of the room,
/// `POST /whep/{room}/{user}` plays its first publishing anchor (or `?anchor=USER`). The
/// bearer token is the user's UserSig; a server that requires PrivateMapKeys takes one as
/// `?privateMapKey=KEY`. `DELETE` on the returned Location ends the session.
struct WHIPRoutes: Sendable {
    let hub: RoomHub
    let auth: AdminAuth

    static let cors: HTTPFields = [
        .accessControlAllowOrigin: "*",
        .accessControlAllowMethods: "POST, DELETE, OPTIONS, PATCH",
        .accessControlAllowHeaders: "Authorization, Content-Type, If-Match",
        .accessControlExposeHeaders: "Location, Link, ETag, Accept-Post",
    ]

    func add(to router: Router<RequestContext>) {
        for (prefix, publish) in [("whip", true), ("whep", false)] {
            router.post("/\(prefix)/:room/:user") { request, context -> Response in
                let room = try context.parameters.require("room")
                let user = try context.parameters.require("user")
                guard request.headers[.contentType]?.lowercased().hasPrefix("application/sdp") == true else {
                    return Self.text("the body must be an SDP offer (Content-Type: application/sdp)", status: .unsupportedMediaType)
                }
                guard let token = Self.bearer(request) else {
                    return Self.text("missing Authorization: Bearer <UserSig>", status: .unauthorized)
                }
                let offer = String(buffer: try await request.body.collect(upTo: 256 * 1024))
                do throws(RoomHub.HTTPRefusal) {
                    let (session, answer) = try await hub.enterForHTTP(
                        roomId: room, userId: user, userSig: token, privateMapKey: request.uri.queryParameters.get("privateMapKey") ?? "",
                        publish: publish, anchor: request.uri.queryParameters.get("anchor"), offer: offer)
                    var headers = Self.cors
                    headers[.contentType] = "application/sdp"
                    headers[.location] = "/\(prefix)/\(room)/\(user)/\(session)"
                    headers[.eTag] = "\"\(session)\""
                    return Response(status: .created, headers: headers, body: .init(byteBuffer: ByteBuffer(string: answer)))
                } catch {
                    return Self.text(error.message, status: .init(code: error.status))
                }
            }
            router.delete("/\(prefix)/:room/:user/:resource") { request, context -> Response in
                let room = try context.parameters.require("room")
                let user = try context.parameters.require("user")
                guard let session = UInt64(try context.parameters.require("resource")) else {
                    return Self.text("no such session", status: .notFound)
                }
                guard let token = Self.bearer(request) else {
                    return Self.text("missing Authorization: Bearer <UserSig>", status: .unauthorized)
                }
                do throws(UserSigError) {
                    try UserSig.verify(token, sdkAppId: auth.sdkAppId, secretKey: auth.secretKey, identifier: user, now: Int64(Date().timeIntervalSince1970))
                } catch {
                    return Self.text("\(error.code): \(error.message)", status: .unauthorized)
                }
                guard await hub.isHTTPSession(session, roomId: room, userId: user) else {
                    return Self.text("no such session", status: .notFound)
                }
                await hub.leaveForHTTP(session)
                return Response(status: .ok, headers: Self.cors)
            }
            router.patch("/\(prefix)/:room/:user/:resource") { _, _ -> Response in
                // ICE-lite with a complete host candidate in the answer: no trickle, no restart.
                Self.text("trickle ICE and ICE restarts are not supported", status: .methodNotAllowed)
            }
            for path in ["/\(prefix)/:room/:user", "/\(prefix)/:room/:user/:resource"] {
                router.on(RouterPath(path), method: .options) { _, _ -> Response in
                    var headers = Self.cors
                    headers[.acceptPost] = "application/sdp"
                    return Response(status: .noContent, headers: headers)
                }
            }
        }
    }

    static func bearer(_ request: Request) -> String? {
        guard let value = request.headers[.authorization], value.lowercased().hasPrefix("bearer ") else { return nil }
        let token = value.dropFirst(7).trimmingCharacters(in: .whitespaces)
        return token.isEmpty ? nil : token
    }

    static func text(_ message: String, status: HTTPResponse.Status) -> Response {
        var headers = cors
        headers[.contentType] = "text/plain; charset=utf-8"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: message + "\n")))
    }
}

extension HTTPField.Name {
    static let acceptPost = Self("Accept-Post")!
}
