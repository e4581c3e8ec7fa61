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
        // Packages scripts/test.sh installs must be there; what needs root, only in CI.
        let mustRun = RequiredTool.isCI || (RequiredTool.missingFails && tools.filter { !$0.isInstalled }.allSatisfy(\.installable))
        if mustRun {
            throw MissingTool(description: missing + "; scripts/test.sh and CI install every tool, so the test fails")
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
