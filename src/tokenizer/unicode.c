/* UTF-8 decoding and category lookup over the generated range tables. */
#include "tokenizer/unicode.h"

int utf8_seq_len(uint8_t b) {
    if (b < 0x80) return 1;
    if (b < 0xC2) return 0;          /* continuation byte, or overlong lead C0/C1 */
    if (b < 0xE0) return 2;
    if (b < 0xF0) return 3;
    if (b < 0xF5) return 4;
    return 0;
}

uint32_t utf8_decode(const uint8_t *s, size_t n, int *len) {
    uint8_t b = s[0];
    int k = utf8_seq_len(b);
    *len = 1;
    if (k == 1) return b;
    if (k == 0 || (size_t)k > n) return UNICODE_INVALID_BASE + b;
    uint32_t cp = b & (0x7F >> k);
    for (int i = 1; i < k; i++) {
        if ((s[i] & 0xC0) != 0x80) return UNICODE_INVALID_BASE + b;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    /* reject overlong 3/4-byte forms, surrogates and values past U+10FFFF */
    if ((k == 3 && cp < 0x800) || (k == 4 && cp < 0x10000) || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return UNICODE_INVALID_BASE + b;
    *len = k;
    return cp;
}

int unicode_utf8_encode(uint32_t cp, uint8_t *out) {
    if (cp < 0x80) { out[0] = (uint8_t)cp; return 1; }
    if (cp < 0x800) { out[0] = (uint8_t)(0xC0 | (cp >> 6)); out[1] = (uint8_t)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        out[0] = (uint8_t)(0xE0 | (cp >> 12)); out[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (uint8_t)(0x80 | (cp & 0x3F)); return 3;
    }
    out[0] = (uint8_t)(0xF0 | (cp >> 18)); out[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F)); out[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

unicode_cat unicode_category(uint32_t cp) {
    if (cp > 0x10FFFF) return UCAT_Cn;
    /* last run whose start <= cp */
    int lo = 0, hi = unicode_cat_runs - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (unicode_cat_start[mid] <= cp) lo = mid; else hi = mid - 1;
    }
    return (unicode_cat)unicode_cat_value[lo];
}

int unicode_is_letter(uint32_t cp) {
    if (cp < 0x80) return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
    unicode_cat c = unicode_category(cp);
    return c >= UCAT_Lu && c <= UCAT_Lo;
}

int unicode_is_number(uint32_t cp) {
    if (cp < 0x80) return cp >= '0' && cp <= '9';
    unicode_cat c = unicode_category(cp);
    return c >= UCAT_Nd && c <= UCAT_No;
}

int unicode_is_mark(uint32_t cp) {
    if (cp < 0x80) return 0;
    unicode_cat c = unicode_category(cp);
    return c >= UCAT_Mn && c <= UCAT_Me;
}

int unicode_is_space(uint32_t cp) {
    if (cp < 0x80) return cp == ' ' || (cp >= 0x09 && cp <= 0x0D);
    for (int i = 0; i < unicode_white_space_n; i++)
        if (cp >= unicode_white_space[i][0] && cp <= unicode_white_space[i][1]) return 1;
    return 0;
}
