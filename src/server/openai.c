/* OpenAI response objects: see openai.h. */
#include "server/openai.h"
#include <stdlib.h>
#include <string.h>

#define DUMP_FLAGS (JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(7))

char *oai_dump(const json_t *j) { return json_dumps(j, DUMP_FLAGS); }

/* Valid-UTF-8 JSON string of raw bytes. */
static json_t *text_json(const char *s, size_t n) {
    if (!s) return json_string("");
    if (utf8_valid(s, n)) return json_stringn(s, n);
    sbuf b; sbuf_init(&b);
    utf8_append_sanitized(&b, s, n);
    json_t *j = json_stringn(b.p ? b.p : "", b.len);
    sbuf_free(&b);
    return j;
}

static json_t *meta_object(const oai_meta *m, const char *object) {
    return json_pack("{s:s, s:s, s:I, s:s, s:s}", "id", m->id, "object", object, "created", (json_int_t)m->created,
                     "model", m->model, "system_fingerprint", "strata");
}

json_t *oai_stream_chunk(const oai_meta *m, int role, const char *text, size_t n, const char *finish, json_t *logprobs) {
    int chat = m->kind == GEN_CHAT;
    json_t *o = meta_object(m, chat ? "chat.completion.chunk" : "text_completion");
    json_t *choice = json_object();
    json_object_set_new(choice, "index", json_integer(0));
    if (chat) {
        json_t *delta = json_object();
        if (role) {
            json_object_set_new(delta, "role", json_string("assistant"));
            json_object_set_new(delta, "content", text_json(text, text ? n : 0));
        } else if (text) {
            json_object_set_new(delta, "content", text_json(text, n));
        }
        json_object_set_new(choice, "delta", delta);
    } else {
        json_object_set_new(choice, "text", text_json(text, text ? n : 0));
    }
    json_object_set_new(choice, "logprobs", logprobs ? logprobs : json_null());
    json_object_set_new(choice, "finish_reason", finish ? json_string(finish) : json_null());
    json_t *choices = json_array();
    json_array_append_new(choices, choice);
    json_object_set_new(o, "choices", choices);
    if (m->usage_null) json_object_set_new(o, "usage", json_null());
    return o;
}

json_t *oai_usage(int n_prompt, int n_gen, int n_cached) {
    return json_pack("{s:i, s:i, s:i, s:{s:i}}", "prompt_tokens", n_prompt, "completion_tokens", n_gen,
                     "total_tokens", n_prompt + n_gen, "prompt_tokens_details", "cached_tokens", n_cached);
}

json_t *oai_usage_chunk(const oai_meta *m, int n_prompt, int n_gen, int n_cached) {
    json_t *o = meta_object(m, m->kind == GEN_CHAT ? "chat.completion.chunk" : "text_completion");
    json_object_set_new(o, "choices", json_array());
    json_object_set_new(o, "usage", oai_usage(n_prompt, n_gen, n_cached));
    return o;
}

static double per_second(int n, double ms) { return ms > 0 ? n * 1000.0 / ms : 0.0; }

json_t *oai_timings_json(const oai_timings *t) {
    json_t *o = json_pack("{s:i, s:i, s:f, s:f, s:i, s:f, s:f}", "cache_n", t->cache_n,
        "prompt_n", t->prompt_n, "prompt_ms", t->prompt_ms, "prompt_per_second", per_second(t->prompt_n, t->prompt_ms),
        "predicted_n", t->predicted_n, "predicted_ms", t->predicted_ms,
        "predicted_per_second", per_second(t->predicted_n, t->predicted_ms));
    if (o && t->spec) {
        /* tokens per pass: what one decode pass (one verification window) yielded, 1 without
         * accepted drafts; the first token comes from the prompt pass and is not counted */
        json_object_set_new(o, "draft_n", json_integer(t->n_drafted));
        json_object_set_new(o, "draft_n_accepted", json_integer(t->n_accepted));
        json_object_set_new(o, "draft_acceptance_rate", json_real(t->n_drafted > 0 ? (double)t->n_accepted / t->n_drafted : 0.0));
        json_object_set_new(o, "decode_passes", json_integer(t->n_steps));
        json_object_set_new(o, "tokens_per_pass", json_real(t->n_steps > 0 ? (double)(t->n_steps + t->n_accepted) / t->n_steps : 0.0));
    }
    return o;
}

