import Testing

/// A trait that runs a test or suite only where its ``RequiredTool``s are installed. Without
/// one, the test is skipped with a message naming the tool and its Debian packages; under
/// `scripts/test.sh` and CI (``RequiredTool/missingFails``) it fails with that message instead.
public struct ToolRequirement: TestTrait, SuiteTrait {
    let tools: [RequiredTool]

    /// What is missing, or nil when every tool is installed.
    var missing: String? {
        let missing = tools.filter { !$0.isInstalled }
        guard !missing.isEmpty else { return nil }
        return missing.map { "\($0.name) is not installed (Debian packages: \($0.packages))" }.joined(separator: "; ")
    }

    public func prepare(for test: Test) async throws {
        guard let missing else { return }
        // Under scripts/test.sh and CI every test must run: packages it installs, and what needs
        // root (network namespaces) too, so a run that cannot check them fails instead of passing.
        if RequiredTool.isCI || RequiredTool.missingFails {
            let why = tools.filter { !$0.isInstalled }.allSatisfy(\.installable) ? "scripts/test.sh installs every package" : "run it as root, as CI does"
            throw MissingTool(description: missing + "; under scripts/test.sh and CI every test must run (\(why)), so the test fails")
        }
        let why = tools.filter { !$0.isInstalled }.allSatisfy(\.installable) ? "scripts/install-deps.sh installs it" : "run as root, as CI does"
        try await ConditionTrait.disabled(Comment(rawValue: missing + "; skipped (\(why))")).prepare(for: test)
    }
}

/// A tool a test needs is missing where every tool must be installed.
public struct MissingTool: Error, CustomStringConvertible {
    public let description: String
}

extension Trait where Self == ToolRequirement {
    /// Runs the test only where `tools` are installed; see ``ToolRequirement``.
    public static func requires(_ tools: RequiredTool...) -> Self {
        ToolRequirement(tools: tools)
    }
}
