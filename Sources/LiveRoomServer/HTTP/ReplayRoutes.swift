import Foundation
import HTTPTypes
import Hummingbird
import LiveRoomAuth
import LiveRoomCommerce
import LiveRoomProtocol
import LiveRoomStore
import NIOCore

/// `GET /replays/<replayId>.<webm|mkv>?sdkappid=N&identifier=USER&usersig=SIG`: a product's
/// replay, for holders of a valid UserSig of the application (any user: a viewer of the shop's
/// app has one). Range requests are answered 206, so a browser can seek. The name is checked
/// against the replay's own and the file path is made from the stored id, never from the URL.
struct ReplayRoutes: Sendable {
    let store: any CatalogueStore
    let directory: String
    let auth: AdminAuth
    /// Cluster mode: where a replay whose file another node holds is, as that node's base URL
    /// (nil when that node is not alive); the request is redirected there (307).
    var elsewhere: (@Sendable (_ replayId: String) async -> ReplayLocation)? = nil

    /// Where a replay's file is.
    enum ReplayLocation: Sendable {
        case here
        case node(baseURL: String)
        case nodeDown(nodeId: String)
    }

    func add(to router: Router<ServerRequestContext>) {
        router.get("/replays/:name") { request, context -> Response in
            let name = try context.parameters.require("name")
            let query = request.uri.queryParameters
            do throws(AdminAuth.Failure) {
                try auth.check(
                    sdkappid: query.get("sdkappid"), identifier: query.get("identifier"), usersig: query.get("usersig"),
                    now: Int64(Date().timeIntervalSince1970), anyUser: true)
            } catch {
                // Missing or wrong, the answer is the same: no valid UserSig.
                return Self.text("a valid UserSig is needed (sdkappid, identifier and usersig): \(error.message)", status: .unauthorized)
            }
            guard let id = Replay.replayId(fromFileName: name), let replay = try? await store.replay(id), replay.fileName == name else {
                return Self.text("no such replay", status: .notFound)
            }
            if let elsewhere {
                switch await elsewhere(id) {
                case .here:
                    break
                case .node(let base):
                    // The file is where it was recorded: the client asks that node, with the same query.
                    let query = request.uri.query.map { "?" + $0 } ?? ""
                    return Response(status: .temporaryRedirect, headers: [.location: base + "/replays/" + replay.fileName + query, .accessControlAllowOrigin: "*"])
                case .nodeDown(let node):
                    return Self.text("the replay's file is on node \(node), which is down", status: .serviceUnavailable)
                }
            }
            let path = (directory as NSString).appendingPathComponent(replay.fileName)
            guard let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int), size > 0 else {
                return Self.text("no such replay", status: .notFound)
            }
            var headers: HTTPFields = [
                .contentType: replay.codec == "h264" ? "video/x-matroska" : "video/webm", .acceptRanges: "bytes",
                .accessControlAllowOrigin: "*",
            ]
            switch ByteRange.parse(request.headers[.range], size: size) {
            case .unsatisfiable:
                headers[.contentRange] = "bytes */\(size)"
                return Response(status: .rangeNotSatisfiable, headers: headers)
            case .whole:
                headers[.contentLength] = String(size)
                return Response(status: .ok, headers: headers, body: try await FileIO().loadFile(path: path, context: context))
            case .part(let range):
                headers[.contentLength] = String(range.count)
                headers[.contentRange] = "bytes \(range.lowerBound)-\(range.upperBound)/\(size)"
                return Response(status: .partialContent, headers: headers, body: try await FileIO().loadFile(path: path, range: range, context: context))
            }
        }
    }

    static func text(_ message: String, status: HTTPResponse.Status) -> Response {
        Response(
            status: status, headers: [.contentType: "text/plain; charset=utf-8", .accessControlAllowOrigin: "*"],
            body: .init(byteBuffer: ByteBuffer(string: message + "\n")))
    }
}

/// A `Range` request header (RFC 9110 §14) against a file of `size` bytes. One range is served;
/// a header that is not one well-formed byte range is ignored (the whole file), as the RFC allows.
enum ByteRange: Equatable {
    case whole
    case part(ClosedRange<Int>)
    case unsatisfiable

    static func parse(_ header: String?, size: Int) -> ByteRange {
        guard let header, header.hasPrefix("bytes="), size > 0 else { return .whole }
        let spec = header.dropFirst("bytes=".count).trimmingCharacters(in: .whitespaces)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return .whole }
        let first = spec[..<dash]
        let last = spec[spec.index(after: dash)...]
        guard first.allSatisfy(\.isASCIIDigit), last.allSatisfy(\.isASCIIDigit), first.count <= 18, last.count <= 18 else { return .whole }
        switch (Int(first), Int(last)) {
        case (let start?, nil) where last.isEmpty:
            return start < size ? .part(start...(size - 1)) : .unsatisfiable
        case (let start?, let end?):
            guard start <= end else { return .whole }
            return start < size ? .part(start...min(end, size - 1)) : .unsatisfiable
        case (nil, let suffix?) where first.isEmpty:
            return suffix > 0 ? .part(max(0, size - suffix)...(size - 1)) : .unsatisfiable
        default:
            return .whole
        }
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
