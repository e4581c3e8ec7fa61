import Testing

@testable import LiveRoomServer

/// The watch page as the binary carries it: its assets, their headers and caching, and the
/// page's own guarantees (no inline script, server text as text).
@Suite struct WatchPageTests {
    @Test func everyAssetIsEmbeddedWithItsTypeAndUnknownNamesAre404() {
        for (name, type) in [("watch.js", "text/javascript"), ("signaling.js", "text/javascript"), ("whep.js", "text/javascript"), ("sei.js", "text/javascript"), ("watch.css", "text/css")] {
            let (status, headers, body) = WatchPage.assetResponse(name: name, ifNoneMatch: nil)
            #expect(status == .ok, "\(name)")
            #expect(headers[.contentType]?.hasPrefix(type) == true, "\(name): \(headers[.contentType] ?? "none")")
            #expect(!body.isEmpty && headers[.eTag] != nil && headers[.cacheControl]?.contains("max-age=") == true, "\(name)")
            #expect(headers[.contentSecurityPolicy] == WatchPage.contentSecurityPolicy)
        }
        for name in ["nothing.js", "../Package.swift", "watch.html", "WATCH.JS", ""] {
            let (status, headers, _) = WatchPage.assetResponse(name: name, ifNoneMatch: nil)
            #expect(status == .notFound, "\(name)")
            #expect(headers[.cacheControl] == "no-store")
        }
    }

    @Test func aClientWithTheAssetGets304() throws {
        let (_, headers, _) = WatchPage.assetResponse(name: "watch.js", ifNoneMatch: nil)
        let eTag = try #require(headers[.eTag])
        #expect(WatchPage.assetResponse(name: "watch.js", ifNoneMatch: eTag).status == .notModified)
        #expect(WatchPage.assetResponse(name: "watch.js", ifNoneMatch: "\"other\", \(eTag)").status == .notModified)
        #expect(WatchPage.assetResponse(name: "watch.js", ifNoneMatch: "\"other\"").status == .ok)
        // Each asset has its own tag.
        #expect(WatchPage.assetResponse(name: "whep.js", ifNoneMatch: eTag).status == .ok)
    }

    @Test func thePageNamesTheApplicationAndTheModeAndLoadsOnlyItsOwnFiles() {
        let page = WatchPage(sdkAppId: 1_400_000_123, isDevelopment: false).html
        #expect(page.contains(#"<meta name="liveroom-sdkappid" content="1400000123">"#))
        #expect(page.contains(#"<meta name="liveroom-development" content="false">"#))
        #expect(WatchPage(sdkAppId: 1, isDevelopment: true).html.contains(#"content="true""#))
        #expect(!page.contains("{{"))
        // No inline script or style (the CSP would block them), nothing from another origin.
        #expect(!page.contains("<script>") && !page.contains("style=") && !page.contains("http://") && !page.contains("https://"))
        let policy = WatchPage.contentSecurityPolicy
        #expect(policy.contains("default-src 'none'") && policy.contains("script-src 'self'") && !policy.contains("unsafe"))
    }

    @Test func theScriptsNeverInsertServerTextAsHTML() {
        for name in ["watch.js", "signaling.js", "whep.js", "sei.js"] {
            let script = String(decoding: WatchPage.assets[name]!.bytes, as: UTF8.self)
            for sink in ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"] {
                #expect(!script.contains(sink), "\(name) uses \(sink)")
            }
        }
    }

    @Test func pathComponentsArePercentDecoded() {
        #expect(WatchPage.decoded("shop%201") == "shop 1")
        #expect(WatchPage.decoded("room1") == "room1")
        #expect(WatchPage.decoded("bad%ZZ") == nil)
    }
}
