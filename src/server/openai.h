/* OpenAI response objects: completions, streamed chunks, usage, logprobs. Pure JSON building
 * (jansson), so tests/test_server.c checks the exact bytes of chunks without a model.
 *
 *   chat, non-stream:  {"id":"chatcmpl-..","object":"chat.completion","created":T,"model":M,
 *                       "system_fingerprint":"strata","choices":[{"index":0,"message":
 *                       {"role":"assistant","content":TEXT},"logprobs":null,"finish_reason":"stop"}],
 *                       "usage":{...},"timings":{...}}
 *   chat, stream:      {"id",..,"object":"chat.completion.chunk",..,"choices":[{"index":0,
 *                       "delta":{"content":D},"logprobs":null,"finish_reason":null}]}
 *                      (first chunk delta {"role":"assistant","content":""}, last delta {} with
 *                       finish_reason; with include_usage every chunk has "usage":null and a
 *                       final chunk has "choices":[] and the usage)
 *   completions:       object "text_completion", choices [{"text","index","logprobs","finish_reason"}] */
#ifndef STRATA_SERVER_OPENAI_H
#define STRATA_SERVER_OPENAI_H
#include <jansson.h>
#include "server/request.h"
#include "server/stream.h"

typedef struct oai_meta {
    const char *id;             /* "chatcmpl-..." / "cmpl-..." */
    const char *model;
    long long created;          /* unix seconds */
    gen_kind kind;
    int usage_null;             /* stream with include_usage: chunks carry "usage": null */
} oai_meta;

typedef struct oai_timings {
    int cache_n;                /* prompt tokens reused from the slot's KV cache */
    int prompt_n, predicted_n;  /* prompt tokens evaluated; tokens generated */
    double prompt_ms, predicted_ms;
    int spec;                   /* speculation was on for the request: the draft fields appear */
    long n_steps;               /* decode passes the request took part in */
    long n_drafted, n_accepted; /* speculative drafts proposed / kept */
} oai_timings;

/* A streamed chunk. role: chat's first chunk. text may be NULL. finish: NULL or "stop"/"length".
 * logprobs: chat-style entry array (see oai_logprob_entry) or NULL; stolen. */
json_t *oai_stream_chunk(const oai_meta *m, int role, const char *text, size_t n, const char *finish, json_t *logprobs);
/* The last chunk of a stream with include_usage: "choices": [] and the usage. */
json_t *oai_usage_chunk(const oai_meta *m, int n_prompt, int n_gen, int n_cached);
/* {"prompt_tokens","completion_tokens","total_tokens","prompt_tokens_details":{"cached_tokens"}} */
json_t *oai_usage(int n_prompt, int n_gen, int n_cached);
json_t *oai_timings_json(const oai_timings *t);
/* The whole non-stream response. logprobs stolen (may be NULL). */
json_t *oai_response(const oai_meta *m, const char *text, size_t n, const char *finish, json_t *logprobs,
                     int n_prompt, int n_gen, int n_cached, const oai_timings *t);

/* One chat logprob entry: {"token":T,"logprob":L,"bytes":[..],"top_logprobs":[{"token","logprob","bytes"}..]}.
 * Token texts are raw bytes (may be part of a UTF-8 character: "token" gets U+FFFD there, "bytes"
 * keeps them exact). */
json_t *oai_logprob_entry(const char *tok, size_t n, float logprob, int n_top,
                          const char *const *top_tok, const size_t *top_len, const float *top_lp);
/* Shape a list of chat entries for the response: chat -> {"content":[entries]};
 * completions -> {"tokens":[..],"token_logprobs":[..],"top_logprobs":[{tok:lp}],"text_offset":[..]}
 * with offsets counted from *text_offset (advanced). entries is stolen. */
json_t *oai_logprobs_shape(gen_kind kind, json_t *entries, size_t *text_offset);

/* Frame as one SSE event (compact JSON on one line) and release j. */
void sse_append_json(sbuf *out, json_t *j);
/* Compact JSON text (caller frees with free()). */
char *oai_dump(const json_t *j);
#endif
