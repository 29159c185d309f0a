/* strata: the narrow engine API. The CLI and the HTTP server use only this header.
 *
 *   strata_model    read-only weights + vocabulary; shared by any number of sessions
 *   strata_session  one conversation: KV cache, position, sampler state, stats
 *
 * Errors: functions return 0 / a count on success and a negative value on failure;
 * loading writes a message naming the file, the thing and what to do into err. */
#ifndef STRATA_H
#define STRATA_H
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

typedef struct strata_model strata_model;
typedef struct strata_session strata_session;

/* ---- model ------------------------------------------------------------------------ */
typedef enum { STRATA_DEVICE_AUTO = -1, STRATA_DEVICE_CPU = 0, STRATA_DEVICE_CUDA = 1 } strata_device;

typedef struct strata_model_params {
    const char *path;
    int n_threads;              /* 0: STRATA_THREADS or all cores */
    strata_device device;
    int exact;                  /* reference mode: f32 activations, dequantized weights */
    int vocab_only;             /* load the tokenizer only (files without tensors work) */
    void (*progress)(float fraction, void *user);  /* load progress, 0..1 */
    void *progress_user;
    const char *chat_template;  /* Jinja text used instead of the file's (NULL: the file's, else built-in) */
} strata_model_params;

strata_model_params strata_model_default_params(void);
/* 0 on success; -1 with a message in err. */
int  strata_model_load(const strata_model_params *p, strata_model **out, char *err, size_t errlen);
void strata_model_free(strata_model *m);

typedef struct strata_model_info {
    const char *arch;           /* "llama", "qwen3moe", "gemma3" */
    const char *name;           /* general.name or "" */
    int n_layers, n_embd, n_heads, n_kv_heads, head_dim, n_ff, n_vocab, n_ctx_train;
    int n_experts, n_experts_used;
    uint64_t n_params;
    uint64_t weight_bytes;      /* bytes read per token by a dense decode step */
    int has_chat_template;
    const char *device;         /* "cpu" / "cuda" */
    int n_threads;
} strata_model_info;
void strata_model_get_info(const strata_model *m, strata_model_info *info);
const char *strata_model_chat_template(const strata_model *m);  /* NULL when absent */

/* The CUDA device this build would use: name, compute capability, SMs, memory, L2, its class
 * and the kernel variants chosen for it (table or STRATA_* switch). -1 when there is none
 * (out says why). */
int strata_cuda_describe(char *out, size_t cap);

/* ---- tokenizer -------------------------------------------------------------------- */
int strata_n_vocab(const strata_model *m);
int strata_token_bos(const strata_model *m);   /* -1 when none */
int strata_token_eos(const strata_model *m);
int strata_token_is_eog(const strata_model *m, int32_t id);  /* EOS, EOT, <|im_end|> ... */
/* Encode text. add_bos: prepend BOS if the model wants it; parse_special: "<|im_start|>"
 * in text becomes the special token. Returns the token count (may exceed cap: then only cap
 * ids were written and the caller retries with a larger buffer), or -1 on error. */
int strata_tokenize(const strata_model *m, const char *text, size_t len, int add_bos, int parse_special,
                    int32_t *ids, int cap);
/* Raw bytes of one token (no UTF-8 repair); NULL for an invalid id. */
const char *strata_token_text(const strata_model *m, int32_t id, size_t *len);
/* Decode ids into text (bytes); returns length written (NUL-terminated when it fits in cap). */
int strata_detokenize(const strata_model *m, const int32_t *ids, int n, char *out, int cap);

/* Streaming decode that never emits half a UTF-8 character. */
typedef struct strata_detok { char pending[8]; int n_pending; } strata_detok;
void strata_detok_init(strata_detok *d);
/* Append token id; writes complete UTF-8 text to out; returns bytes written (<= cap). */
int strata_detok_push(const strata_model *m, strata_detok *d, int32_t id, char *out, int cap);
/* Flush what is left (invalid sequences become U+FFFD). */
int strata_detok_flush(strata_detok *d, char *out, int cap);

/* ---- chat formatting ------------------------------------------------------------------ */
typedef struct strata_chat_msg { const char *role; const char *content; } strata_chat_msg;
/* Render messages with the model's chat template. Returns a malloc'ed string (caller frees
 * with strata_free), NULL with err on failure. extra_json: a JSON object of extra template
 * variables, or NULL. */
