import Foundation

/// The checkout the tests run from, for tests that read its files (Package.swift, docs/).
public enum RepositoryRoot {
    /// The nearest folder above `path` (a test's `#filePath`) that holds a `Package.swift`.
    public static func find(from path: String) -> URL? {
        var folder = URL(fileURLWithPath: path).deletingLastPathComponent()
        while folder.path != "/" {
            if FileManager.default.fileExists(atPath: folder.appendingPathComponent("Package.swift").path) {
                return folder
            }
            folder.deleteLastPathComponent()
        }
        return nil
    }
}
