/* Prometheus text exposition (format 0.0.4) of the server's counters: see server.h. */
#include <stdio.h>
#include "server/server.h"

const int metrics_codes[METRIC_CODES] = { 200, 204, 400, 401, 404, 405, 413, 429, 500, 503 };
const char *const metrics_endpoint_names[EP_COUNT] = {
    "chat_completions", "completions", "models", "health", "metrics", "tokenize", "detokenize", "webui", "other" };

int metrics_code_index(int status) {
    for (int i = 0; i < METRIC_CODES; i++) if (metrics_codes[i] == status) return i;
    return 8;   /* 500 */
}

static void family(sbuf *o, const char *name, const char *type, const char *help) {
    sbuf_printf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void metrics_render(sbuf *o, const srv_metrics *m) {
    family(o, "strata_ready", "gauge", "1 once the model is loaded and requests are served");
    sbuf_printf(o, "strata_ready %d\n", m->ready);
    family(o, "strata_http_requests_total", "counter", "HTTP requests answered, by endpoint and status code");
    for (int e = 0; e < EP_COUNT; e++)
        for (int c = 0; c < METRIC_CODES; c++)
            if (m->requests[e][c])
                sbuf_printf(o, "strata_http_requests_total{endpoint=\"%s\",code=\"%d\"} %llu\n",
                            metrics_endpoint_names[e], metrics_codes[c], m->requests[e][c]);
    family(o, "strata_slots", "gauge", "generation slots (--parallel)");
    sbuf_printf(o, "strata_slots %d\n", m->slots_total);
    family(o, "strata_slots_busy", "gauge", "slots generating now");
    sbuf_printf(o, "strata_slots_busy %d\n", m->slots_busy);
    family(o, "strata_queue_depth", "gauge", "requests waiting for a slot");
    sbuf_printf(o, "strata_queue_depth %d\n", m->queue_depth);
    family(o, "strata_queue_capacity", "gauge", "requests that may wait (--queue); more get 429");
    sbuf_printf(o, "strata_queue_capacity %d\n", m->queue_capacity);
    family(o, "strata_requests_completed_total", "counter", "generations that ran to a stop or length limit");
    sbuf_printf(o, "strata_requests_completed_total %llu\n", m->c.completed);
    family(o, "strata_requests_cancelled_total", "counter", "generations dropped because the client went away");
    sbuf_printf(o, "strata_requests_cancelled_total %llu\n", m->c.cancelled);
    family(o, "strata_requests_rejected_total", "counter", "requests refused with 429 (slots and queue full)");
    sbuf_printf(o, "strata_requests_rejected_total %llu\n", m->c.rejected);
    family(o, "strata_requests_failed_total", "counter", "generations that failed inside the engine");
    sbuf_printf(o, "strata_requests_failed_total %llu\n", m->c.failed);
    family(o, "strata_prompt_tokens_total", "counter", "prompt tokens evaluated");
    sbuf_printf(o, "strata_prompt_tokens_total %llu\n", m->c.prompt_tokens);
    family(o, "strata_prompt_tokens_cached_total", "counter", "prompt tokens reused from a slot's KV cache (prefix reuse)");
    sbuf_printf(o, "strata_prompt_tokens_cached_total %llu\n", m->c.cached_tokens);
    family(o, "strata_prompt_tokens_copied_total", "counter",
           "of the cached prompt tokens, those copied from another slot's KV cache (the prefix cache across slots)");
    sbuf_printf(o, "strata_prompt_tokens_copied_total %llu\n", m->c.copied_tokens);
    family(o, "strata_generated_tokens_total", "counter", "tokens generated");
    sbuf_printf(o, "strata_generated_tokens_total %llu\n", m->c.generated_tokens);
    family(o, "strata_prompt_seconds_total", "counter", "seconds spent evaluating prompts (per request, summed)");
    sbuf_printf(o, "strata_prompt_seconds_total %.6f\n", m->c.prompt_seconds);
    family(o, "strata_busy_seconds_total", "counter", "seconds the decode thread spent in forward passes");
    sbuf_printf(o, "strata_busy_seconds_total %.6f\n", m->c.busy_seconds);
    family(o, "strata_decode_passes_total", "counter", "decode passes summed over requests (one window of one request each)");
    sbuf_printf(o, "strata_decode_passes_total %llu\n", m->c.decode_steps);
    family(o, "strata_spec_drafted_tokens_total", "counter", "speculative draft tokens verified (--spec)");
    sbuf_printf(o, "strata_spec_drafted_tokens_total %llu\n", m->c.spec_drafted);
    family(o, "strata_spec_accepted_tokens_total", "counter", "speculative draft tokens the model agreed with (extra tokens of their pass)");
    sbuf_printf(o, "strata_spec_accepted_tokens_total %llu\n", m->c.spec_accepted);
    family(o, "strata_spec_acceptance_rate", "gauge", "accepted / drafted tokens since start");
    sbuf_printf(o, "strata_spec_acceptance_rate %.6f\n",
                m->c.spec_drafted > 0 ? (double)m->c.spec_accepted / (double)m->c.spec_drafted : 0.0);
    family(o, "strata_tokens_per_pass", "gauge", "(decode passes + accepted drafts) / decode passes since start: 1 without speculation");
    sbuf_printf(o, "strata_tokens_per_pass %.6f\n",
                m->c.decode_steps > 0 ? (double)(m->c.decode_steps + m->c.spec_accepted) / (double)m->c.decode_steps : 0.0);
    family(o, "strata_prompt_tokens_per_second", "gauge", "prompt tokens / prompt seconds since start");
    sbuf_printf(o, "strata_prompt_tokens_per_second %.3f\n",
                m->c.prompt_seconds > 0 ? (double)m->c.prompt_tokens / m->c.prompt_seconds : 0.0);
    family(o, "strata_connections_open", "gauge", "HTTP connections open now");
    sbuf_printf(o, "strata_connections_open %d\n", m->h.conns_open);
    family(o, "strata_connections_refused_total", "counter", "connections closed on accept: over --max-conn or --max-conn-per-ip");
    sbuf_printf(o, "strata_connections_refused_total{reason=\"total\"} %llu\n", m->h.refused_total);
    sbuf_printf(o, "strata_connections_refused_total{reason=\"per_ip\"} %llu\n", m->h.refused_per_ip);
    family(o, "strata_connections_timed_out_total", "counter", "connections closed for not sending a request in time (--header-timeout)");
    sbuf_printf(o, "strata_connections_timed_out_total %llu\n", m->h.timed_out);
    family(o, "strata_tokenizer_pool", "gauge", "prompts that may be templated and tokenized at the same time");
    sbuf_printf(o, "strata_tokenizer_pool %d\n", m->h.tok_pool);
    family(o, "strata_tokenizer_busy", "gauge", "prompts being templated and tokenized now");
    sbuf_printf(o, "strata_tokenizer_busy %d\n", m->h.tok_busy);
    family(o, "strata_tokenizer_busy_peak", "gauge", "most prompts tokenized at the same time since start");
    sbuf_printf(o, "strata_tokenizer_busy_peak %d\n", m->h.tok_peak);
    family(o, "strata_tokenizer_waiting", "gauge", "requests waiting for the tokenizer pool");
    sbuf_printf(o, "strata_tokenizer_waiting %d\n", m->h.tok_waiting);
    family(o, "strata_tokens_per_second", "gauge", "generated tokens / busy seconds since start (aggregate decode rate)");
    sbuf_printf(o, "strata_tokens_per_second %.3f\n",
                m->c.busy_seconds > 0 ? (double)m->c.generated_tokens / m->c.busy_seconds : 0.0);
}
