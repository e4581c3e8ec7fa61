import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LiveRoomAuth
import LiveRoomProtocol
import TestTools
import Testing

/// The audience's watch page in a real headless Chromium against a real server and real anchor
/// CLIs: WHEP video (frames decoded, the anchor's colour on a screenshot), the pop-up card,
/// buying, sold-out, and switching to a cross-room PK anchor. Screenshots are kept in
/// `$LIVEROOM_TEST_ARTIFACTS/watch` (default `.build/test-artifacts/watch`).
@Suite(.serialized, .timeLimit(.minutes(4)))
struct WatchPageEndToEndTests {
    static let small = ["--resolution", "320x240", "--fps", "15", "--bitrate", "400"]

    static let artifacts: URL = {
        let root = ProcessInfo.processInfo.environment["LIVEROOM_TEST_ARTIFACTS"].map { URL(fileURLWithPath: $0) }
            ?? URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent(".build/test-artifacts")
        return root.appendingPathComponent("watch")
    }()

    static func anchor(_ user: String, room: String, color: String, _ server: TestServer, in scope: ProcessScope) async throws -> ChildProcess {
        let client = try server.join(user, room: room, role: "anchor", in: scope, extra: ["--publish", "color:\(color)"] + small)
        try await client.waitForEvent("onPublishAnswer", timeout: .seconds(15))
        return client
    }

    static func userSig(_ user: String) -> String {
        UserSig.make(
            sdkAppId: TestServer.sdkAppId, secretKey: TestServer.secretKey, identifier: user, time: Int64(Date().timeIntervalSince1970), expire: 3600
        ).encoded()
    }

    /// The video's decoded frame count now.
    static func framesDecoded(_ page: BrowserPage) async throws -> Int {
        try await page.evaluate("window.liveroomWatch ? window.liveroomWatch.framesDecoded() : 0").intValue ?? 0
    }

    /// Waits until the page plays `anchor` and decodes frames (the count grows), then takes a
    /// screenshot, keeps it as `name`.png, and returns the colour at the video's centre.
    static func playsColour(
        _ page: BrowserPage, anchor: String, shot name: String
    ) async throws -> (r: Int, g: Int, b: Int) {
        try await page.waitFor("the page plays \(anchor)", "window.liveroomWatch?.anchor === '\(anchor)' && document.getElementById('state').dataset.state === 'playing'")
        let first = try await page.waitFor("\(anchor)'s frames are decoded", "window.liveroomWatch.framesDecoded()").intValue ?? 0
        try await page.waitFor("more of \(anchor)'s frames are decoded", "window.liveroomWatch.framesDecoded().then(n => n > \(first + 10))")
        // The picture shows once the first decoded frame is painted; give it a moment.
        try await page.waitFor("the video has its size", "document.getElementById('video').videoWidth > 0")
        try await Task.sleep(for: .milliseconds(300))
        let rect = try await page.evaluate(
            "(() => { const r = document.getElementById('video').getBoundingClientRect(); return [Math.round(r.x + r.width / 2), Math.round(r.y + r.height / 2)]; })()")
        let centre = (x: rect.arrayValue?[0].intValue ?? 0, y: rect.arrayValue?[1].intValue ?? 0)
        let file = artifacts.appendingPathComponent("\(name).png")
        try await page.screenshot(to: file)
        print("watch page screenshot: \(file.path)")
        let frame = try decodeFrame(file.path, width: page.width, height: page.height)
        return frame.color(x: centre.x, y: centre.y)
    }

    static func http(_ method: String, _ url: String) async throws -> (Int, [String: String], String) {
        var request = URLRequest(url: URL(string: url)!)
        request.httpMethod = method
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as! HTTPURLResponse
        var headers: [String: String] = [:]
        for (key, value) in http.allHeaderFields { headers[String(describing: key).lowercased()] = String(describing: value) }
        return (http.statusCode, headers, String(decoding: data, as: UTF8.self))
    }

