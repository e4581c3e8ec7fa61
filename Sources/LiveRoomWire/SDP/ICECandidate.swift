/// An ICE candidate as written in `a=candidate:` (RFC 8839 §5.1).
public struct ICECandidate: Hashable, Sendable {
    /// The foundation.
    public var foundation: String
    /// The component id (1 = RTP; with rtcp-mux, the only one).
    public var component: UInt16
    /// The transport as written (`udp`, `UDP`, `tcp`).
    public var transport: String
    /// The candidate priority.
    public var priority: UInt32
    /// The address: IP text or an mDNS `.local` name.
    public var address: String
    /// The port.
    public var port: UInt16
    /// The type as written: `host`, `srflx`, `prflx` or `relay`.
    public var type: String
    /// `raddr`, if present.
    public var relatedAddress: String?
    /// `rport`, if present.
    public var relatedPort: UInt16?
    /// Other extension attributes in order (`generation`, `ufrag`, `network-id`, `tcptype`, …).
    public var extensions: [Extension]

    /// One extension name/value pair.
    public struct Extension: Hashable, Sendable {
        /// The attribute name.
        public var name: String
        /// The attribute value.
        public var value: String

        /// Creates an extension attribute.
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// Creates a candidate.
    public init(foundation: String, component: UInt16 = 1, transport: String = "udp", priority: UInt32, address: String,
                port: UInt16, type: String = "host", relatedAddress: String? = nil, relatedPort: UInt16? = nil,
                extensions: [Extension] = []) {
        self.foundation = foundation
        self.component = component
        self.transport = transport
        self.priority = priority
        self.address = address
        self.port = port
        self.type = type
        self.relatedAddress = relatedAddress
        self.relatedPort = relatedPort
        self.extensions = extensions
    }

    /// Parses the attribute value, with or without a leading `candidate:` (as trickled
    /// candidates are sent over signaling).
    public init(parsing text: some StringProtocol) throws(WireError) {
        var value = Substring(text)
        if value.hasPrefix("candidate:") { value = value.dropFirst("candidate:".count) }
        let parts = value.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count >= 8 else { throw .malformed("ICE candidate \"\(text)\" has fewer than 8 fields") }
        guard let component = UInt16(parts[1]), let priority = UInt32(parts[3]), let port = UInt16(parts[5]) else {
            throw .malformed("ICE candidate \"\(text)\" has a bad component, priority or port")
        }
        guard parts[6] == "typ" else { throw .malformed("ICE candidate \"\(text)\" lacks \"typ\"") }
        guard (parts.count - 8) % 2 == 0 else { throw .malformed("ICE candidate \"\(text)\" has an unpaired extension") }
        self.init(foundation: String(parts[0]), component: component, transport: String(parts[2]), priority: priority,
                  address: String(parts[4]), port: port, type: String(parts[7]))
        var index = 8
        while index < parts.count {
            let name = parts[index], value = parts[index + 1]
            switch name {
            case "raddr" where relatedAddress == nil:
                relatedAddress = String(value)
            case "rport" where relatedPort == nil:
                guard let port = UInt16(value) else { throw .malformed("ICE candidate \"\(text)\" has a bad rport") }
                relatedPort = port
            default:
                extensions.append(Extension(name: String(name), value: String(value)))
            }
            index += 2
        }
    }

    /// The value of extension `name`, if present.
    public subscript(extension name: String) -> String? {
        extensions.first { $0.name == name }?.value
    }

    /// The attribute value (without `candidate:`).
    public var attributeValue: String {
        var text = "\(foundation) \(component) \(transport) \(priority) \(address) \(port) typ \(type)"
        if let relatedAddress { text += " raddr \(relatedAddress)" }
        if let relatedPort { text += " rport \(relatedPort)" }
        for item in extensions { text += " \(item.name) \(item.value)" }
        return text
    }
}
