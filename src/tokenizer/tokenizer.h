/* Tokenizers read from GGUF metadata: byte-level BPE (tokenizer.ggml.model "gpt2": SmolLM2,
 * Llama 3, Qwen 2) and SentencePiece-style BPE (model "llama": Gemma 3).
 *
 * Every token is held as its raw BYTES (the GPT-2 byte-to-unicode spelling undone, or
 * SentencePiece's U+2581 turned into a space and <0xNN> into the byte), so encode works on
 * bytes and decode is concatenation.
 *
 * Encode: special tokens split out first (longest match) -> pre-tokenizer (the regex named
 * by tokenizer.ggml.pre, written by hand in pretok.c) -> BPE merges by rank (bpe.c).
 * Load validates everything it reads: a bad vocabulary is an error that names the key. */
#ifndef STRATA_TOKENIZER_H
#define STRATA_TOKENIZER_H
#include <stddef.h>
#include <stdint.h>
#include "gguf/gguf.h"

typedef struct tokenizer tokenizer;

/* token types of tokenizer.ggml.token_type (llama.cpp's numbering, a fact of the format) */
enum {
    TOKEN_TYPE_UNDEFINED = 0, TOKEN_TYPE_NORMAL = 1, TOKEN_TYPE_UNKNOWN = 2, TOKEN_TYPE_CONTROL = 3,
    TOKEN_TYPE_USER_DEFINED = 4, TOKEN_TYPE_UNUSED = 5, TOKEN_TYPE_BYTE = 6
};

/* Build from the tokenizer.* keys of f (no tensors needed). The tokenizer copies what it
 * needs: f may be closed afterwards. 0 ok; -1 with a message naming the key in err. */
int  tokenizer_load_gguf(const gguf_file *f, tokenizer **out, char *err, size_t errlen);
void tokenizer_free(tokenizer *t);

/* Encode len bytes of text (any bytes: invalid UTF-8 never fails; in byte-level BPE each
 * invalid byte becomes its byte token). add_bos: prepend BOS when the tokenizer has one.
 * parse_special: CONTROL tokens written in the text ("<|im_start|>") become that token;
 * otherwise they are plain text (USER_DEFINED tokens always match, as in the reference).
 * Returns the token count (may exceed cap: only cap ids written), -1 on error (no memory). */
int tokenizer_encode(const tokenizer *t, const char *text, size_t len, int add_bos, int parse_special,
                     int32_t *ids, int cap);

/* The same, where no CONTROL token may cover a break: breaks (ascending byte offsets, n_breaks
 * of them) mark text that came from outside the template (message content), so such a token
 * is encoded as plain text, in context. A token [i, i + len) covers a break b when
 * i <= b < i + len. */
int tokenizer_encode_breaks(const tokenizer *t, const char *text, size_t len, int add_bos, int parse_special,
                            const size_t *breaks, int n_breaks, int32_t *ids, int cap);
/* Length of the CONTROL token whose text starts at s[0..n) (leftmost-longest), 0 if none. */
size_t tokenizer_special_len(const tokenizer *t, const char *s, size_t n);

/* Raw bytes of a token; NULL (and *len = 0) for an id outside the vocabulary. */
const char *tokenizer_token_bytes(const tokenizer *t, int32_t id, size_t *len);
/* Concatenated raw bytes of ids (invalid ids skipped). Returns the full length (may exceed
 * cap; out is NUL-terminated when the length < cap). */
int tokenizer_decode(const tokenizer *t, const int32_t *ids, int n, char *out, int cap);

int tokenizer_n_vocab(const tokenizer *t);
int tokenizer_bos(const tokenizer *t);           /* -1 when none */
int tokenizer_eos(const tokenizer *t);           /* -1 when none */
int tokenizer_eot(const tokenizer *t);           /* <|im_end|>, <|eot_id|>, <end_of_turn>; -1 */
int tokenizer_is_eog(const tokenizer *t, int32_t id);   /* EOS, EOT and the like end generation */
int tokenizer_add_bos(const tokenizer *t);       /* tokenizer.ggml.add_bos_token (or its default) */
int tokenizer_token_type(const tokenizer *t, int32_t id);  /* TOKEN_TYPE_*, -1 for a bad id */
/* Id of the token whose raw bytes equal s exactly; -1 when absent. */
int32_t tokenizer_find_token(const tokenizer *t, const char *s);
/* "gpt2" or "llama" (the model) and the pre-tokenizer in use ("smollm", "llama3", ...). */
const char *tokenizer_model_name(const tokenizer *t);
const char *tokenizer_pre_name(const tokenizer *t);

/* ---- streaming decode --------------------------------------------------------------
 * Tokens may end inside a UTF-8 character (byte tokens, emoji split over two tokens).
 * detok_push emits only complete characters and keeps an incomplete tail pending; bytes
 * that can never form a character are emitted as U+FFFD, so the stream is always valid
 * UTF-8. The state is the engine's strata_detok layout: pending bytes and their count. */
typedef struct detok_state { char pending[8]; int n_pending; } detok_state;
void detok_init(detok_state *d);
/* Output bytes detok_push may need for this id at most (3 per byte, for U+FFFD). */
int detok_max_out(const tokenizer *t, int32_t id);
/* Appends token id; writes complete UTF-8 to out. Returns bytes written, or -1 (state
 * unchanged) when the output does not fit in cap (cap >= detok_max_out always fits; valid
 * text needs about the token's length). Invalid ids add nothing. */
int detok_push(const tokenizer *t, detok_state *d, int32_t id, char *out, int cap);
/* Emits what is pending (an incomplete character becomes U+FFFD). cap >= 3 always suffices
 * per pending byte; returns bytes written or -1 when cap is too small. */
int detok_flush(detok_state *d, char *out, int cap);
#endif
