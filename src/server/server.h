/* strata serve: the OpenAI-compatible HTTP server. Internal interfaces of src/server.
 *
 *   server.c   libmicrohttpd daemon (one thread per connection), routing, auth, CORS, handlers
 *   slots.c    N slots (one strata_session each), a bounded FIFO queue, one decode thread
 *   request.c  request JSON -> validated gen_request (pure)
 *   openai.c   response / chunk JSON (pure)
 *   stream.c   byte buffers, UTF-8 holdback, stop-string holdback, SSE framing (pure)
 *   metrics.c  Prometheus text exposition (pure)
 *   webui.c    the chat page served at GET /
 *
 * Threads: the MHD connection threads parse requests, tokenize, submit jobs and then wait on the
 * job's condition variable; the single decode thread owns every session and runs the forward
 * passes. They meet only in srv_sched (one mutex). */
#ifndef STRATA_SERVER_H
#define STRATA_SERVER_H
#include <pthread.h>
#include <stdint.h>
#include <jansson.h>
#include "strata.h"
#include "server/request.h"
#include "server/stream.h"

typedef struct srv_options {
    const char *model_path;
    const char *host;           /* "127.0.0.1" */
    int port;                   /* 8080; 0 picks a free port (printed) */
    int parallel;               /* slots decoding together */
    int n_ctx;                  /* per slot; 0: engine default */
    int queue;                  /* requests waiting behind busy slots; more get 429 */
    const char *api_key;        /* NULL: open */
    const char *cors;           /* NULL: no CORS headers */
    int n_threads;              /* 0: engine default */
    size_t max_body;            /* bytes; larger bodies get 413 */
    int spec;                   /* speculative drafts per step for greedy requests (0: off) */
    int step_tokens;            /* --step-tokens: columns per step while a prompt is read (0: SRV_STEP_TOKENS) */
    strata_device device;       /* auto / cpu / cuda */
    int kv_type;                /* STRATA_KV_F16 / STRATA_KV_INT8 (the slots' KV caches) */
    const char *chat_template;  /* Jinja text replacing the model's (--chat-template), or NULL */
    const char *chat_template_name; /* what --chat-template said (a file or a built-in name), for the log */
    int log_requests;           /* -v: one line per request on stderr */
    int log_json;               /* --log-format json: those lines as JSON objects */
    int max_conn;               /* open connections at most (512); more are closed on accept */
    int max_conn_per_ip;        /* open connections per client address (64; 0: no cap) */
    int header_timeout;         /* seconds to send a request's headers (10) */
} srv_options;
srv_options srv_default_options(void);
/* Run until SIGINT/SIGTERM; returns the process exit code. */
int srv_run(const srv_options *o);

/* ---- jobs and the scheduler (slots.c) --------------------------------------------------------- */
typedef enum { JOB_QUEUED, JOB_RUNNING, JOB_DONE } job_state;

typedef struct srv_job {
    /* input: immutable once submitted */
    gen_kind kind;
    int32_t *prompt;
    int n_prompt;
    int n_cached;               /* prompt tokens found in KV caches (not evaluated again) */
    int n_copied;               /* of those, copied from another slot's cache (0 or n_cached) */
    int max_tokens;             /* -1: until end of generation or context */
    strata_sampler_params sampler;
    int has_seed;
    char *stops[GEN_MAX_STOPS];
    int n_stops;
    int logprobs, top_logprobs;
    grammar *grammar;           /* constrained output (owned), or NULL */
    /* output: guarded by srv_sched.mu; the HTTP thread takes text/lp as they arrive */
    job_state state;
    int cancelled;              /* the client went away: the decode thread drops the job */
    sbuf text;                  /* emitted text not yet taken by the HTTP side */
    json_t *lp;                 /* chat-style logprob entries not yet taken, or NULL */
    const char *finish;         /* "stop" / "length" once done; NULL with error[] set on failure */
    char error[256];
    int n_gen;                  /* generated tokens (end-of-generation token not counted) */
    int spec;                   /* speculation on for this request (server --spec, greedy, no logprobs) */
    long n_steps;               /* decode passes this request took part in (one window each) */
    long n_drafted, n_accepted; /* speculative drafts proposed / kept */
    double t_submit, t_start, t_prompt_done, t_end;   /* now_seconds() */
    pthread_cond_t cv;          /* signalled on new text and when done */
    int refs;
} srv_job;

typedef enum { SLOT_IDLE, SLOT_PREFILL, SLOT_DECODE } slot_phase;
/* prompt tokens a slot evaluates per step while no slot decodes */
#define SRV_PREFILL_CHUNK 128
/* token columns per step while a prompt is read beside decoding slots (--step-tokens): one pass
 * of the engine's 8 columns, so a stream waits one pass per token, not a chunk's passes */
#define SRV_STEP_TOKENS 8
#define SRV_STEP_TOKENS_CUDA 1024  /* the GPU's default (2026-12-02, H200: 64 clients 5,283 tok/s at 8, 16,872 at 512;
                                      16 clients' 512-token prompts TTFT median 123-125 ms at 512, 106-110 at 1024) */

