import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdWebSocket
import LiveRoomAuth
import LiveRoomCluster
import LiveRoomProtocol
import LiveRoomSFU
import LiveRoomTransport
import LiveRoomWire
import NIOCore
import NIOHTTP1

/// WHIP (RFC 9725) and WHEP: `POST /whip/{room}/{user}` publishes as an anchor of the room,
/// `POST /whep/{room}/{user}` plays its first publishing anchor (or `?anchor=USER`). The
/// bearer token is the user's UserSig; a server that requires PrivateMapKeys takes one as
/// `?privateMapKey=KEY`. `DELETE` on the returned Location ends the session; `PATCH` with new
/// ICE credentials restarts ICE. In cluster mode a request about a room that lives on another
/// node is carried out there (``ClusterForwarding``).
struct WHIPRoutes: Sendable {
    let hub: RoomHub
    let auth: AdminAuth
    var forwarding: ClusterForwarding? = nil
    /// Cluster mode: where a WHEP viewer's media is made when its room lives on another node.
    var media: MediaService? = nil

    static let cors: HTTPFields = [
        .accessControlAllowOrigin: "*",
        .accessControlAllowMethods: "POST, DELETE, OPTIONS, PATCH",
        .accessControlAllowHeaders: "Authorization, Content-Type, If-Match",
        .accessControlExposeHeaders: "Location, Link, ETag, Accept-Post",
    ]

