import ArgumentParser
import Foundation
import LiveRoomAuth
import LiveRoomClientKit
import LiveRoomProtocol
import LiveRoomWire
import Logging

@main
struct LiveRoomCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "liveroom",
        abstract: "The LiveRoom command-line client.",
        subcommands: [UserSigCommand.self, JoinCommand.self, PlayCommand.self, AdminCommand.self, ProductCommand.self])
}

/// The SDKAppID and secret key, for commands that sign their own UserSig.
struct AppCredentials: ParsableArguments {
    @Option(help: "The application's SDKAppID.") var sdkAppId: UInt64?
    @Option(help: "The application's secret key.") var secretKey: String?
}

struct UserSigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "usersig", abstract: "Print a UserSig, or with --private-map-key a PrivateMapKey (TLSSigAPIv2).",
        discussion: """
            Privilege bits of a PrivateMapKey: 1 create room, 2 enter room, 4 send audio, 8 receive audio, \
            16 send video, 32 receive video, 64 send sub-stream, 128 receive sub-stream. 255 is everything, \
            42 enters and receives only.
            """)

    @Option(help: "The application's SDKAppID.") var sdkAppId: UInt64
    @Option(help: "The application's secret key.") var secretKey: String
    @Option(help: "The user id to sign for.") var userId: String
    @Option(help: "Seconds it stays valid.") var expire: Int64 = 86_400 * 180
    @Flag(help: "Print a PrivateMapKey (permission ticket) for --room or --room-number instead.") var privateMapKey = false
    @Option(help: "The string room id (strRoomId) of the PrivateMapKey (genPrivateMapKeyWithStringRoomID).") var room: String?
    @Option(help: "The numeric room id (roomId, 1-4294967295) of the PrivateMapKey (genPrivateMapKey); it admits only the numeric room, not the string room of the same digits.")
    var roomNumber: UInt32?
    @Option(help: "The PrivateMapKey's privilege bits, 0-255.") var privilege: UInt32 = 255

    func validate() throws {
        guard expire > 0, expire <= Int64(UInt32.max) else { throw ValidationError("--expire must be positive and under 2^32") }
        guard privilege <= 255 else { throw ValidationError("--privilege is a sum of the bits 1 to 128, at most 255") }
        if privateMapKey {
            guard (room == nil) != (roomNumber == nil) else { throw ValidationError("--private-map-key needs one of --room and --room-number") }
            guard roomNumber != 0 else { throw ValidationError("--room-number must be 1-4294967295") }
        } else if room != nil || roomNumber != nil {
            throw ValidationError("--room and --room-number make a PrivateMapKey: add --private-map-key")
        }
    }

    func run() throws {
        let now = Int64(Date().timeIntervalSince1970)
        guard privateMapKey else {
            print(UserSig.make(sdkAppId: sdkAppId, secretKey: secretKey, identifier: userId, time: now, expire: expire).encoded())
            return
        }
        let target: PrivateMapKey.Room = roomNumber.map { .numeric($0) } ?? .string(room!)
        print(PrivateMapKey.make(
            sdkAppId: sdkAppId, secretKey: secretKey, userId: userId, room: target, privileges: PrivateMapKey.Privileges(rawValue: privilege),
            time: now, expire: expire))
    }
}