    @Test(.requires(.chromium, .ffmpeg)) func aViewerWatchesPopUpsBuysAndSwitchesToAPKAnchorInChromium() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        try FileManager.default.createDirectory(at: Self.artifacts, withIntermediateDirectories: true)
        let server = try await TestServer.start(in: scope)

        // The page and its assets, with their headers; bad room ids and unknown assets are refused.
        let (status, headers, html) = try await Self.http("GET", "\(server.url)/watch/roomA")
        #expect(status == 200 && headers["content-type"]?.hasPrefix("text/html") == true)
        #expect(headers["content-security-policy"]?.contains("script-src 'self'") == true && headers["referrer-policy"] == "no-referrer")
        #expect(html.contains("content=\"\(TestServer.sdkAppId)\""), "the page names the application")
        let (jsStatus, jsHeaders, _) = try await Self.http("GET", "\(server.url)/watch/assets/watch.js")
        #expect(jsStatus == 200 && jsHeaders["content-type"]?.hasPrefix("text/javascript") == true && jsHeaders["etag"] != nil)
        #expect(jsHeaders["cache-control"]?.contains("max-age") == true)
        #expect(try await Self.http("GET", "\(server.url)/watch/assets/nothing.js").0 == 404)
        #expect(try await Self.http("GET", "\(server.url)/watch/assets/..%2FPackage.swift").0 == 404)
        #expect(try await Self.http("GET", "\(server.url)/watch/bad%0Aroom").0 == 400)
        #expect(try await Self.http("GET", "\(server.url)/watch/\(String(repeating: "r", count: 65))").0 == 400)
        // Not on the development credentials: no UserSigs for the asking.
        #expect(try await Self.http("POST", "\(server.url)/watch/roomA/usersig").0 == 404)

