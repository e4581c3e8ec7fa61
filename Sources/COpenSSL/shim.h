#ifndef LIVEROOM_COPENSSL_SHIM_H
#define LIVEROOM_COPENSSL_SHIM_H
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/ec.h>
#include <openssl/x509.h>
#include <openssl/rand.h>

// Macros and variadic calls that Swift cannot import.
static inline long liveroom_DTLSv1_get_timeout(SSL *ssl, struct timeval *tv) {
    return DTLSv1_get_timeout(ssl, tv);
}
static inline long liveroom_DTLSv1_handle_timeout(SSL *ssl) {
    return DTLSv1_handle_timeout(ssl);
}
static inline long liveroom_SSL_set_mtu(SSL *ssl, long mtu) {
    SSL_set_options(ssl, SSL_OP_NO_QUERY_MTU);
    return SSL_set_mtu(ssl, mtu);
}
static inline long liveroom_SSL_CTX_set_read_ahead(SSL_CTX *ctx, int yes) {
    return SSL_CTX_set_read_ahead(ctx, yes);
}
static inline long liveroom_BIO_set_mem_eof_return(BIO *bio, int value) {
    return BIO_set_mem_eof_return(bio, value);
}
static inline long liveroom_BIO_get_mem_data(BIO *bio, char **data) {
    return BIO_get_mem_data(bio, data);
}
static inline int liveroom_SSL_CTX_set_ecdh_auto(SSL_CTX *ctx) {
    (void)ctx;
    return 1; // automatic since OpenSSL 1.1.0
}
#endif
