internal import COpenSSL

/// An OpenSSL `EVP_PKEY`. Immutable once generated; OpenSSL reference-counts it
/// atomically, so sharing it read-only across threads is safe.
final class PrivateKey: @unchecked Sendable {
    let handle: OpaquePointer

    private init(owning handle: OpaquePointer) {
        self.handle = handle
    }

    deinit {
        EVP_PKEY_free(handle)
    }

    /// Generates an ECDSA key on P-256 (prime256v1), the curve browsers use for DTLS.
    static func generateP256() throws(DTLSError) -> PrivateKey {
        OpenSSLErrorQueue.clear()
        // EVP_EC_gen is a variadic macro; the explicit keygen context needs no shim.
        guard let keygen = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else {
            throw OpenSSLErrorQueue.error(.certificateGeneration, "EVP_PKEY_CTX_new_from_name failed")
        }
        defer { EVP_PKEY_CTX_free(keygen) }
        guard EVP_PKEY_keygen_init(keygen) == 1, EVP_PKEY_CTX_set_group_name(keygen, "P-256") == 1 else {
            throw OpenSSLErrorQueue.error(.certificateGeneration, "EC key generation setup failed")
        }
        var key: OpaquePointer? = nil
        guard EVP_PKEY_generate(keygen, &key) == 1, let key else {
            throw OpenSSLErrorQueue.error(.certificateGeneration, "EVP_PKEY_generate failed")
        }
        return PrivateKey(owning: key)
    }
}
