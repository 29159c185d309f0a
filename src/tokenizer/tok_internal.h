/* Internals shared by the tokenizer's files (tokenizer.c, pretok.c, bpe.c, spm.c, detok.c).
 * Not part of the engine API: use tokenizer.h. */
#ifndef STRATA_TOK_INTERNAL_H
#define STRATA_TOK_INTERNAL_H
#include <stdint.h>
#include <stddef.h>
#include "tokenizer/tokenizer.h"

/* BPE: byte-level BPE ("gpt2"); SPM: SentencePiece BPE ("llama"); UGM: SentencePiece unigram
 * ("t5"). SPM and UGM share the vocabulary's spelling (U+2581 spaces, <0xNN> byte tokens). */
typedef enum { TOKENIZER_MODEL_BPE, TOKENIZER_MODEL_SPM, TOKENIZER_MODEL_UGM } tokenizer_model;

/* Pre-tokenizer regexes (pretok.c). Each is the reference pattern, matched by hand:
 *   GPT2    's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *   LLAMA3  (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}
 *           | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 *   QWEN2   as LLAMA3 with \p{N} (one digit per piece)
 *   DIGITS_GPT2  every \p{N} its own piece first (Digits(individual_digits)), then GPT2 on
 *           the rest: SmolLM2 ("smollm"), StarCoder ("starcoder", "refact")
 *   NONE    the whole segment is one piece (SentencePiece) */
typedef enum { PRETOK_NONE, PRETOK_GPT2, PRETOK_LLAMA3, PRETOK_QWEN2, PRETOK_DIGITS_GPT2 } pretok_kind;

/* Merge rank table entry (byte-level BPE): open addressing over key = left << 32 | right. */
typedef struct { uint64_t key; int32_t rank; int32_t result; } bpe_merge;

/* Token bytes -> id: open addressing, slot holds id + 1 (0 = empty). */
typedef struct { int32_t *slots; uint32_t mask; } tok_hash;

/* A set of tokens matched as prefixes of text: an index of their bytes, and per first byte b
 * the distinct lengths, longest first: lens[bucket[b] .. bucket[b+1]). Matching at a position
 * probes each length once. */
typedef struct { tok_hash index; uint32_t *lens; int32_t bucket[257]; int n; } tok_prefix_set;
/* Longest member of the set that s[0..n) starts with and that accept (may be NULL) takes;
 * -1 if none. */
int32_t tok_prefix_match(const struct tokenizer *t, const tok_prefix_set *ps, const uint8_t *s, size_t n,
                         int (*accept)(const struct tokenizer *t, int32_t id, int arg), int arg);

struct tokenizer {
    tokenizer_model model;
    pretok_kind pre;
    char pre_name[32];
    int n_vocab;
    /* token i: raw bytes blob[off[i] .. off[i] + len[i]) */
    char *blob;
    uint32_t *off, *len;
    uint8_t *type;             /* TOKEN_TYPE_* */
    float *scores;             /* NULL when the file has none */
    tok_hash vocab;            /* raw bytes -> id (BYTE tokens excluded; later duplicates win) */
    int32_t byte_id[256];      /* token for a single byte: byte-level alphabet or <0xNN>; -1 */
    bpe_merge *merges;         /* BPE only */
    uint32_t merge_mask;
    int n_merges;
    /* added tokens matched in text before the model runs */
    tok_prefix_set added;
    uint8_t *added_kind;       /* per id: 0 not added, 1 USER_DEFINED, 2 CONTROL (parse_special only) */
    /* SentencePiece: USER_DEFINED tokens, matched in the segment (spaces already the marker)
     * as whole, unmergeable symbols before the merges run, as SentencePiece's prefix matcher
     * does. Covers the ones spelled with real spaces (Gemma's runs of spaces and tabs), which
     * the text-level added-token split cannot see after the space prefix is added. */
    tok_prefix_set spm_user;
    /* SentencePiece unigram: the pieces a segmentation may use (NORMAL and USER_DEFINED), and
     * the smallest and largest NORMAL score (the latter at least FLT_MIN, as the reference) */
    tok_prefix_set ugm_pieces;
    float ugm_min_score, ugm_max_score;
    uint8_t *eog;              /* per-id flag: ends generation */
    int bos, eos, eot, unk, pad;
    int add_bos, add_eos, add_space_prefix;
    /* byte-level BPE: a piece that is itself a vocabulary entry is that token, before any
     * merge (Llama 3's tokenizer.json "ignore_merges": true; llama.cpp's LLAMA3 pre type) */
    int ignore_merges;
};

/* Growable id buffer used while encoding. */
typedef struct { int32_t *v; int n, cap; int oom; } tok_ids;
void tok_ids_push(tok_ids *o, int32_t id);

uint32_t tok_hash_bytes(const void *p, size_t n);
int32_t tok_hash_find(const tokenizer *t, const tok_hash *h, const void *p, size_t n);
int32_t tok_lookup(const tokenizer *t, const void *p, size_t n);   /* in the vocabulary index */

/* pretok.c: split s[0..n) into pieces; calls fn for each piece (byte offset, length).
 * Returns 0, -1 when out of memory. */
typedef void (*pretok_piece_fn)(const tokenizer *t, const uint8_t *p, size_t n, tok_ids *out);
int pretok_split(const tokenizer *t, const uint8_t *s, size_t n, pretok_piece_fn fn, tok_ids *out);
pretok_kind pretok_from_name(const char *name, int *known);

/* bpe.c: byte-level BPE of one piece, ids appended. */
void bpe_encode_piece(const tokenizer *t, const uint8_t *p, size_t n, tok_ids *out);
int32_t bpe_merge_find(const tokenizer *t, int32_t left, int32_t right, int32_t *result);

/* spm.c: SentencePiece-style BPE of one segment (spaces already the raw marker). */
void spm_encode_segment(const tokenizer *t, const uint8_t *p, size_t n, tok_ids *out);
/* ugm.c: SentencePiece unigram segmentation of one segment (spaces already the raw marker). */
void ugm_encode_segment(const tokenizer *t, const uint8_t *p, size_t n, tok_ids *out);
#endif