typedef struct srv_slot {
    strata_session *sess;
    srv_job *job;               /* NULL when idle */
    slot_phase phase;
    int prefill_pos;            /* prompt tokens in the cache so far (PREFILL) */
    int32_t next_token;         /* sampled last step; evaluated this step */
    int32_t accepted[STRATA_MAX_DRAFT];   /* drafts kept after next_token in this step */
    int n_accepted;
    int32_t picked;             /* next token the engine already chose (GPU greedy graph), or -1 */
    long n_steps;               /* decode passes of the current job */
    long base_drafted, base_accepted;     /* the session's draft counters when the job started */
    strata_detok detok;
    stop_filter filter;
    grammar_match *gm;          /* the job's grammar matcher (its mask is the session's), or NULL */
    int n_gen;
    /* results of one step, published to the job under the lock */
    sbuf staged_text;
    json_t *staged_lp;
    const char *finish;         /* set when this step ended the job */
    char error[256];
} srv_slot;

typedef struct srv_counters {
    unsigned long long prompt_tokens, cached_tokens, generated_tokens, completed, cancelled, rejected, failed;
    unsigned long long copied_tokens;               /* cached tokens copied from another slot's KV cache */
    unsigned long long decode_steps;                /* decode passes summed over slots (one window each) */
    unsigned long long spec_drafted, spec_accepted; /* speculative drafts proposed / kept */
    double prompt_seconds, decode_seconds, busy_seconds;
} srv_counters;

typedef struct srv_sched {
    strata_model *model;
    int n_slots, n_ctx;
    int spec;                   /* drafts per step for greedy requests (0: off) */
    int step_tokens;            /* token columns one step carries while a prompt is read: the decoding
                                   slots' tokens, the rest (at least half) the prompt's */
    srv_slot *slots;
    srv_job **queue;            /* FIFO ring of waiting jobs: q_alloc = q_cap + n_slots cells */
    int q_cap, q_alloc, q_head, q_len;  /* admitted while running + waiting + reserved < n_slots + q_cap */
    int reserved;               /* requests admitted whose prompts are being templated / tokenized */
    pthread_mutex_t mu;
    pthread_cond_t wake;        /* decode thread: new work or stop */
    pthread_t thread;
    int thread_started, stop;
    srv_counters counters;
    uint64_t seed_state;        /* seeds for requests without "seed" */
    grammar_vocab *gvocab;      /* the vocabulary trie for grammars (built by the first grammar job) */
    int overlap_masks;          /* grammar masks computed on a helper thread during the step (GPU) */
} srv_sched;

/* spec: speculative drafts per step (0..STRATA_MAX_DRAFT) for greedy requests without logprobs */
int  sched_init(srv_sched *s, strata_model *m, int n_slots, int queue_cap, int n_ctx, int spec, int kv_type, char *err,
                 size_t errlen);
/* Columns per step while a prompt is read beside decoding slots (SRV_STEP_TOKENS by default). */
void sched_set_step_tokens(srv_sched *s, int n);
void sched_free(srv_sched *s);
/* A job built from a validated request (stops are moved out of r) and prompt tokens (copied). */
srv_job *job_new(gen_request *r, const int32_t *prompt, int n_prompt);
void job_release(srv_sched *s, srv_job *j);
/* Queue a job (the scheduler takes its own reference). -1: slots and queue are full (429), or
 * the scheduler stopped (-2); then *running (slots generating) and *waiting (jobs admitted
 * that no free slot can take yet) say why. */
int  sched_submit(srv_sched *s, srv_job *j, int *running, int *waiting);
/* Admission before work (the HTTP side): sched_reserve takes a place among slots + queue for a
 * request whose prompt is still to be read (0, or -1 / -2 with *running / *waiting as
 * sched_submit), so a full server refuses before templating or tokenizing; the place is then
 * either given back (sched_unreserve: the prompt was refused) or filled by
 * sched_submit_reserved (0, or -2 when the scheduler stopped meanwhile). */
int  sched_reserve(srv_sched *s, int *running, int *waiting);
/* The same check without taking a place (a request whose body is not read yet). */
int  sched_full(srv_sched *s, int *running, int *waiting);
void sched_unreserve(srv_sched *s);
int  sched_submit_reserved(srv_sched *s, srv_job *j);
/* Shutdown: stop the decode thread after its current step and end every running or queued job
 * with the error "the server is shutting down" (their HTTP threads finish the replies). */
void sched_stop(srv_sched *s);
/* Cancel: a queued job leaves the queue now; a running one is dropped at the next step. */
void sched_cancel(srv_sched *s, srv_job *j);
/* Snapshot for /health and /metrics. */
void sched_snapshot(srv_sched *s, int *busy, int *queued, srv_counters *c);

/* ---- metrics (metrics.c) ------------------------------------------------------------------------ */
typedef enum { EP_CHAT, EP_COMPLETIONS, EP_MODELS, EP_HEALTH, EP_METRICS, EP_TOKENIZE, EP_DETOKENIZE,
               EP_WEBUI, EP_OTHER, EP_COUNT } srv_endpoint;
#define METRIC_CODES 10         /* 200 204 400 401 404 405 413 429 500 503 (others count as 500) */
int  metrics_code_index(int status);
extern const int metrics_codes[METRIC_CODES];
extern const char *const metrics_endpoint_names[EP_COUNT];

/* the HTTP side's guards: connection caps and deadlines, the tokenizer pool */
typedef struct srv_http_counters {
    int conns_open;
    unsigned long long refused_total, refused_per_ip, timed_out;
    int tok_pool, tok_busy, tok_peak, tok_waiting;
} srv_http_counters;

typedef struct srv_metrics {
    int ready, slots_total, slots_busy, queue_depth, queue_capacity;
    srv_http_counters h;
    unsigned long long requests[EP_COUNT][METRIC_CODES];
    srv_counters c;
} srv_metrics;
void metrics_render(sbuf *out, const srv_metrics *m);

extern const char srv_webui_html[];
#endif