        let hostA = try await Self.anchor("hostA", room: "roomA", color: "FF0000", server, in: scope)
        let hostB = try await Self.anchor("hostB", room: "roomB", color: "0000FF", server, in: scope)
        // A product whose title is HTML: the page must show it as text.
        let hostile = #"<img src=x id=injected onerror=alert(1)>"#
        hostA.send(#"product add {"itemNumber":1,"title":"Green tea","price":"199.00","currency":"CNY","itemUrl":"https://shop.example/1","stock":1}"#)
        hostA.send("product add \(JSONValue.object(["itemNumber": 2, "title": .string(hostile), "price": "5.00", "itemUrl": "https://shop.example/2", "stock": 3]).jsonText)")
        try await hostA.waitForEvent("onProductResult", count: 2)

        let chromium = try await HeadlessChromium.start(in: scope)
        try await DevTools.connect(chromium.browserURL) { devtools in
            let page = try await devtools.openPage()
            try await page.navigate("\(server.url)/watch/roomA?userId=fan&userSig=\(Self.userSig("fan"))")

            // WHEP video: frames are decoded and the centre of the video is the anchor's red.
            try await page.waitFor("hostA is listed", "document.querySelector('#anchors button[data-user-id=\"hostA\"]') !== null")
            let red = try await Self.playsColour(page, anchor: "hostA", shot: "1-hostA-red")
            #expect(red.r > 180 && red.g < 80 && red.b < 80, "the video's centre is \(red), not hostA's red")

            // The catalogue, with the hostile title as text.
            try await page.waitFor("the products are listed", "document.querySelectorAll('#products li[data-item]').length === 2")
            let shown = try await page.evaluate("document.querySelector('#products li[data-item=\"2\"] .title').textContent")
            #expect(shown == .string(hostile))
            #expect(try await page.evaluate("document.getElementById('injected') === null && document.querySelectorAll('#products img').length === 0") == true)
            #expect(try await page.evaluate("document.querySelector('#products li[data-item=\"1\"] .stock').textContent") == "1 left")

            // A member's custom message shaped as TRTC's item_popup_msg is not a card (any member
            // may send one): the forger hears its own message back from the room, the page shows nothing.
            let forger = try await server.entered("forger", room: "roomA", in: scope)
            let observer = try await server.entered("observer", room: "roomA", in: scope)
            let forged = #"{"cmd":"item_popup_msg","msg":{"itemNumber":1,"itemPrice":0.01,"itemTitle":"FREE, pay at evil.example","itemUrl":"https://evil.example/"}}"#
            forger.send("custom 1 \(forged)")
            try await observer.waitForEvent("onRecvCustomCmdMsg") { $0["userId"] == "forger" }
            try await Task.sleep(for: .milliseconds(500))
            #expect(try await page.evaluate("document.getElementById('popup').hidden") == true, "a forged custom message showed the card")
            forger.stop()
            observer.stop()

            // The anchor's pop-up shows the card within a second, with the title and the price.
            try await page.waitFor("no card before the pop", "document.getElementById('popup').hidden")
            let popped = ContinuousClock.now
            hostA.send("pop 1")
            try await page.waitFor("the card shows", timeout: .seconds(1), "!document.getElementById('popup').hidden")
            let delay = ContinuousClock.now - popped
            print("watch page: the pop-up card showed \(delay) after the anchor's pop")
            #expect(try await page.evaluate("document.querySelector('#popup .title').textContent") == "Green tea")
            #expect(try await page.evaluate("document.querySelector('#popup .price').textContent") == "199.00 CNY")
            try await page.screenshot(to: Self.artifacts.appendingPathComponent("2-popup.png"))

            // Buying from the card: the page shows the order, the anchor hears of the sale, the
            // server keeps the order, and the last unit sold shows as sold out.
            try await page.evaluate("document.getElementById('buy').click()")
            let orderId = try await page.waitFor("the order is shown", "document.getElementById('buy-result').dataset.orderId ?? ''")
            let sold = try await hostA.waitForEvent("onProductSold")
            let sale = sold["sales"]?.arrayValue?.first
            #expect(sale?["itemNumber"] == 1 && sale?["quantity"] == 1 && sale?["stockLeft"] == 0, "\(sold.jsonText)")
            let (orders, _) = try await server.admin(
                "DescribeOrders", ["SdkAppId": .number(Double(TestServer.sdkAppId)), "RoomId": "roomA"], in: scope)
            let stored = orders["Response"]?["Orders"]?.arrayValue ?? []
            let order = stored.first { $0["orderId"]?.stringValue == orderId.stringValue }
            #expect(order?["userId"] == "fan" && order?["itemNumber"] == 1 && order?["state"] == "reserved", "\(orders.jsonText) vs \(orderId.jsonText)")
            try await page.waitFor("sold out shows", "document.querySelector('#products li[data-item=\"1\"]').classList.contains('sold-out')")
            #expect(try await page.evaluate("document.querySelector('#products li[data-item=\"1\"] .stock').textContent") == "sold out")
            #expect(try await page.evaluate("document.getElementById('buy').disabled && document.querySelector('#products li[data-item=\"1\"] .buy').disabled") == true)
            try await page.screenshot(to: Self.artifacts.appendingPathComponent("3-sold-out.png"))
            // The pop-up ends with the anchor's unpop.
            hostA.send("unpop")
            try await page.waitFor("the card goes", "document.getElementById('popup').hidden")

            // A cross-room PK: roomB's anchor is listed, and switching to it shows its blue; back to red.
            try await hostB.allowPK("roomA")
            hostA.send("connect-room roomB hostB")
            try await page.waitFor("hostB is listed", "document.querySelector('#anchors button[data-user-id=\"hostB\"]') !== null")
            try await page.evaluate("document.querySelector('#anchors button[data-user-id=\"hostB\"]').click()")
            let blue = try await Self.playsColour(page, anchor: "hostB", shot: "4-pk-hostB-blue")
            #expect(blue.b > 180 && blue.r < 80 && blue.g < 80, "the video's centre is \(blue), not hostB's blue")
            try await page.evaluate("document.querySelector('#anchors button[data-user-id=\"hostA\"]').click()")
            let back = try await Self.playsColour(page, anchor: "hostA", shot: "5-back-to-hostA-red")
            #expect(back.r > 180 && back.g < 80 && back.b < 80, "the video's centre is \(back), not hostA's red")

            // A network change: the browser goes offline and comes back. The page says offline,
            // reconnects its WebSocket (entering again), makes a new WHEP session and plays again.
            let offline: [String: JSONValue] = ["offline": true, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1]
            try await devtools.call("Network.enable", session: page.session)
            try await devtools.call("Network.emulateNetworkConditions", offline, session: page.session)
            try await page.waitFor("the page says offline", "document.getElementById('state').dataset.state === 'offline'")
            try await page.screenshot(to: Self.artifacts.appendingPathComponent("6-offline.png"))
            var online = offline
            online["offline"] = false
            try await devtools.call("Network.emulateNetworkConditions", online, session: page.session)
            let again = try await Self.playsColour(page, anchor: "hostA", shot: "7-reconnected-hostA-red")
            #expect(again.r > 180 && again.g < 80 && again.b < 80, "the video's centre is \(again), not hostA's red")

            // The server ends the page's WHEP session (as a lost session would): the page sees
            // its peer connection fail or stay disconnected and makes a new WHEP session.
            let location = try #require(try await page.evaluate("window.liveroomWatch.whepLocation").stringValue)
            var delete = URLRequest(url: URL(string: server.url + location)!)
            delete.httpMethod = "DELETE"
            delete.setValue("Bearer \(Self.userSig("fan"))", forHTTPHeaderField: "Authorization")
            let (_, deleted) = try await URLSession.shared.data(for: delete)
            #expect((deleted as? HTTPURLResponse)?.statusCode == 200)
            let ended = ContinuousClock.now
            try await page.waitFor(
                "a new WHEP session", timeout: .seconds(40),
                "(() => { const l = window.liveroomWatch.whepLocation; return l !== null && l !== '\(location)'; })()")
            print("watch page: a new WHEP session \(ContinuousClock.now - ended) after the server ended the old one")
            let remade = try await Self.playsColour(page, anchor: "hostA", shot: "8-new-whep-session-hostA-red")
            #expect(remade.r > 180 && remade.g < 80 && remade.b < 80, "the video's centre is \(remade), not hostA's red")

            // The anchors leaving: the page says so instead of showing a frozen picture.
            hostA.send("leave")
            hostB.send("leave")
            try await page.waitFor("the page waits", "document.getElementById('state').dataset.state === 'waiting'")
            #expect(try await page.evaluate("document.querySelectorAll('#anchors button').length") == 0)
            try await page.screenshot(to: Self.artifacts.appendingPathComponent("9-waiting.png"))
        }
        print("watch page screenshots: \(Self.artifacts.path)")
        chromium.process.stop()
    }

    /// An H.264 anchor's pop-up sent as SEI only (no signaling): the page reads it from the
    /// video's encoded frames and shows the card with the frame it rode on.
    @Test(.requires(.chromium, .ffmpeg)) func anH264AnchorsSEIPopUpShowsOnThePage() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        try FileManager.default.createDirectory(at: Self.artifacts, withIntermediateDirectories: true)
        let server = try await TestServer.start(in: scope)
        let host = try server.join(
            "hostS", room: "roomS", role: "anchor", in: scope, extra: ["--publish", "color:00C000", "--video-codec", "h264"] + Self.small)
        try await host.waitForEvent("onPublishAnswer", timeout: .seconds(15))
        host.send(#"product add {"itemNumber":7,"title":"Oolong","price":"88.00","currency":"CNY","itemUrl":"https://shop.example/7","stock":5}"#)
        try await host.waitForEvent("onProductResult")

        let chromium = try await HeadlessChromium.start(in: scope)
        try await DevTools.connect(chromium.browserURL) { devtools in
            let page = try await devtools.openPage()
            try await page.navigate("\(server.url)/watch/roomS?userId=fan&userSig=\(Self.userSig("fan"))")
            let green = try await Self.playsColour(page, anchor: "hostS", shot: "sei-1-h264-green")
            #expect(green.g > 140 && green.r < 80 && green.b < 80, "the video's centre is \(green), not hostS's green")
            try await page.waitFor("the products are listed", "document.querySelectorAll('#products li[data-item]').length === 1")
            #expect(try await page.evaluate("document.getElementById('popup').hidden && window.liveroomWatch.seiPopUps === 0") == true)

            // TRTC's item_popup_msg as SEI on the next frames: nothing goes over signaling.
            let popped = ContinuousClock.now
            host.send(#"sei {"cmd":"item_popup_msg","msg":{"itemNumber":7,"itemPrice":88,"itemTitle":"Oolong","itemUrl":"https://shop.example/7"}} 3"#)
            try await page.waitFor("the card shows from SEI", timeout: .seconds(1), "!document.getElementById('popup').hidden")
            print("watch page: the SEI pop-up card showed \(ContinuousClock.now - popped) after the anchor's sei")
            #expect(try await page.evaluate("window.liveroomWatch.seiPopUps") == 1, "one pop-up, however many frames carried it")
            #expect(try await page.evaluate("document.querySelector('#popup .title').textContent") == "Oolong")
            #expect(try await page.evaluate("document.querySelector('#popup .price').textContent") == "88.00 CNY")
            try await page.screenshot(to: Self.artifacts.appendingPathComponent("sei-2-popup.png"))
            // The frames still decode with the page reading them.
            let frames = try await Self.framesDecoded(page)
            try await page.waitFor("frames still decode", "window.liveroomWatch.framesDecoded().then(n => n > \(frames + 10))")
        }
        chromium.process.stop()
    }

    /// On the development credentials (no --secret-key) the page needs no UserSig in its URL: it
    /// asks the server for one for a random viewer id. The route checks the room and the id.
    @Test(.requires(.chromium)) func inDevelopmentModeThePageGetsItsOwnUserSig() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try scope.start(
            "liveroom-server",
            ["--host", "127.0.0.1", "--port", "0", "--media-port", "0", "--ice-tcp-port", "0", "--data-dir", scope.dataDirectory.path,
             "--log-level", "warning"],
            name: "server")
        let line = try await server.waitForLine { $0.contains("LiveRoom server listening on ") }
        let url = String(line[line.range(of: "listening on ")!.upperBound...]).trimmingCharacters(in: .whitespaces)
        let secretLine = try await server.waitForLine { $0.hasPrefix("Secret key: ") }
        let secret = String(secretLine.dropFirst("Secret key: ".count).prefix { !$0.isWhitespace })

        let (status, _, body) = try await Self.http("POST", "\(url)/watch/roomD/usersig")
        #expect(status == 200, "\(body)")
        let answer = try JSONValue.parse(body)
        let userId = try #require(answer["userId"]?.stringValue)
        #expect(userId.hasPrefix("viewer-") && answer["sdkAppId"]?.intValue == 1_400_000_000)
        #expect(throws: Never.self) {
            try UserSig.verify(
                answer["userSig"]?.stringValue ?? "", sdkAppId: 1_400_000_000, secretKey: secret, identifier: userId,
                now: Int64(Date().timeIntervalSince1970))
        }
        // Never for a chosen id: that would sign as an anchor or as the administrator.
        #expect(try await Self.http("POST", "\(url)/watch/roomD/usersig?userId=administrator").0 == 400)
        #expect(try await Self.http("POST", "\(url)/watch/roomD/usersig?userId=ok_id-1").0 == 400)
        #expect(try await Self.http("POST", "\(url)/watch/bad%0Aroom/usersig").0 == 400)

        try FileManager.default.createDirectory(at: Self.artifacts, withIntermediateDirectories: true)
        let chromium = try await HeadlessChromium.start(in: scope)
        try await DevTools.connect(chromium.browserURL) { devtools in
            let page = try await devtools.openPage()
            try await page.navigate("\(url)/watch/roomD")
            // Entered (nobody publishes yet) under a viewer id the server made.
            try await page.waitFor("the page enters", "document.getElementById('state').dataset.state === 'waiting'")
            let viewer = try await page.evaluate("document.getElementById('viewer').textContent").stringValue ?? ""
            #expect(viewer.hasPrefix("watching as viewer-"), "\(viewer)")
            try await page.screenshot(to: Self.artifacts.appendingPathComponent("dev-waiting.png"))
        }
        chromium.process.stop()
    }
}