json_t *oai_response(const oai_meta *m, const char *text, size_t n, const char *finish, json_t *logprobs,
                     int n_prompt, int n_gen, int n_cached, const oai_timings *t) {
    int chat = m->kind == GEN_CHAT;
    json_t *o = meta_object(m, chat ? "chat.completion" : "text_completion");
    json_t *choice = json_object();
    json_object_set_new(choice, "index", json_integer(0));
    if (chat)
        json_object_set_new(choice, "message", json_pack("{s:s, s:o, s:n}", "role", "assistant",
                                                           "content", text_json(text, n), "refusal"));
    else
        json_object_set_new(choice, "text", text_json(text, n));
    json_object_set_new(choice, "logprobs", logprobs ? logprobs : json_null());
    json_object_set_new(choice, "finish_reason", json_string(finish ? finish : "stop"));
    json_t *choices = json_array();
    json_array_append_new(choices, choice);
    json_object_set_new(o, "choices", choices);
    json_object_set_new(o, "usage", oai_usage(n_prompt, n_gen, n_cached));
    if (t) json_object_set_new(o, "timings", oai_timings_json(t));
    return o;
}

static json_t *bytes_json(const char *s, size_t n) {
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(a, json_integer((unsigned char)s[i]));
    return a;
}

json_t *oai_logprob_entry(const char *tok, size_t n, float logprob, int n_top,
                          const char *const *top_tok, const size_t *top_len, const float *top_lp) {
    json_t *e = json_object();
    json_object_set_new(e, "token", text_json(tok, n));
    json_object_set_new(e, "logprob", json_real(logprob));
    json_object_set_new(e, "bytes", bytes_json(tok, n));
    json_t *top = json_array();
    for (int i = 0; i < n_top; i++) {
        json_t *t = json_object();
        json_object_set_new(t, "token", text_json(top_tok[i], top_len[i]));
        json_object_set_new(t, "logprob", json_real(top_lp[i]));
        json_object_set_new(t, "bytes", bytes_json(top_tok[i], top_len[i]));
        json_array_append_new(top, t);
    }
    json_object_set_new(e, "top_logprobs", top);
    return e;
}

json_t *oai_logprobs_shape(gen_kind kind, json_t *entries, size_t *text_offset) {
    if (kind == GEN_CHAT) return json_pack("{s:o, s:n}", "content", entries, "refusal");
    json_t *tokens = json_array(), *lps = json_array(), *tops = json_array(), *offs = json_array();
    size_t i;
    json_t *e;
    json_array_foreach(entries, i, e) {
        json_t *tok = json_object_get(e, "token");
        json_array_append(tokens, tok);
        json_array_append(lps, json_object_get(e, "logprob"));
        json_t *top = json_object();
        size_t k;
        json_t *t;
        json_array_foreach(json_object_get(e, "top_logprobs"), k, t)
            json_object_set(top, json_string_value(json_object_get(t, "token")), json_object_get(t, "logprob"));
        json_array_append_new(tops, top);
        json_array_append_new(offs, json_integer((json_int_t)*text_offset));
        *text_offset += json_array_size(json_object_get(e, "bytes"));
    }
    json_decref(entries);
    return json_pack("{s:o, s:o, s:o, s:o}", "tokens", tokens, "token_logprobs", lps, "top_logprobs", tops,
                     "text_offset", offs);
}

void sse_append_json(sbuf *out, json_t *j) {
    char *s = j ? oai_dump(j) : NULL;
    if (s) sse_append_event(out, s, strlen(s));
    else out->oom = 1;
    free(s);
    json_decref(j);
}
