import Foundation
import Testing
import TestTools

/// `docs/architecture.md`'s module table says what each LiveRoom module depends on; these tests
/// hold it to `Package.swift`, and `Package.swift` to what the sources import. They read both
/// files as text from the repository this file is in.
@Suite("docs/architecture.md: the module table and the imports match Package.swift")
struct ArchitectureDocTests {
    @Test func tableMatchesPackageDependencies() throws {
        let root = try #require(RepositoryRoot.find(from: #filePath), "no Package.swift above \(#filePath)")
        let manifest = Manifest(parsing: try String(contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8))
        try #require(manifest.liveRoomLibraries.count >= 10, "read only \(manifest.liveRoomLibraries.count) LiveRoom targets from Package.swift")
        let doc = try String(contentsOf: root.appendingPathComponent("docs/architecture.md"), encoding: .utf8)
        for issue in ModuleTable.issues(doc: doc, manifest: manifest) {
            Issue.record(Comment(rawValue: issue))
        }
    }

    @Test func sourcesImportOnlyDeclaredModules() throws {
        let root = try #require(RepositoryRoot.find(from: #filePath), "no Package.swift above \(#filePath)")
        let manifest = Manifest(parsing: try String(contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8))
        // An import that builds only because a declared dependency brings the module in.
        for issue in try ImportCheck.issues(root: root, manifest: manifest) {
            Issue.record(Comment(rawValue: issue))
        }
    }

    /// The checker itself, on a small package and table: every kind of difference is named.
    @Test func checkerNamesEveryDifference() {
        let manifest = Manifest(parsing: """
            let package = Package(name: "X", targets: [
                // A comment with .target(name: "LiveRoomGhost") in it is not a target.
                .target(name: "LiveRoomA", dependencies: ["LiveRoomB", "LiveRoomC", .product(name: "NIOCore", package: "swift-nio")]),
                .target(name: "LiveRoomB", dependencies: [.target(name: "LiveRoomC")]),
                .target(name: "LiveRoomC"),
                .target(name: "LiveRoomD", dependencies: ["LiveRoomC"]),
                .executableTarget(name: "tool", dependencies: ["LiveRoomA"], path: "Tool"),
                .target(name: "LiveRoomTestSupport", path: "Tests/LiveRoomTestSupport"),
            ])
            """)
        #expect(manifest.liveRoomLibraries == ["LiveRoomA", "LiveRoomB", "LiveRoomC", "LiveRoomD"])
        #expect(manifest.targets["LiveRoomA"]?.dependencies == ["LiveRoomB", "LiveRoomC"])
        #expect(manifest.targets["LiveRoomB"]?.dependencies == ["LiveRoomC"])
        let doc = """
            # Architecture

            ## Modules

            | layer | module | holds | depends on |
            |---|---|---|---|
            | tools | `tool` | a tool | the kit; swift-argument-parser |
            | | `LiveRoomA` | a | B, E; SwiftNIO's NIOCore |
            | | `LiveRoomC` | c | nothing; Foundation only |
            | | `LiveRoomB` | b | C; SwiftNIO, D |
            | | `LiveRoomZ` | z | — |

            ## Next
            """
        let issues = ModuleTable.issues(doc: doc, manifest: manifest)
        func named(_ text: String) -> Bool { issues.contains { $0.contains(text) } }
        #expect(named("LiveRoomA (docs/architecture.md line 8): the row's \"depends on\" differs from Package.swift: missing C"), "\(issues)")
        #expect(named("names E, which is not a LiveRoom target"), "\(issues)")
        #expect(named("LiveRoomB depends on C, whose row is above it"), "\(issues)")
        #expect(named("LiveRoomD has no row"), "\(issues)")
        #expect(named("LiveRoomB (docs/architecture.md line 10) names the LiveRoom module D after the `;`"), "\(issues)")
        #expect(named("a row for LiveRoomZ, which is not a LiveRoom library target"), "\(issues)")
        #expect(!named("LiveRoomC ("), "\(issues)")
        let extra = ModuleTable.issues(doc: doc.replacingOccurrences(of: "| c | nothing;", with: "| c | A;"), manifest: manifest)
        #expect(extra.contains { $0.contains("LiveRoomC (docs/architecture.md line 9): the row's \"depends on\" differs from Package.swift: not in Package.swift: A") }, "\(extra)")
        #expect(ImportCheck.importedModule("@preconcurrency import LiveRoomRTP // why") == "LiveRoomRTP")
        #expect(ImportCheck.importedModule("    internal import struct LiveRoomWire.RTPPacket") == "LiveRoomWire")
        #expect(ImportCheck.importedModule("/// import LiveRoomCore") == nil)
        #expect(ImportCheck.importedModule("let important = 1") == nil)
    }
}