char *strata_chat_format(const strata_model *m, const strata_chat_msg *msgs, int n, int add_generation_prompt,
                         const char *extra_json, char *err, size_t errlen);
/* Render and tokenize in one: the template's own markers become special tokens, while text
 * inside message content is always tokenized as text (content cannot forge "<|im_start|>"
 * turns). BOS as strata_tokenize(add_bos = 1) adds it. Returns the token count with *ids
 * (free with strata_free) and, when text is not NULL, the rendered prompt in *text (free with
 * strata_free); -1 with err on failure. */
int strata_chat_tokenize(const strata_model *m, const strata_chat_msg *msgs, int n, int add_generation_prompt,
                         const char *extra_json, int32_t **ids, char **text, char *err, size_t errlen);
void strata_free(void *p);
/* The same from JSON: messages_json an array of message objects as transformers passes them
 * (tool_calls, tool_call_id, ...), tools_json an array or NULL, template_src the template to use
 * (NULL: the model's own). Returns a malloc'ed string (strata_free), NULL with err. */
char *strata_chat_format_json(const strata_model *m, const char *template_src, const char *messages_json,
                              const char *tools_json, int add_generation_prompt, const char *extra_json,
                              char *err, size_t errlen);
/* The same rendered and tokenized as strata_chat_tokenize does: the template's own markers
 * become special tokens, while the text of every string in messages_json and tools_json (the
 * client's: content, tool calls and their arguments, tool results, tool names, descriptions
 * and parameters) is tokenized as text, so none of it can spell a special token. Returns the
 * token count with *ids (strata_free) and, when text is not NULL, the prompt in *text. */
int strata_chat_tokenize_json(const strata_model *m, const char *template_src, const char *messages_json,
                              const char *tools_json, int add_generation_prompt, const char *extra_json, int32_t **ids,
                              char **text, char *err, size_t errlen);

/* ---- sampling ------------------------------------------------------------------------- */
typedef struct strata_sampler_params {
    float temperature;          /* 0: greedy */
    int   top_k;                /* 0: off */
    float top_p;                /* 1: off */
    float min_p;                /* 0: off */
    float repeat_penalty;       /* 1: off; each distinct id of the window once: l > 0 ? l / p : l * p
                                   (llama.cpp's definition; src/sample/sample.h has the chain) */
    int   repeat_last_n;        /* window of recent tokens the penalty looks at (<= 0: all of them) */
    uint64_t seed;
} strata_sampler_params;
strata_sampler_params strata_sampler_default_params(void);  /* greedy */

/* ---- session -------------------------------------------------------------------------- */
typedef struct strata_session_params {
    int n_ctx;                  /* 0: min(model's training context, 4096) */
    strata_sampler_params sampler;
    int spec_draft;             /* speculative drafts per step, at most 7 (0: off) */
    int spec_min_match;         /* suffix drafter: shortest match worth drafting from (default 2) */
    int kv_type;                /* STRATA_KV_F16 (default) or STRATA_KV_INT8 (CPU and CUDA: the same bytes) */
} strata_session_params;
/* KV cache element types. INT8: each head's row of K or V is stored as int8 blocks of 32 with
 * one f32 scale (act_q8_0's layout: 1.125 bytes per value instead of f16's 2); other bits
 * than f16 (opt-in), still bit-identical across T, threads and speculation. */
enum { STRATA_KV_F16 = 0, STRATA_KV_INT8 = 1 };
strata_session_params strata_session_default_params(void);

strata_session *strata_session_new(strata_model *m, const strata_session_params *p, char *err, size_t errlen);
void strata_session_free(strata_session *s);
/* Forget everything (position 0); keeps the allocation. */
void strata_session_reset(strata_session *s);
int  strata_session_pos(const strata_session *s);
/* Token ids at positions 0..pos-1 (what the KV cache holds). */
const int32_t *strata_session_history(const strata_session *s);
/* Drop positions >= pos (keeps 0..pos-1): prefix reuse across turns, speculative rollback.
 * Logits become unavailable until the next eval. 0, or -1 if pos is out of range or the
 * cache can no longer hold that prefix (sliding-window models keep a bounded ring; rollbacks
 * of up to 8 positions always work): then strata_session_reset and evaluate again. */
