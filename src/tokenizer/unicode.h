/* Unicode facts the pre-tokenizers need: UTF-8 decoding that never fails, general categories
 * (\p{L}, \p{N}, ...) and the White_Space property (the `\s` of the reference regexes).
 * The tables are generated (unicode_data.c, by tools/gen_unicode_tables.py). */
#ifndef STRATA_TOKENIZER_UNICODE_H
#define STRATA_TOKENIZER_UNICODE_H
#include <stddef.h>
#include <stdint.h>

/* General categories; order matches CATS in tools/gen_unicode_tables.py. */
typedef enum {
    UCAT_Cn, UCAT_Lu, UCAT_Ll, UCAT_Lt, UCAT_Lm, UCAT_Lo, UCAT_Mn, UCAT_Mc, UCAT_Me,
    UCAT_Nd, UCAT_Nl, UCAT_No, UCAT_Pc, UCAT_Pd, UCAT_Ps, UCAT_Pe, UCAT_Pi, UCAT_Pf, UCAT_Po,
    UCAT_Sm, UCAT_Sc, UCAT_Sk, UCAT_So, UCAT_Zs, UCAT_Zl, UCAT_Zp, UCAT_Cc, UCAT_Cf, UCAT_Cs, UCAT_Co,
    UCAT_COUNT
} unicode_cat;

/* A byte that does not start a valid UTF-8 sequence decodes to this pseudo code point
 * (outside Unicode): UNICODE_INVALID_BASE + byte. It is neither letter, number nor space. */
#define UNICODE_INVALID_BASE 0x110000u

/* Decode one code point at s[0..n) (n >= 1). Strict: overlong forms, surrogates, values above
 * U+10FFFF and truncated sequences are invalid, and then one byte is consumed and
 * UNICODE_INVALID_BASE + s[0] is returned. *len receives the bytes consumed (1..4). */
uint32_t utf8_decode(const uint8_t *s, size_t n, int *len);
/* Encode cp (<= 0x10FFFF) into out (4 bytes room); returns the byte count. */
/* (named apart from jansson's internal utf8_encode: the GPU machine links jansson statically) */
int unicode_utf8_encode(uint32_t cp, uint8_t *out);
/* Length of a complete UTF-8 sequence whose first byte is b (1..4), 0 for a continuation or
 * invalid lead byte. */
int utf8_seq_len(uint8_t b);

unicode_cat unicode_category(uint32_t cp);      /* Cn for invalid pseudo code points */
int unicode_is_letter(uint32_t cp);             /* \p{L} */
int unicode_is_number(uint32_t cp);             /* \p{N} */
int unicode_is_mark(uint32_t cp);               /* \p{M} */
int unicode_is_space(uint32_t cp);              /* \s: White_Space */

/* generated tables (unicode_data.c) */
extern const char unicode_data_version[];
extern const int unicode_cat_runs;
extern const uint32_t unicode_cat_start[];
extern const uint8_t unicode_cat_value[];
extern const uint32_t unicode_white_space[][2];
extern const int unicode_white_space_n;
#endif