    func add(to router: Router<ServerRequestContext>) {
        for (prefix, publish) in [("whip", true), ("whep", false)] {
            router.post("/\(prefix)/:room/:user") { request, context in
                try await create(request, context, prefix: prefix, publish: publish)
            }
            router.delete("/\(prefix)/:room/:user/:resource") { request, context in
                await end(request, context)
            }
            // RFC 9725 section 4.4: new ICE credentials in a trickle-ice-sdpfrag restart ICE (the
            // answer carries ours); the same credentials with trickled candidates need nothing
            // from an ICE-lite server.
            router.patch("/\(prefix)/:room/:user/:resource") { request, context in
                try await patch(request, context, publish: publish)
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

    /// POST: a new WHIP (publish) or WHEP (play) session, its answer and its resource.
    func create(_ request: Request, _ context: ServerRequestContext, prefix: String, publish: Bool) async throws -> Response {
        // Paths come as sent: `/whep/shop%201/…` names room "shop 1"; the Location keeps the sent form.
        let rawRoom = try context.parameters.require("room")
        let rawUser = try context.parameters.require("user")
        guard let room = rawRoom.removingPercentEncoding, let user = rawUser.removingPercentEncoding else {
            return Self.text("the room and user in the path must be valid percent-encoded UTF-8", status: .badRequest)
        }
        guard request.headers[.contentType]?.lowercased().hasPrefix("application/sdp") == true else {
            return Self.text("the body must be an SDP offer (Content-Type: application/sdp)", status: .unsupportedMediaType)
        }
        guard let token = Self.bearer(request) else {
            return Self.text("missing Authorization: Bearer <UserSig>", status: .unauthorized)
        }
        let offer = String(buffer: try await request.body.collect(upTo: 256 * 1024))
        if let forwarding, !forwarding.isForwarded(request), let home = await forwarding.home(ofRoom: RoomID.string(room).key) {
            if let refusal = verify(token, of: user) { return refusal }
            if !publish, let media {
                return await playHere(request, room: (room, rawRoom), user: (user, rawUser), offer: offer, home: home, forwarding: forwarding, media: media)
            }
            return await forward(.POST, request, path: nil, body: ByteBuffer(string: offer), to: home, forwarding: forwarding)
        }
        if !publish, let forwarding, forwarding.isForwarded(request), let mediaOn = Self.mediaNode(request) {
            // The forwarding node makes the media: the seat only, and the publisher it is to play.
            do throws(MediaSessions.HTTPRefusal) {
                let (session, publisher) = try await hub.mediaSessions.enterForRemotePlayback(
                    roomId: room, userId: user, userSig: token, privateMapKey: request.uri.queryParameters.get("privateMapKey") ?? "",
                    anchor: request.uri.queryParameters.get("anchor"), offer: offer, mediaOn: mediaOn)
                let body: JSONValue = ["Session": .string(String(session)), "PublisherRoom": .string(publisher.roomId), "Publisher": .string(publisher.userId)]
                return Response(status: .created, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: body.jsonText)))
            } catch {
                return Self.text(error.message, status: .init(code: error.status))
            }
        }
        do throws(MediaSessions.HTTPRefusal) {
            let (session, answer) = try await hub.mediaSessions.enterForHTTP(
                roomId: room, userId: user, userSig: token, privateMapKey: request.uri.queryParameters.get("privateMapKey") ?? "",
                publish: publish, anchor: request.uri.queryParameters.get("anchor"), offer: offer)
            var headers = Self.cors
            headers[.contentType] = "application/sdp"
            headers[.location] = "/\(prefix)/\(rawRoom)/\(rawUser)/\(session)"
            headers[.eTag] = "\"\(session)\""
            return Response(status: .created, headers: headers, body: .init(byteBuffer: ByteBuffer(string: answer)))
        } catch {
            return Self.text(error.message, status: .init(code: error.status))
        }
    }

    /// DELETE: the session ends.
    func end(_ request: Request, _ context: ServerRequestContext) async -> Response {
        if let elsewhere = await elsewhere(request, context) {
            return await forward(.DELETE, request, path: elsewhere.path, body: ByteBuffer(), to: elsewhere.node, forwarding: forwarding!)
        }
        let session: UInt64
        switch await resource(of: request, context) {
        case .success(let found): session = found
        case .failure(let refusal): return refusal.response
        }
        await hub.mediaSessions.leaveForHTTP(session)
        return Response(status: .ok, headers: Self.cors)
    }

    /// PATCH: an ICE restart, or trickled candidates that need nothing.
    func patch(_ request: Request, _ context: ServerRequestContext, publish: Bool) async throws -> Response {
        if let elsewhere = await elsewhere(request, context) {
            let body = try await request.body.collect(upTo: 16 * 1024)
            return await forward(.PATCH, request, path: elsewhere.path, body: body, to: elsewhere.node, forwarding: forwarding!)
        }
        let session: UInt64
        switch await resource(of: request, context) {
        case .success(let found): session = found
        case .failure(let refusal): return refusal.response
        }
        guard request.headers[.contentType]?.lowercased().hasPrefix("application/trickle-ice-sdpfrag") == true else {
            return Self.text("the body must be an SDP fragment (Content-Type: application/trickle-ice-sdpfrag)", status: .unsupportedMediaType)
        }
        let body = String(buffer: try await request.body.collect(upTo: 16 * 1024))
        guard let remote = Self.iceCredentials(inFragment: body) else {
            return Self.text("the fragment needs a=ice-ufrag and a=ice-pwd", status: .badRequest)
        }
        do throws(MediaSessions.HTTPRefusal) {
            guard let answer = try await hub.mediaSessions.restartICEForHTTP(session, publishing: publish, remote: remote) else {
                return Response(status: .noContent, headers: Self.cors)
            }
            var headers = Self.cors
            headers[.contentType] = "application/trickle-ice-sdpfrag"
            headers[.eTag] = "\"\(session)-\(answer.local.ufrag)\""
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: Self.fragment(answer))))
        } catch {
            return Self.text(error.message, status: .init(code: error.status))
        }
    }

    /// A refusal of a request on a WHIP/WHEP resource, as its HTTP response.
    struct ResourceRefusal: Error {
        var response: Response
    }

    // MARK: Cluster mode

    /// A DELETE or PATCH of a resource held by another node (`<node>~<session>`): that node,
    /// alive, and the request's path naming the bare session there. Nil for a resource here.
    private func elsewhere(_ request: Request, _ context: ServerRequestContext) async -> (node: NodeRegistration, path: String)? {
        guard let forwarding, let raw = context.parameters.get("resource"), let tagged = ClusterForwarding.untag(raw),
            tagged.node != forwarding.nodeId, let node = await forwarding.liveNode(tagged.node)
        else { return nil }
        let path = request.uri.path
        guard let slash = path.lastIndex(of: "/") else { return nil }
        return (node, String(path[...slash]) + tagged.session + (request.uri.query.map { "?" + $0 } ?? ""))
    }

    /// The node and peer connection owner a forwarded WHEP request names for its media.
    static func mediaNode(_ request: Request) -> RemotePlayback.MediaNode? {
        guard let node = request.headers[HTTPField.Name(RemotePlayback.nodeHeader)!], ClusterRules.isValidNodeId(node),
            let owner = request.headers[HTTPField.Name(RemotePlayback.ownerHeader)!].flatMap(UInt64.init)
        else { return nil }
        return RemotePlayback.MediaNode(node: node, owner: owner)
    }

    /// WHEP reaching a node that is not the room's home: the home checks the request and keeps
    /// the seat (``RoomHub/enterForRemotePlayback(roomId:userId:userSig:privateMapKey:anchor:offer:mediaOn:)``);
    /// the peer connection is made here, from this node's mirror of the publisher, and the
    /// Location names this node.
    private func playHere(
        _ request: Request, room: (id: String, raw: String), user: (id: String, raw: String), offer: String, home: NodeRegistration,
        forwarding: ClusterForwarding, media: MediaService
    ) async -> Response {
        let owner = media.newRelayOwner()
        let headers = Self.forwardedHeaders(request) + [(RemotePlayback.nodeHeader, forwarding.nodeId), (RemotePlayback.ownerHeader, String(owner))]
        guard let answer = await forwarding.forward(.POST, uri: request.uri.string, body: ByteBuffer(string: offer), headers: headers, to: home) else {
            return Self.text("the room lives on node \(home.nodeId), which did not answer; try again", status: .badGateway)
        }
        guard answer.status == 201 else {
            var out = Self.cors
            out[.contentType] = answer.headers.first(name: "Content-Type") ?? "text/plain; charset=utf-8"
            return Response(status: .init(code: answer.status), headers: out, body: .init(byteBuffer: answer.body))
        }
        guard let value = try? JSONValue.parse(String(buffer: answer.body)), let session = value["Session"]?.stringValue.flatMap(UInt64.init),
            let publisherRoom = value["PublisherRoom"]?.stringValue, let publisherId = value["Publisher"]?.stringValue
        else { return Self.text("node \(home.nodeId) gave an answer this node cannot read", status: .badGateway) }
        let playback = RemotePlayback(home: home, session: session, roomKey: RoomID.string(room.id).key, userId: user.id)
        await hub.mediaSessions.startRemotePlayback(owner: owner, playback)
        // The publisher's node: the room's home, or the home of a PK anchor's room (this node's own room: no mirror).
        var publisherNode: NodeRegistration? = home
        if publisherRoom != playback.roomKey { publisherNode = await forwarding.home(ofRoom: publisherRoom) }
        do {
            let sdp: String
            if let publisherNode {
                guard let address = publisherNode.mediaAddresses.lazy.compactMap(NodeMediaRelay.address).first else {
                    throw NegotiationError("node \(publisherNode.nodeId) has no usable media address")
                }
                sdp = try await media.subscribeMirrored(owner: owner, key: SFURouter.PublisherKey(roomId: publisherRoom, userId: publisherId), offer: offer, home: address)
            } else {
                sdp = try await media.subscribe(owner: owner, roomId: publisherRoom, publisherId: publisherId, offer: offer).get()
            }
            // The home may have ended the session meanwhile.
            guard await hub.mediaSessions.remotePlayback(owner, roomKey: playback.roomKey, userId: user.id) != nil else {
                media.close(owner: owner)
                return Self.text("the session ended while it was made", status: .conflict)
            }
            var out = Self.cors
            out[.contentType] = "application/sdp"
            out[.location] = "/whep/\(room.raw)/\(user.raw)/" + ClusterForwarding.taggedResource(Substring(String(owner)), node: forwarding.nodeId)
            out[.eTag] = "\"\(owner)\""
            return Response(status: .created, headers: out, body: .init(byteBuffer: ByteBuffer(string: sdp)))
        } catch {
            await hub.mediaSessions.endRemotePlayback(owner)
            return Self.text("the offer cannot be used: \(error)", status: .badRequest)
        }
    }

    /// A refusal when `token` is not a valid UserSig of `user`: checked before a request is
    /// forwarded, so that what is not the user's never costs another node a request.
    private func verify(_ token: String?, of user: String) -> Response? {
        guard let token else { return Self.text("missing Authorization: Bearer <UserSig>", status: .unauthorized) }
        do throws(UserSigError) {
            try UserSig.verify(token, sdkAppId: auth.sdkAppId, secretKey: auth.secretKey, identifier: user, now: Int64(Date().timeIntervalSince1970))
            return nil
        } catch {
            return Self.text("\(error.code): \(error.message)", status: .unauthorized)
        }
    }

    /// Carries `request` out on `node` (with `path` in place of its own, when given) and
    /// answers with that node's answer; a new session's Location is tagged with the node.
    private func forward(
        _ method: HTTPMethod, _ request: Request, path: String?, body: ByteBuffer, to node: NodeRegistration, forwarding: ClusterForwarding
    ) async -> Response {
        if method != .POST, let refusal = verify(Self.bearer(request), of: request.uri.path.split(separator: "/").dropLast().last.flatMap { String($0).removingPercentEncoding } ?? "") {
            return refusal
        }
        guard let answer = await forwarding.forward(method, uri: path ?? request.uri.string, body: body, headers: Self.forwardedHeaders(request), to: node) else {
            return Self.text("the room lives on node \(node.nodeId), which did not answer; try again", status: .badGateway)
        }
        var out = Self.cors
        for name in ["Content-Type", "ETag", "Link", "Accept-Post"] {
            if let value = answer.headers.first(name: name) { out[HTTPField.Name(name)!] = value }
        }
        if let location = answer.headers.first(name: "Location"), let slash = location.lastIndex(of: "/") {
            out[.location] = String(location[...slash]) + ClusterForwarding.taggedResource(location[location.index(after: slash)...], node: node.nodeId)
        }
        return Response(status: .init(code: answer.status), headers: out, body: .init(byteBuffer: answer.body))
    }

    /// The headers of a request that go with it to another node.
    static func forwardedHeaders(_ request: Request) -> [(String, String)] {
        [HTTPField.Name.contentType, .authorization, .ifMatch].compactMap { name in request.headers[name].map { (name.rawName, $0) } }
    }

    /// The session a DELETE or PATCH names, after checking the user's UserSig and that the
    /// session is that user's in that room.
    private func resource(of request: Request, _ context: ServerRequestContext) async -> Result<UInt64, ResourceRefusal> {
        // A resource tagged with this node's own id is its session.
        let raw = context.parameters.get("resource").map { raw in ClusterForwarding.untag(raw).map { $0.node == forwarding?.nodeId ? $0.session : raw } ?? raw }
        guard let room = context.parameters.get("room")?.removingPercentEncoding, let user = context.parameters.get("user")?.removingPercentEncoding,
            let session = raw.flatMap(UInt64.init)
        else {
            return .failure(ResourceRefusal(response: Self.text("no such session", status: .notFound)))
        }
        guard let token = Self.bearer(request) else {
            return .failure(ResourceRefusal(response: Self.text("missing Authorization: Bearer <UserSig>", status: .unauthorized)))
        }
        do throws(UserSigError) {
            try UserSig.verify(token, sdkAppId: auth.sdkAppId, secretKey: auth.secretKey, identifier: user, now: Int64(Date().timeIntervalSince1970))
        } catch {
            return .failure(ResourceRefusal(response: Self.text("\(error.code): \(error.message)", status: .unauthorized)))
        }
        guard await hub.mediaSessions.isHTTPSession(session, roomId: room, userId: user) else {
            return .failure(ResourceRefusal(response: Self.text("no such session", status: .notFound)))
        }
        return .success(session)
    }

    /// The ICE credentials of a trickle-ice-sdpfrag (RFC 8840): its `a=ice-ufrag` and `a=ice-pwd`.
    static func iceCredentials(inFragment text: String) -> ICECredentials? {
        var ufrag: String?
        var pwd: String?
        for line in text.split(whereSeparator: \.isNewline) {
            if line.hasPrefix("a=ice-ufrag:") { ufrag = String(line.dropFirst("a=ice-ufrag:".count)) }
            if line.hasPrefix("a=ice-pwd:") { pwd = String(line.dropFirst("a=ice-pwd:".count)) }
        }
        // RFC 8839: 4-256 and 22-256 ICE characters.
        guard let ufrag, let pwd, (4...256).contains(ufrag.count), (22...256).contains(pwd.count),
            (ufrag + pwd).allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "+" || $0 == "/") })
        else { return nil }
        return ICECredentials(ufrag: ufrag, pwd: pwd)
    }

    /// The answer to an ICE restart as a trickle-ice-sdpfrag: our new credentials and candidates.
    static func fragment(_ answer: SFURouter.ICERestartAnswer) -> String {
        // The candidates belong under the first bundled m-line, named by its mid (RFC 8840).
        let first = (try? SessionDescription.parse(answer.sdp))?.media.first
        var lines = ["a=ice-lite", "a=ice-ufrag:\(answer.local.ufrag)", "a=ice-pwd:\(answer.local.pwd)"]
        lines.append("m=\(first?.kind ?? "audio") 9 \(first?.proto ?? "UDP/TLS/RTP/SAVPF") \(first?.formats.joined(separator: " ") ?? "0")")
        lines.append("a=mid:\(first?.mid ?? "0")")
        lines += answer.candidates.map { "a=candidate:\($0.attributeValue)" }
        lines.append("a=end-of-candidates")
        return lines.joined(separator: "\r\n") + "\r\n"
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