int  strata_session_rewind(strata_session *s, int pos);
/* dst starts over holding the first n tokens of src's history: src's KV rows 0..n-1 are copied
 * on the device (a prompt that begins with tokens another session already evaluated: a shared
 * system prompt, the earlier turns of a chat). The rows are the bits src computed, which batch
 * invariance makes the bits dst's own prefill would compute, so what follows is identical.
 * Logits are unavailable until the next eval. 0, or -1 (another model, n out of 0..src's
 * position, rows src no longer keeps, a backend without the copy): dst is unchanged (a device
 * copy that failed midway leaves it reset). */
int  strata_session_copy_prefix(strata_session *dst, const strata_session *src, int n);
int  strata_session_n_ctx(const strata_session *s);
/* The bytes the session's KV cache holds (K and V, every layer, all n_ctx positions allocated
 * at creation); *per_position (when not NULL): the bytes one position takes in every layer.
 * Sliding-window layers keep a ring on the CPU, so the total can be less than
 * per_position * n_ctx. */
size_t strata_session_kv_bytes(const strata_session *s, size_t *per_position);

/* Append tokens to the context (one forward pass over them) and keep the logits of the last
 * one. 0 ok, -1 context full or bad id. */
int strata_session_eval(strata_session *s, const int32_t *ids, int n);
/* One decode step for several sessions of one model: session i appends ids[i] and gets its
 * next logits. The n tokens are columns of the same matvecs (the weights are read once per
 * 8 sessions), and each session's logits are bit-identical to stepping it alone.
 * 0, or -1 (sessions of different models, a full context or a bad id: nothing changed). */
int strata_sessions_step(strata_session *const *ss, const int32_t *ids, int n);
/* The same step with speculative drafts (the server's decode thread). A session drafts when it
 * was created with spec_draft > 0, its sampler is greedy (temperature 0) and max_draft[i] > 0:
 * up to min(its adaptive draft length, max_draft[i]) tokens proposed by its drafter follow ids[i]
 * in the same pass, and the longest prefix equal to what the session's sampler picks from the
 * verified rows is kept (greedy verification, so the output is the tokens plain steps give).
 * Sampling sessions never draft: a seeded draw stays the draw plain steps make.
 * On the CPU the drafts only fill the columns the pass has spare (8 per pass: with n sessions,
 * ceil(n/8) passes carry 8 * ceil(n/8) - n drafts at most), so speculation never adds a pass.
 * accepted[i * STRATA_MAX_DRAFT ..] gets the n_accepted[i] drafts kept after ids[i]: they are in
 * the cache, and the session's logits are those after the last of them (sample the next token
 * from them as usual). max_draft, accepted and n_accepted may be NULL (no drafts): then this is
 * strata_sessions_step. Draft counts go to the sessions' stats (n_drafted, n_accepted,
 * n_windows).
 * next (may be NULL) lets the engine pick the next token itself where that is faster: next[i]
 * gets it, or -1 when the caller samples from the logits as usual. On the GPU a plain greedy
 * session (temperature 0, no repetition penalty) that drafted nothing runs its whole step as one
 * CUDA graph that returns only the argmax; its logits are then unavailable (strata_session_logits
 * gives NULL); a lone one that drafted runs its window (forward + each column's argmax) as one
 * graph replay (STRATA_CUDA_VERIFY_GRAPH), the logits likewise unavailable. A negative max_draft[i] asks to keep session i's logits (no drafts, no pick: a
 * request that wants logprobs). The CPU never picks (next[i] = -1).
 * 0, or -1 as strata_sessions_step (nothing changed, unless a device pass failed midway: then
 * the sessions whose position moved did step, and their n_accepted / next entries are set). */
#define STRATA_MAX_DRAFT 7
int strata_sessions_step_spec(strata_session *const *ss, const int32_t *ids, const int *max_draft, int n,
                              int32_t *accepted, int *n_accepted, int32_t *next);
/* Logits of the last evaluated token (n_vocab floats). */
/* One step of several sessions with a prompt chunk in the same passes (the server's decode
 * loop under a per-step token budget): session p appends the prompt tokens pids[0..pn) (its
 * logits kept afterwards only when want_logits: the chunk that ends its prompt) and sessions
 * ss[0..n) append ids[i] each and get their next logits, all as columns of the same passes
 * (the prompt's first; up to 512 columns, 63 of them decoding). Every logit is the bit a session evaluated alone gets (batch
 * invariance), so a prompt read this way answers what it answers alone. No drafts, no device
 * picks. 0, or -1 (arguments refused: nothing changed; or a device pass failed midway: the
 * sessions whose position moved did step). */
