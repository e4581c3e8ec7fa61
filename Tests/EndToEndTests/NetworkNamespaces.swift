import Foundation
import TestTools
import Testing

/// Two network namespaces made for one test, joined by a veth pair: a "server" side and a
/// "client" side, each with one non-loopback address on a private /24. Processes started with
/// ``start(in:_:_:scope:name:)`` run inside one of them. ``remove()`` deletes both (and with
/// them the veth pair and every rule a test installed inside).
struct VethPair {
    enum Side { case server, client }

    let serverNamespace: String
    let clientNamespace: String
    let serverAddress: String
    let clientAddress: String

    init() throws {
        let tag = String(UInt32.random(in: 0..<UInt32.max), radix: 36)
        serverNamespace = "lr-s-\(tag)"
        clientNamespace = "lr-c-\(tag)"
        // A /24 in 10.201.0.0/16 that no other test picks at the same time (tests are serialized).
        let subnet = "10.201.\(Int.random(in: 1...254))"
        serverAddress = "\(subnet).1"
        clientAddress = "\(subnet).2"
        let (serverLink, clientLink) = ("lrs\(tag.prefix(8))", "lrc\(tag.prefix(8))")
        for arguments in [
            ["netns", "add", serverNamespace], ["netns", "add", clientNamespace],
            ["link", "add", serverLink, "type", "veth", "peer", "name", clientLink],
            ["link", "set", serverLink, "netns", serverNamespace], ["link", "set", clientLink, "netns", clientNamespace],
            ["-n", serverNamespace, "addr", "add", "\(serverAddress)/24", "dev", serverLink],
            ["-n", clientNamespace, "addr", "add", "\(clientAddress)/24", "dev", clientLink],
            ["-n", serverNamespace, "link", "set", serverLink, "up"], ["-n", clientNamespace, "link", "set", clientLink, "up"],
            ["-n", serverNamespace, "link", "set", "lo", "up"], ["-n", clientNamespace, "link", "set", "lo", "up"],
        ] {
            let result = try RequiredTool.networkNamespaces.run(arguments, timeout: .seconds(10))
            guard result.status == 0 else {
                remove()
                throw NamespaceError(description: "ip \(arguments.joined(separator: " ")) failed: \(result.errors)")
            }
        }
    }

    func namespace(_ side: Side) -> String { side == .server ? serverNamespace : clientNamespace }

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

    func remove() {
        for name in [serverNamespace, clientNamespace] {
            _ = try? RequiredTool.networkNamespaces.run(["netns", "del", name], timeout: .seconds(10))
        }
    }
}

struct NamespaceError: Error, CustomStringConvertible {
    var description: String
}