extension ArchitectureDocTests {
    /// The targets of a `Package.swift`, read with a small scan of its tokens: each `.target(` or
    /// `.executableTarget(` call's `name:`, `path:` and the target names in `dependencies:`
    /// (strings, `.target(name:)`, `.byName(name:)`; products are left out).
    struct Manifest {
        struct Target {
            var kind: String
            var dependencies: [String]
            var path: String?
        }

        var targets: [String: Target] = [:]

        /// The LiveRoom library targets under `Sources/`, the ones the table and the imports are checked for.
        var liveRoomLibraries: [String] {
            targets.filter { name, target in
                name.hasPrefix("LiveRoom") && target.kind == "target" && (target.path ?? "Sources/").hasPrefix("Sources/")
            }.keys.sorted()
        }

        func folder(of name: String) -> String {
            targets[name]?.path ?? "Sources/\(name)"
        }

        /// The LiveRoom targets `name` declares as dependencies.
        func liveRoomDependencies(of name: String) -> Set<String> {
            Set((targets[name]?.dependencies ?? []).filter { $0.hasPrefix("LiveRoom") })
        }

        init(parsing source: String) {
            let tokens = Token.scan(source)
            var i = 0
            while i + 2 < tokens.count {
                guard tokens[i] == .punct("."), case .word(let kind) = tokens[i + 1], tokens[i + 2] == .punct("("),
                      kind == "target" || kind == "executableTarget" else {
                    i += 1
                    continue
                }
                let close = Token.closing(tokens, open: i + 2)
                let arguments = Array(tokens[(i + 3)..<close])
                if let name = Self.string(labelled: "name", in: arguments) {
                    targets[name] = Target(
                        kind: kind, dependencies: Self.dependencies(in: arguments),
                        path: Self.string(labelled: "path", in: arguments))
                }
                i = close + 1
            }
        }

        /// The index of the token after `label:` among the call's own arguments (not nested ones).
        static func argument(_ label: String, in tokens: [Token]) -> Int? {
            var depth = 0
            for (i, token) in tokens.enumerated() {
                switch token {
                case .punct("("), .punct("["): depth += 1
                case .punct(")"), .punct("]"): depth -= 1
                case .word(label) where depth == 0 && i + 1 < tokens.count && tokens[i + 1] == .punct(":"):
                    return i + 2
                default: break
                }
            }
            return nil
        }

        static func string(labelled label: String, in tokens: [Token]) -> String? {
            guard let i = argument(label, in: tokens), i < tokens.count, case .string(let value) = tokens[i] else { return nil }
            return value
        }

        static func dependencies(in arguments: [Token]) -> [String] {
            guard let open = argument("dependencies", in: arguments), open < arguments.count, arguments[open] == .punct("[") else { return [] }
            let close = Token.closing(arguments, open: open)
            var names: [String] = []
            var i = open + 1
            while i < close {
                if arguments[i] == .punct("."), i + 2 < close, case .word(let call) = arguments[i + 1], arguments[i + 2] == .punct("(") {
                    let end = Token.closing(arguments, open: i + 2)
                    if call == "target" || call == "byName", let name = string(labelled: "name", in: Array(arguments[(i + 3)..<end])) {
                        names.append(name)
                    }
                    i = end + 1
                } else {
                    if case .string(let name) = arguments[i] { names.append(name) }
                    i += 1
                }
            }
            return names
        }
    }

    /// Just enough of Swift's tokens to read a manifest: words, string literals and punctuation;
    /// comments and white space are dropped.
    enum Token: Equatable {
        case word(String)
        case string(String)
        case punct(Character)