struct JoinCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "join",
        abstract: "Enter a room, print its events, and run commands read from standard input.",
        discussion: "Commands, one per line:\n" + ClientCommand.usage)

    @Option(help: "Room server URL, e.g. http://127.0.0.1:7880; or several, comma-separated (the nodes of a cluster): the next is tried when one cannot be reached, at start and on each reconnect.")
    var server: String
    @Option(help: "String room id (strRoomId). Give this or --room-number.") var room: String?
    @Option(help: "Numeric room id (TRTC's roomId, 1-4294967295). --room-number 123 and --room 123 are different rooms.") var roomNumber: UInt32?
    @Option(help: "Your user id.") var userId: String
    @Option(help: "anchor or audience (the CLI enters as audience unless told; TRTC's own default for the live scene, and the server's for an enterRoom without a role, is anchor).") var role: String = "audience"
    @Option(help: "A UserSig for --user-id; or give --sdk-app-id and --secret-key to sign one.") var usersig: String?
    @Option(help: "A PrivateMapKey for --user-id and the room, for servers that require one (liveroom usersig --private-map-key).")
    var privateMapKey: String?
    @Option(help: "PEM certificates to trust for an https:// server (a private CA or a self-signed server); default: the system's CA bundle.")
    var caFile: String?
    @OptionGroup var credentials: AppCredentials
    @Flag(help: "Print each event as one JSON object per line.") var json = false
    @Flag(help: "Also print the SDP answers (onPublishAnswer, onSubscribeAnswer), which are no TRTC callbacks.") var verbose = false
    @Option(help: "Leave after this many seconds (then standard input's end does not end the session).") var duration: Double?
    @Option(help: "Publish when an anchor: testsrc, color:RRGGBB, framecode (frames that show their number) or file:PATH; all but file: add a tone (--tone-hz).") var publish: String?
    @Option(help: "Video codec to publish: vp8 or h264.") var videoCodec: String = "vp8"
    @Option(help: "Published picture size, WIDTHxHEIGHT.") var resolution: String = "540x960"
    @Option(help: "Published frames per second.") var fps: Int = 15
    @Option(help: "Published video bitrate in kbit/s.") var bitrate: Int = 1300
    @Option(help: "Frequency in Hz (50-8000) of the tone published with testsrc, color: and framecode.") var toneHz: Int = 440
    @Option(help: "Record each remote user to DIR/<userId>.mkv.") var record: String?
    @Flag(help: "Print onSEIMsgSent with the frame code each SEI message rides on, and add to onRecvSEIMsg the frame code of the picture it came on (decodes received video).")
    var frameCode = false
    @Option(help: "The payload type of the SEI messages you send (TRTC's setSEIPayloadType): 242 (default), 5, or 100-254 except 244.")
    var seiPayloadType: Int = 242
    @Option(help: "Media path: udp, tcp (ICE-TCP, for networks that drop UDP) or any (UDP preferred, ICE-TCP when UDP does not answer within a second).")
    var iceTransport: String = "any"

    /// The media options, checked.
    func mediaOptions() throws -> MediaOptions {
        do {
            var media = MediaOptions()
            media.publish = try publish.map { try PublishSource(parsing: $0) }
            media.videoCodec = try MediaOptions.parseVideoCodec(videoCodec)
            (media.width, media.height) = try MediaOptions.parseResolution(resolution)
            media.fps = fps
            media.bitrateKbps = bitrate
            media.toneFrequency = toneHz
            media.recordDirectory = record
            guard let policy = ICETransportPolicy(rawValue: iceTransport.lowercased()) else {
                throw MediaOptionError("--ice-transport must be udp, tcp or any, not \"\(iceTransport)\"")
            }
            media.iceTransport = policy
            media.seiPayloadType = seiPayloadType
            media.frameCodes = frameCode
            try media.validate()
            if case .file(let path) = media.publish, !FileManager.default.fileExists(atPath: path) {
                throw MediaOptionError("--publish file: \(path) does not exist")
            }
            return media
        } catch let error as MediaOptionError {
            throw ValidationError(error.message)
        }
    }

    func run() async throws {
        guard let role = Role(rawValue: role) else { throw ValidationError("--role must be anchor or audience") }
        guard (room == nil) != (roomNumber == nil) else { throw ValidationError("give one of --room (a string room) and --room-number (a numeric room)") }
        guard roomNumber != 0 else { throw ValidationError("--room-number must be 1-4294967295") }
        let target: RoomID = roomNumber.map { .number($0) } ?? .string(room!)
        let sig: String
        let sdkAppId: UInt64
        if let usersig {
            sig = usersig
            // The UserSig names its SDKAppID; --sdk-app-id overrides it (the server checks both agree).
            guard let appId = credentials.sdkAppId ?? (try? UserSig.decode(usersig))?.sdkAppId else {
                throw ValidationError("--usersig is not a UserSig; give --sdk-app-id too")
            }
            sdkAppId = appId
        } else if let secretKey = credentials.secretKey, let appId = credentials.sdkAppId {
            sdkAppId = appId
            sig = UserSig.make(sdkAppId: sdkAppId, secretKey: secretKey, identifier: userId, time: Int64(Date().timeIntervalSince1970), expire: 86_400).encoded()
        } else {
            throw ValidationError("give --usersig, or --sdk-app-id and --secret-key to sign one")
        }
        if let duration, duration <= 0 { throw ValidationError("--duration must be positive") }
        let media = try mediaOptions()
        LoggingSystem.bootstrap { StreamLogHandler.standardError(label: $0) }
        var logger = Logger(label: "liveroom")
        logger.logLevel = .warning
        let session = JoinSession(
            options: JoinOptions(
                server: server, room: target, userId: userId, role: role, sdkAppId: sdkAppId, userSig: sig,
                duration: duration.map { .milliseconds(Int64($0 * 1000)) }, media: media, privateMapKey: privateMapKey ?? "", caFile: caFile),
            printer: EventPrinter(json: json, verbose: verbose), logger: logger)
        let outcome: JoinSession.Outcome
        do {
            outcome = try await session.run(commands: standardInputLines())
        } catch {
            FileHandle.standardError.write(Data("liveroom: cannot reach \(server): \(error)\n".utf8))
            throw ExitCode(3)
        }
        switch outcome {
        case .exited: throw ExitCode.success
        case .refused: throw ExitCode(2)
        case .disconnected: throw ExitCode(3)
        }
    }
}