int strata_sessions_step_prefill(strata_session *const *ss, const int32_t *ids, int n, strata_session *p,
                                 const int32_t *pids, int pn, int want_logits);
/* The same with the chunks of np prompts (1..63, distinct sessions): prompt j appends
 * pids[j][0..pns[j]) and keeps its logits when want_logits[j] (its chunk ends its prompt); the
 * prompts' columns go first, in order, then the decoding sessions'. Every logit is still the bit
 * each session gets alone. Same return values. */
int strata_sessions_step_prefill_multi(strata_session *const *ss, const int32_t *ids, int n, strata_session *const *ps,
                                       const int32_t *const *pids, const int *pns, const int *want_logits, int np);
const float *strata_session_logits(const strata_session *s);
/* Sample the next token from the current logits with the session's sampler. */
int32_t strata_session_sample(strata_session *s);
void strata_session_set_sampler(strata_session *s, const strata_sampler_params *p);

/* Constrained sampling (grammars, JSON schemas): fn(logits, n_vocab, user) runs on the
 * sampler's copy of the logits before every host-side draw of this session and sets -inf on the
 * tokens that are not allowed; NULL removes it. While one is set the session does not draft and
 * the device does not pick its tokens (strata_generate and strata_sessions_step_spec sample on
 * the host), so every token goes through fn. */
typedef void (*strata_logits_mask)(float *logits, int n_vocab, void *user);
void strata_session_set_logits_mask(strata_session *s, strata_logits_mask fn, void *user);
/* Optional, with a mask set (after it: setting a mask removes the hook): prepare(user) computes
 * and keeps the mask of the state the tokens taken so far lead to, so that the next fn call only
 * applies it, and returns it as bits (n_vocab bits, LSB first in each byte; NULL out of memory).
 * modes, or -1 for the switches' say:
 *   STRATA_MASK_OVERLAP  strata_generate runs prepare on a helper thread while a step's forward
 *                        pass runs (the state changes only in on_token, before the pass; the pass
 *                        does not touch user): the mask costs no time of its own.
 *                        STRATA_GRAMMAR_OVERLAP (auto: on with CUDA).
 *   STRATA_MASK_DEVICE   greedy decoding (temperature 0, no repetition penalty) on a backend with
 *                        a masked decode step (CUDA): the step stays on the device (the forward
 *                        graph, then an argmax that skips the forbidden tokens, the bits uploaded
 *                        from prepare, which runs while the graph does). STRATA_CUDA_MASK_ARGMAX
 *                        (default off).
 * NULL removes it. Same tokens in every mode; strata_stats.n_mask_overlap / n_mask_device count
 * the steps that took each way. */
typedef const uint8_t *(*strata_logits_mask_prepare)(void *user);
#define STRATA_MASK_OVERLAP 1
#define STRATA_MASK_DEVICE 2
void strata_session_set_logits_mask_prepare(strata_session *s, strata_logits_mask_prepare fn, int modes);
/* Control tokens (chat markup such as <|im_start|>) never appear in constrained text. */
int strata_token_is_control(const strata_model *m, int32_t id);

/* Draft with a second, smaller model of the same vocabulary instead of the suffix drafter
 * (spec_draft > 0 must be set). The draft model must outlive the session. 0 or -1 with err. */
int strata_session_set_draft_model(strata_session *s, strata_model *draft, char *err, size_t errlen);

/* Generation loop: evaluates the prompt, then samples up to max_tokens tokens, calling
 * on_token for each (return nonzero to stop). Stops at end-of-generation tokens.
 * Returns the number of generated tokens or -1. */
typedef int (*strata_token_cb)(int32_t id, void *user);
int strata_generate(strata_session *s, const int32_t *prompt, int n_prompt, int max_tokens,
                    strata_token_cb on_token, void *user);

typedef struct strata_stats {
    int n_prompt, n_gen;
    double t_load, t_prompt, t_gen;       /* seconds */
    double prompt_tps, gen_tps;
    uint64_t weight_bytes_per_token;
    /* speculative decoding */
    long n_drafted, n_accepted, n_windows;
    /* constrained sampling: steps whose mask was prepared during the forward pass */
    long n_mask_overlap;
    long n_mask_device;                   /* greedy steps masked on the device */
} strata_stats;
void strata_session_get_stats(const strata_session *s, strata_stats *st);

/* Print the STRATA_* switch registry. */
void strata_env_print(void *file);

#ifdef __cplusplus
}
#endif
#endif