        static func scan(_ source: String) -> [Token] {
            let c = Array(source)
            var tokens: [Token] = []
            var i = 0
            func isWord(_ ch: Character) -> Bool { ch.isLetter || ch.isNumber || ch == "_" }
            while i < c.count {
                let ch = c[i]
                let next: Character? = i + 1 < c.count ? c[i + 1] : nil
                if ch.isWhitespace {
                    i += 1
                } else if ch == "/" && next == "/" {
                    while i < c.count && c[i] != "\n" { i += 1 }
                } else if ch == "/" && next == "*" {
                    i += 2
                    while i + 1 < c.count && !(c[i] == "*" && c[i + 1] == "/") { i += 1 }
                    i += 2
                } else if ch == "\"" {
                    var value = ""
                    i += 1
                    while i < c.count && c[i] != "\"" {
                        if c[i] == "\\" && i + 1 < c.count { i += 1 }
                        value.append(c[i])
                        i += 1
                    }
                    tokens.append(.string(value))
                    i += 1
                } else if isWord(ch) {
                    var word = ""
                    while i < c.count && isWord(c[i]) {
                        word.append(c[i])
                        i += 1
                    }
                    tokens.append(.word(word))
                } else {
                    tokens.append(.punct(ch))
                    i += 1
                }
            }
            return tokens
        }

        /// The index of the bracket that closes the one at `open` (or the end).
        static func closing(_ tokens: [Token], open: Int) -> Int {
            var depth = 0
            for i in open..<tokens.count {
                switch tokens[i] {
                case .punct("("), .punct("["): depth += 1
                case .punct(")"), .punct("]"):
                    depth -= 1
                    if depth == 0 { return i }
                default: break
                }
            }
            return tokens.count
        }
    }

    /// The "## Modules" table of docs/architecture.md against the manifest.
    enum ModuleTable {
        struct Row {
            var module: String
            var line: Int
            var dependencies: [String]
        }

        static func issues(doc: String, manifest: Manifest) -> [String] {
            let libraries = Set(manifest.liveRoomLibraries)
            let shortNames = Set(libraries.map { String($0.dropFirst("LiveRoom".count)) })
            var issues: [String] = []
            var rows: [Row] = []

            var inModules = false
            for (index, line) in doc.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let lineNumber = index + 1
                if line.hasPrefix("## ") {
                    inModules = line == "## Modules"
                    continue
                }
                guard inModules, line.hasPrefix("|") else { continue }
                var cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
                cells = Array(cells.dropFirst().dropLast())
                guard cells.count >= 4 else {
                    issues.append("docs/architecture.md line \(lineNumber): a table row with \(cells.count) cells, not 4")
                    continue
                }
                // Code spans are the odd pieces between backticks.
                let spans = cells[1].split(separator: "`", omittingEmptySubsequences: false).enumerated()
                    .filter { $0.offset % 2 == 1 }.map { String($0.element) }
                let modules = spans.filter { $0.hasPrefix("LiveRoom") }
                guard let module = modules.first else { continue }  // the header, executables, C modules
                if modules.count > 1 {
                    issues.append("docs/architecture.md line \(lineNumber): one row names several LiveRoom modules: \(modules.joined(separator: ", "))")
                }
                guard libraries.contains(module) else {
                    issues.append("docs/architecture.md line \(lineNumber) has a row for \(module), which is not a LiveRoom library target in Package.swift")
                    continue
                }
                if rows.contains(where: { $0.module == module }) {
                    issues.append("\(module) has two rows in docs/architecture.md (the second on line \(lineNumber))")
                    continue
                }

                let dependsOn = cells[cells.count - 1]
                let parts = dependsOn.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false)
                var dependencies: [String] = []
                for item in parts[0].split(separator: ",") {
                    let name = item.trimmingCharacters(in: .whitespaces.union(CharacterSet(charactersIn: "`")))
                    if name.isEmpty || name == "—" || name == "-" || name == "nothing" { continue }
                    if shortNames.contains(name) {
                        if dependencies.contains(name) {
                            issues.append("\(module) (docs/architecture.md line \(lineNumber)) lists \(name) twice")
                        }
                        dependencies.append(name)
                    } else {
                        issues.append("\(module) (docs/architecture.md line \(lineNumber)) names \(name), which is not a LiveRoom target: write LiveRoom modules without the `LiveRoom` prefix before the `;`, C modules and packages after it")
                    }
                }
                if parts.count > 1 {
                    let words = parts[1].split { !($0.isLetter || $0.isNumber) }.map(String.init)
                    for word in words where shortNames.contains(word) || libraries.contains(word) {
                        issues.append("\(module) (docs/architecture.md line \(lineNumber)) names the LiveRoom module \(word) after the `;`, among the external packages; LiveRoom modules go before the `;`")
                    }
                }
                rows.append(Row(module: module, line: lineNumber, dependencies: dependencies))
            }