struct PlayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "play",
        abstract: "Play a CDN stream (RTMP, HTTP-FLV or HLS) as a viewer and report its SEI messages.",
        discussion: """
            Events: onFirstVideoFrame (size, ms from start), onReceiveSeiMessage (payloadType, message, messageHex;             each message once however many frames repeat it), onStatistics every 2 s (fps, videoBitrate, audioBitrate,             width, height, framesDecoded, framesDropped, and latency in ms from an anchor's send time when its SEI             carries one), and when the stream breaks onConnectionLost, onTryToReconnect, onConnectionRecovery, or             onError -3308 after the last try (exit status 1).
            """)

    @Argument(help: "The stream URL, e.g. rtmp://cdn.example.com/live/shop1 or https://cdn.example.com/live/shop1.flv.") var url: String
    @Flag(help: "Print each event as one JSON object per line.") var json = false
    @Option(help: "Stop after this many seconds.") var duration: Double?
    @Option(help: "Copy what is received into FILE (format from its name: .flv, .mkv, .mp4, .ts).") var record: String?
    @Option(help: "Report SEI messages of this payload type only (5 or 100-254 except 244); without it, every type.") var seiPayloadType: Int?
    @Flag(help: "Add to onReceiveSeiMessage the frame code of the picture it came on (an anchor publishing --publish framecode).")
    var frameCode = false
    @Option(help: "Tries to play again after the stream breaks.") var retryCount: Int = 5
    @Option(help: "Milliseconds between those tries.") var retryIntervalMs: Int = 1000

    func run() async throws {
        if let duration, duration <= 0 { throw ValidationError("--duration must be positive") }
        if let seiPayloadType, !SEIMessage.isAllowedPayloadType(seiPayloadType) {
            throw ValidationError("--sei-payload-type must be 5 or 100-254 except 244, not \(seiPayloadType)")
        }
        guard (0...100).contains(retryCount), (100...60_000).contains(retryIntervalMs) else {
            throw ValidationError("--retry-count must be 0-100 and --retry-interval-ms 100-60000")
        }
        var options = PlayOptions(
            url: url, duration: duration.map { .milliseconds(Int64($0 * 1000)) }, record: record, seiPayloadType: seiPayloadType,
            retryCount: retryCount, retryInterval: .milliseconds(retryIntervalMs))
        options.frameCodes = frameCode
        let player = CDNPlayer(options: options, printer: EventPrinter(json: json))
        // SIGTERM and SIGINT stop playing cleanly, so the recording gets its trailer.
        let signals = [SIGTERM, SIGINT].map { number -> DispatchSourceSignal in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number)
            source.setEventHandler { player.stop() }
            source.resume()
            return source
        }
        let status = await player.run()
        signals.forEach { $0.cancel() }
        if status != 0 { throw ExitCode(status) }
    }
}

