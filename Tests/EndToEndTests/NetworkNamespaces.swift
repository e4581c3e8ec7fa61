import Foundation
import TestTools
import Testing

/// Network namespaces made for one test, joined by veth pairs: a "server" side and a "client"
/// side, each with one non-loopback address on a private /24, and optionally a "viewer" side on
/// a second /24 that reaches only the server (so the server has two interfaces and the client
/// cannot reach the viewer's one). Processes started with ``start(in:_:_:scope:name:)`` run
/// inside one of them. ``remove()`` deletes them all (and with them the veth pairs and every rule
/// a test installed inside).
struct VethPair {
    enum Side { case server, client, viewer }

    let serverNamespace: String
    let clientNamespace: String
    let viewerNamespace: String?
    let serverAddress: String
    let clientAddress: String
    /// The server's address on the viewer's link, and the viewer's.
    let serverViewerAddress: String
    let viewerAddress: String

    init(withViewer: Bool = false) throws {
        let tag = String(UInt32.random(in: 0..<UInt32.max), radix: 36)
        serverNamespace = "lr-s-\(tag)"
        clientNamespace = "lr-c-\(tag)"
        viewerNamespace = withViewer ? "lr-v-\(tag)" : nil
        // /24s in 10.201.0.0/16 and 10.202.0.0/16 that no other test picks at the same time (tests are serialized).
        let subnet = Int.random(in: 1...254)
        serverAddress = "10.201.\(subnet).1"
        clientAddress = "10.201.\(subnet).2"
        serverViewerAddress = "10.202.\(subnet).1"
        viewerAddress = "10.202.\(subnet).2"
        let (serverLink, clientLink) = ("lrs\(tag.prefix(8))", "lrc\(tag.prefix(8))")
        var commands: [[String]] = [
            ["netns", "add", serverNamespace], ["netns", "add", clientNamespace],
            ["link", "add", serverLink, "type", "veth", "peer", "name", clientLink],
            ["link", "set", serverLink, "netns", serverNamespace], ["link", "set", clientLink, "netns", clientNamespace],
            ["-n", serverNamespace, "addr", "add", "\(serverAddress)/24", "dev", serverLink],
            ["-n", clientNamespace, "addr", "add", "\(clientAddress)/24", "dev", clientLink],
            ["-n", serverNamespace, "link", "set", serverLink, "up"], ["-n", clientNamespace, "link", "set", clientLink, "up"],
            ["-n", serverNamespace, "link", "set", "lo", "up"], ["-n", clientNamespace, "link", "set", "lo", "up"],
        ]
        if let viewerNamespace {
            let (serverSide, viewerSide) = ("lrw\(tag.prefix(8))", "lrv\(tag.prefix(8))")
            commands += [
                ["netns", "add", viewerNamespace], ["link", "add", serverSide, "type", "veth", "peer", "name", viewerSide],
                ["link", "set", serverSide, "netns", serverNamespace], ["link", "set", viewerSide, "netns", viewerNamespace],
                ["-n", serverNamespace, "addr", "add", "\(serverViewerAddress)/24", "dev", serverSide],
                ["-n", viewerNamespace, "addr", "add", "\(viewerAddress)/24", "dev", viewerSide],
                ["-n", serverNamespace, "link", "set", serverSide, "up"], ["-n", viewerNamespace, "link", "set", viewerSide, "up"],
                ["-n", viewerNamespace, "link", "set", "lo", "up"],
            ]
        }
        for arguments in commands {
            let result = try RequiredTool.networkNamespaces.run(arguments, timeout: .seconds(10))
            guard result.status == 0 else {
                remove()
                throw NamespaceError(description: "ip \(arguments.joined(separator: " ")) failed: \(result.errors)")
            }
        }
    }

    func namespace(_ side: Side) -> String {
        switch side {
        case .server: serverNamespace
        case .client: clientNamespace
        case .viewer: viewerNamespace ?? clientNamespace
        }
    }

    /// Runs `command` in `side`'s namespace (`ip netns exec`); `command` is a path or one of
    /// the built executables.
    func start(in side: Side, _ command: String, _ arguments: [String], scope: ProcessScope, name: String) throws -> ChildProcess {
        let executable = command.hasPrefix("/") ? command : binDirectory.appendingPathComponent(command).path
        return try scope.start(RequiredTool.networkNamespaces.path, ["netns", "exec", namespace(side), executable] + arguments, name: name)
    }

    /// Runs a command in `side`'s namespace to the end.
    @discardableResult
    func run(in side: Side, _ command: String, _ arguments: [String]) throws -> ToolOutput {
        try RequiredTool.networkNamespaces.run(["netns", "exec", namespace(side), command] + arguments, timeout: .seconds(10))
    }

    /// Drops every UDP packet in and out of `side`'s namespace, as a firewall that lets only TCP
    /// through does (an nftables table of the namespace's own, gone with it).
    func dropUDP(in side: Side) throws {
        let rules = """
            table inet lr_block_udp {
              chain input { type filter hook input priority 0; policy accept; meta l4proto udp drop; }
              chain output { type filter hook output priority 0; policy accept; meta l4proto udp drop; }
            }
            """
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("lr-nft-\(UInt32.random(in: 0..<UInt32.max)).conf")
        try rules.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let result = try run(in: side, RequiredTool.nftables.path, ["-f", file.path])
        guard result.status == 0 else { throw NamespaceError(description: "nft -f failed in \(namespace(side)): \(result.errors)") }
    }

    func remove() {
        for name in [serverNamespace, clientNamespace] + (viewerNamespace.map { [$0] } ?? []) {
            _ = try? RequiredTool.networkNamespaces.run(["netns", "del", name], timeout: .seconds(10))
        }
    }
}

struct NamespaceError: Error, CustomStringConvertible {
    var description: String
}