            for library in libraries.sorted() where !rows.contains(where: { $0.module == library }) {
                issues.append("\(library) has no row in docs/architecture.md's module table")
            }
            for (position, row) in rows.enumerated() {
                let declared = Set(manifest.liveRoomDependencies(of: row.module).map { String($0.dropFirst("LiveRoom".count)) })
                let listed = Set(row.dependencies)
                if declared != listed {
                    var differences: [String] = []
                    let missing = declared.subtracting(listed).sorted()
                    let extra = listed.subtracting(declared).sorted()
                    if !missing.isEmpty { differences.append("missing \(missing.joined(separator: ", "))") }
                    if !extra.isEmpty { differences.append("not in Package.swift: \(extra.joined(separator: ", "))") }
                    issues.append("\(row.module) (docs/architecture.md line \(row.line)): the row's \"depends on\" differs from Package.swift: \(differences.joined(separator: "; ")). Package.swift declares: \(declared.isEmpty ? "nothing" : declared.sorted().joined(separator: ", "))")
                }
                for dependency in row.dependencies {
                    if let at = rows.firstIndex(where: { $0.module == "LiveRoom" + dependency }), at < position {
                        issues.append("\(row.module) depends on \(dependency), whose row is above it (line \(rows[at].line)): dependencies run downwards in the table")
                    }
                }
            }
            return issues
        }
    }

    /// Each LiveRoom library's sources against its declared dependencies.
    enum ImportCheck {
        static func issues(root: URL, manifest: Manifest) throws -> [String] {
            var issues: [String] = []
            for target in manifest.liveRoomLibraries {
                let declared = manifest.liveRoomDependencies(of: target)
                let folder = root.appendingPathComponent(manifest.folder(of: target))
                var undeclared: [String: [String]] = [:]  // module: files
                for file in try swiftFiles(in: folder) {
                    let text = try String(contentsOf: file, encoding: .utf8)
                    let relative = String(file.path.dropFirst(root.path.count + 1))
                    for line in text.split(separator: "\n") {
                        guard let module = importedModule(String(line)), module.hasPrefix("LiveRoom"),
                              module != target, !declared.contains(module) else { continue }
                        if undeclared[module]?.last != relative { undeclared[module, default: []].append(relative) }
                    }
                }
                for (module, files) in undeclared.sorted(by: { $0.key < $1.key }) {
                    issues.append("\(target) imports \(module) (\(files.joined(separator: ", "))), which is not among \(target)'s dependencies in Package.swift: add it there, or drop the import")
                }
            }
            return issues
        }

        struct MissingFolder: Error {
            var path: String
        }

        static func swiftFiles(in folder: URL) throws -> [URL] {
            guard let walk = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil) else {
                throw MissingFolder(path: folder.path)
            }
            return walk.compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }.sorted { $0.path < $1.path }
        }

        /// The module an `import` line imports, after attributes, access levels and a declaration kind.
        static func importedModule(_ line: String) -> String? {
            var words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })[...]
            let modifiers: Set<String> = ["public", "package", "internal", "fileprivate", "private"]
            while let word = words.first, word.hasPrefix("@") || modifiers.contains(String(word)) {
                words = words.dropFirst()
            }
            guard words.first == "import" else { return nil }
            words = words.dropFirst()
            let kinds: Set<String> = ["typealias", "struct", "class", "enum", "protocol", "let", "var", "func"]
            if let kind = words.first, kinds.contains(String(kind)) { words = words.dropFirst() }
            guard let path = words.first else { return nil }
            let module = path.prefix { $0.isLetter || $0.isNumber || $0 == "_" }
            return module.isEmpty ? nil : String(module)
        }
    }
}
