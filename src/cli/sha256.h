/* SHA-256 (FIPS 180-4), for checking pulled files against the hub's published digests. */
#ifndef STRATA_CLI_SHA256_H
#define STRATA_CLI_SHA256_H
#include <stddef.h>
#include <stdint.h>
typedef struct sha256_ctx { uint32_t h[8]; uint64_t len; uint8_t buf[64]; size_t n; } sha256_ctx;
void sha256_init(sha256_ctx *c);
void sha256_update(sha256_ctx *c, const void *data, size_t n);
void sha256_final(sha256_ctx *c, uint8_t out[32]);
/* Hex digest of a file (65 bytes with the NUL); 0, or -1 when it cannot be read. */
int sha256_file_hex(const char *path, char hex[65]);
#endif