struct AdminCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "admin",
        abstract: "Call the admin API as administrator and print the answer.",
        discussion: """
            ACTION is a /v1 action (DismissRoom, DismissRoomByStrRoomId, RemoveUser, RemoveUserByStrRoomId, DescribeRoom, DescribeRoomInfo, \
            StartPublishCdnStream, UpdatePublishCdnStream, StopPublishCdnStream, DescribeProducts, AddProduct, ModifyProduct, RemoveProduct, RemoveReplay, \
            DescribeOrders, ConfirmOrder, CancelOrder) or a path such as v4/group_open_http_svc/send_group_msg. BODY is the JSON body; SdkAppId is added when missing.
            """)

    @Option(help: "Room server URL, e.g. http://127.0.0.1:7880.") var server: String
    @OptionGroup var credentials: AppCredentials
    @Argument(help: "The action or path.") var action: String
    @Argument(help: "The JSON body.") var body: String = "{}"

    func run() async throws {
        guard let sdkAppId = credentials.sdkAppId, let secretKey = credentials.secretKey else {
            throw ValidationError("--sdk-app-id and --secret-key are needed")
        }
        var body = self.body
        if !action.contains("/"), case .object(var object)? = try? JSONValue.parse(body), object["SdkAppId"] == nil {
            object["SdkAppId"] = .number(Double(sdkAppId))
            body = JSONValue.object(object).jsonText
        }
        let client = AdminClient(server: server, sdkAppId: sdkAppId, secretKey: secretKey)
        let (status, text) = try await client.call(action, body: body)
        print(text)
        if status != 200 { throw ExitCode(1) }
    }
}

struct ProductCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "product",
        abstract: "Change or list a room's catalogue through the admin API, for scripts; prints the answer.",
        discussion: """
            The same commands as on join's standard input: add <json>, edit <itemNumber> <json> (the changed fields and \
            "version"), remove <itemNumber>, list, remove-replay <replayId>. The room hears of every change (onProductChanged). Exits 1 when the server \
            refuses the change.
            """)

    @Option(help: "Room server URL, e.g. http://127.0.0.1:7880.") var server: String
    @OptionGroup var credentials: AppCredentials
    @Option(help: "String room id (strRoomId). Give this or --room-number.") var room: String?
    @Option(help: "Numeric room id (roomId, 1-4294967295).") var roomNumber: UInt32?
    @Argument(parsing: .captureForPassthrough, help: "add <json> | edit <itemNumber> <json> | remove <itemNumber> | list | remove-replay <replayId>")
    var words: [String] = []

    func run() async throws {
        guard let sdkAppId = credentials.sdkAppId, let secretKey = credentials.secretKey else {
            throw ValidationError("--sdk-app-id and --secret-key are needed")
        }
        guard (room == nil) != (roomNumber == nil), roomNumber != 0 else {
            throw ValidationError("give one of --room (a string room) and --room-number (1-4294967295)")
        }
        let target: RoomID = roomNumber.map { .number($0) } ?? .string(room!)
        let call: (action: String, body: JSONValue)
        do {
            call = try ClientCommand.productAdminCall(words.joined(separator: " "), room: target)
        } catch {
            throw ValidationError(error.message)
        }
        guard case .object(var body) = call.body else { return }
        body["SdkAppId"] = .number(Double(sdkAppId))
        let (status, text) = try await AdminClient(server: server, sdkAppId: sdkAppId, secretKey: secretKey)
            .call(call.action, body: JSONValue.object(body).jsonText)
        print(text)
        if status != 200 || (try? JSONValue.parse(text))?["Response"]?["Error"] != nil { throw ExitCode(1) }
    }
}
