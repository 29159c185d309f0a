/* The HTTP side of strata serve: libmicrohttpd daemon, routing, auth, CORS, the handlers.
 *
 * Threading: MHD runs one thread per connection, so a handler may block. A generation request
 * is parsed and tokenized in its connection thread, submitted to the scheduler (slots.c), and
 * then that thread waits on the job's condition variable: for a non-stream reply until the job
 * is done, for a stream inside the content-reader callback until new text arrives. While it
 * waits it polls its socket for a hang-up (POLLRDHUP) every WAIT_SLICE_MS, so a client that
 * goes away has its job cancelled within one decode step or so, and its slot freed. */
#include "server/server.h"
#include "server/tools.h"
#include "grammar/grammar.h"
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include "core/util.h"
#include "server/openai.h"
#include "engine/chat_builtin.h"

#define WAIT_SLICE_MS 20
#define BODY_TIMEOUT_S 60           /* a request's body must arrive within this after its headers */
#define SHUTDOWN_GRACE_S 5          /* open replies get this long to end on SIGTERM */
#define TOKENIZE_WAIT_S 30          /* longest wait for the tokenizer pool before 429 */
#define TOKENIZE_INLINE_BYTES 16384 /* texts up to this are templated + tokenized in the connection thread */

/* One open connection (MHD's socket context), for the caps and the deadlines. */
typedef struct conn_track {
    int fd;
    int family;
    unsigned char addr[16];
    double deadline;            /* the request (headers, then body) must be in by then; 0: none */
    int killed;
    struct conn_track *prev, *next;
} conn_track;

enum { SRV_LOADING, SRV_READY, SRV_FAILED };

typedef struct srv {
    srv_options opt;
    struct MHD_Daemon *daemon;
    atomic_int state;
    atomic_int stopping;
    strata_model *model;
    char model_id[256];
    long long t_loaded;
    srv_sched sched;
    char *tmpl;                 /* --chat-template: the template text, or NULL (the model's) */
    pthread_mutex_t stats_mu;
    unsigned long long requests[EP_COUNT][METRIC_CODES];
    /* connections: caps on accept, header/body deadlines (conn_watchdog) */
    pthread_mutex_t conn_mu;
    pthread_cond_t conn_cv;
    conn_track *conns;
    srv_http_counters http;     /* conns_open, refusals, time-outs, tokenizer pool (under conn_mu) */
    double refusal_logged_at;
    unsigned long long refusals_unlogged;
    pthread_t watchdog;
    int watchdog_started;
    /* the tokenizer pool: http.tok_pool worker threads at a lower priority template and tokenize
     * prompts (and /tokenize texts) from a FIFO of tasks (under conn_mu; tok_cv wakes the workers,
     * tok_done_cv the connection threads waiting for their task) */
    pthread_cond_t tok_cv, tok_done_cv;
    struct tok_task *tok_head, *tok_tail;
    pthread_t *tok_threads;
    int n_tok_threads;
    size_t max_prompt_bytes;    /* n_ctx x the longest token: more text cannot fit the context */
    int max_token_len;
    atomic_int open_replies;    /* generation replies not yet finished (shutdown waits for them) */
} srv;

srv_options srv_default_options(void) {
    srv_options o;
    memset(&o, 0, sizeof o);
    o.host = "127.0.0.1";
    o.port = 8080;
    o.parallel = 1;
    o.queue = 16;
    o.max_body = 8u << 20;
    o.device = STRATA_DEVICE_AUTO;
    o.max_conn = 512;
    o.max_conn_per_ip = 64;
    o.header_timeout = 10;
    return o;
}

/* ---- per-connection state ---------------------------------------------------------------------- */
typedef struct conn_ctx {
    sbuf body;
    int too_big;
    srv_endpoint ep;
    /* the request log (-v): filled as the request goes, printed when MHD completes it */
    char method[16], path[160];
    double t0;                  /* first callback */
    int gen;                    /* a generation: the token counts below are set */
    int n_prompt, n_cached, n_gen, stream;
    double ttft_ms;             /* submit to the first token (queue wait + prompt) */
    const char *finish;         /* "stop" / "length" / NULL (failed or cancelled) */
    struct gen_ctx *live;       /* the reply not yet logged (its gen_ctx), or NULL */
} conn_ctx;

/* Copy a finished (or abandoned) job's figures into the request log's record. Takes the lock. */
static void log_job(srv_sched *sc, conn_ctx *cc, const srv_job *j, int stream) {
    if (!cc) return;
    pthread_mutex_lock(&sc->mu);
    cc->gen = 1;
    cc->stream = stream;
    cc->n_prompt = j->n_prompt;
    cc->n_cached = j->n_cached;
    cc->n_gen = j->n_gen;
    cc->ttft_ms = j->t_prompt_done > 0 ? (j->t_prompt_done - j->t_submit) * 1e3 : -1;
    cc->finish = j->state == JOB_DONE ? j->finish : NULL;
    pthread_mutex_unlock(&sc->mu);
}

static void count_status(srv *s, srv_endpoint ep, int status) {
    pthread_mutex_lock(&s->stats_mu);
    s->requests[ep][metrics_code_index(status)]++;
    pthread_mutex_unlock(&s->stats_mu);
}

static void add_cors(srv *s, struct MHD_Response *r) {
    if (!s->opt.cors) return;
    MHD_add_response_header(r, "Access-Control-Allow-Origin", s->opt.cors);
    if (strcmp(s->opt.cors, "*")) MHD_add_response_header(r, "Vary", "Origin");
}

static enum MHD_Result send_bytes(srv *s, struct MHD_Connection *c, srv_endpoint ep, int status,
                                  const char *ctype, const char *body, size_t n, int retry_after) {
    struct MHD_Response *r = MHD_create_response_from_buffer(n, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, "Content-Type", ctype);
    if (retry_after > 0) {
        char v[16];
        snprintf(v, sizeof v, "%d", retry_after);
        MHD_add_response_header(r, "Retry-After", v);
    }
    add_cors(s, r);
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    count_status(s, ep, status);
    return ret;
}

static enum MHD_Result send_json(srv *s, struct MHD_Connection *c, srv_endpoint ep, int status, json_t *j,
                                 int retry_after) {
    char *txt = j ? oai_dump(j) : NULL;
    json_decref(j);
    if (!txt) {
        static const char oom[] = "{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\",\"param\":null,\"code\":null}}";
        return send_bytes(s, c, ep, 500, "application/json", oom, sizeof oom - 1, 0);
    }
    size_t n = strlen(txt);
    txt[n] = '\n';   /* replaces the NUL: send n + 1 bytes, text ends with a newline */
    enum MHD_Result ret = send_bytes(s, c, ep, status, "application/json", txt, n + 1, retry_after);
    free(txt);
    return ret;
}

static enum MHD_Result send_error(srv *s, struct MHD_Connection *c, srv_endpoint ep, const api_error *e) {
    return send_json(s, c, ep, e->status, api_error_json(e), e->status == 429 || e->status == 503 ? 1 : 0);
}

/* ---- waiting for the decode thread --------------------------------------------------------------- */
static int conn_fd(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    return ci ? ci->connect_fd : -1;
}

/* The client closed its end (or the socket failed): nobody will read the reply. */
static int peer_gone(int fd) {
    if (fd < 0) return 0;
    struct pollfd p = { .fd = fd, .events = POLLRDHUP };
    if (poll(&p, 1, 0) <= 0) return 0;
    return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

/* Wait until the job has news (text, logprobs, done) or, with until_done, until it is done.
 * 0: news; -1: the client went away or the server stops. Called without the lock. */
static int wait_job(srv *s, srv_job *j, int fd, int until_done) {
    srv_sched *sc = &s->sched;
    for (;;) {
        pthread_mutex_lock(&sc->mu);
        int ready = j->state == JOB_DONE || (!until_done && (j->text.len || j->lp));
        if (!ready) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += WAIT_SLICE_MS * 1000000L;
            if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
            pthread_cond_timedwait(&j->cv, &sc->mu, &ts);
            ready = j->state == JOB_DONE || (!until_done && (j->text.len || j->lp));
        }
        pthread_mutex_unlock(&sc->mu);
        if (ready) return 0;
        if (peer_gone(fd)) return -1;   /* on shutdown sched_stop ends the job: it is answered */
    }
}

/* ---- generation ------------------------------------------------------------------------------------ */
typedef struct gen_ctx {
    srv *s;
    srv_job *job;
    srv_endpoint ep;
    char id[48];
    oai_meta meta;
    int fd;
    int include_usage;
    sbuf out;                   /* SSE bytes ready to send; out.p[sent..len) not yet sent */
    size_t sent;
    int finished;               /* [DONE] is in out */
    size_t text_offset;         /* completions logprobs text_offset */
    conn_ctx *cc;               /* the request log's record; NULL once the stream has ended */
    tool_format tools;          /* tools active: the reply is parsed for calls (TOOLFMT_NONE: off) */
    int tools_forced;           /* tool_choice required / named: the whole reply is calls */
    sbuf held;                  /* stream with tools: all the text so far */
    size_t streamed;            /* held[0..streamed) is settled: sent as content or skipped */
} gen_ctx;

/* The reply with tools active: tool calls parsed out of the text. */
static json_t *tools_reply(const gen_ctx *g, const char *text, size_t n, char **content) {
    return tool_calls_parse(g->tools, text, n, (unsigned long long)g->meta.created ^ (unsigned long long)(uintptr_t)g,
                            content);
}

static void make_id(char *id, size_t n, const char *prefix) {
    static const char al[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    static _Atomic uint64_t counter;
    uint64_t x = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ull ^ (atomic_fetch_add(&counter, 1) + 1) * 0xbf58476d1ce4e5b9ull;
    size_t p = (size_t)snprintf(id, n, "%s", prefix);
    for (int i = 0; i < 24 && p + 1 < n; i++) {
        x ^= x >> 31; x *= 0x94d049bb133111ebull; x ^= x >> 29;
        id[p++] = al[x % (sizeof al - 1)];
    }
    id[p] = 0;
}

/* Take what the decode thread has produced (under the lock). */
static void take_output(srv *s, srv_job *j, sbuf *text, json_t **lp, int *done) {
    pthread_mutex_lock(&s->sched.mu);
    if (j->text.len) sbuf_append(text, j->text.p, j->text.len);
    sbuf_clear(&j->text);
    *lp = j->lp;
    j->lp = NULL;
    *done = j->state == JOB_DONE;
    pthread_mutex_unlock(&s->sched.mu);
}

static oai_timings job_timings(const srv_job *j) {
    oai_timings t;
    memset(&t, 0, sizeof t);
    t.cache_n = j->n_cached;
    t.prompt_n = j->n_prompt - j->n_cached;
    t.prompt_ms = (j->t_prompt_done - j->t_start) * 1e3;
    t.predicted_n = j->n_gen;
    t.predicted_ms = (j->t_end - j->t_prompt_done) * 1e3;
    t.spec = j->spec;
    t.n_steps = j->n_steps;
    t.n_drafted = j->n_drafted;
    t.n_accepted = j->n_accepted;
    return t;
}

static json_t *error_event(const char *msg) {
    api_error e;
    api_error_set(&e, 500, "server_error", NULL, NULL, "%s", msg);
    return api_error_json(&e);
}

/* Turn the job's news into SSE bytes in g->out. -1: the client is gone. */
static int stream_pull(gen_ctx *g) {
    srv *s = g->s;
    srv_job *j = g->job;
    if (wait_job(s, j, g->fd, 0)) return -1;
    sbuf text; sbuf_init(&text);
    json_t *lp = NULL;
    int done = 0;
    take_output(s, j, &text, &lp, &done);
    json_t *lpj = lp ? oai_logprobs_shape(g->meta.kind, lp, &g->text_offset) : NULL;
    if (g->tools) {
        /* plain text is sent as soon as it cannot be the start of a call; from a call's marker
         * on the text is held, and the calls go out when the reply is complete */
        if (text.len) sbuf_append(&g->held, text.p, text.len);
        size_t ws = 0, we = 0;
        if (!g->tools_forced) tool_text_window(g->tools, g->held.p ? g->held.p : "", g->held.len, &ws, &we);
        if (g->streamed < ws) g->streamed = ws;
        if (we > g->streamed) {
            sse_append_json(&g->out, oai_stream_chunk(&g->meta, 0, g->held.p + g->streamed, we - g->streamed, NULL, lpj));
            g->streamed = we;
            lpj = NULL;
        }
        if (lpj) sse_append_json(&g->out, oai_stream_chunk(&g->meta, 0, "", 0, NULL, lpj));
    } else if (text.len || lpj)
        sse_append_json(&g->out, oai_stream_chunk(&g->meta, 0, text.p ? text.p : "", text.len, NULL, lpj));
    sbuf_free(&text);
    const char *finish = j->finish;
    if (done && g->tools && j->finish) {
        /* the rest of the reply: calls, and any text outside them not sent yet */
        const char *rest = g->held.p ? g->held.p + g->streamed : "";
        size_t rl = g->held.len - g->streamed;
        char *content = NULL;
        json_t *calls = tools_reply(g, rest, rl, &content);
        const char *ct = json_array_size(calls) ? content : rest;
        size_t cl = json_array_size(calls) ? (content ? strlen(content) : 0) : rl;
        if (cl) sse_append_json(&g->out, oai_stream_chunk(&g->meta, 0, ct, cl, NULL, NULL));
        size_t i;
        json_t *call;
        json_array_foreach(calls, i, call) {
            /* one delta per call: index, id, type, the name and the whole arguments */
            json_t *ch = oai_stream_chunk(&g->meta, 0, NULL, 0, NULL, NULL);
            json_t *delta = json_object_get(json_array_get(json_object_get(ch, "choices"), 0), "delta");
            json_object_del(delta, "content");
            json_t *d = json_deep_copy(call);
            json_object_set_new(d, "index", json_integer((json_int_t)i));
            json_t *arr = json_array();
            json_array_append_new(arr, d);
            json_object_set_new(delta, "tool_calls", arr);
            sse_append_json(&g->out, ch);
        }
        if (json_array_size(calls) && !strcmp(j->finish, "stop")) finish = "tool_calls";
        json_decref(calls);
        st_free(content);
    }
    if (done) {
        if (!j->finish) {
            sse_append_json(&g->out, error_event(j->error[0] ? j->error : "generation failed"));
        } else {
            sse_append_json(&g->out, oai_stream_chunk(&g->meta, 0, g->meta.kind == GEN_CHAT ? NULL : "", 0, finish, NULL));
            if (g->include_usage) sse_append_json(&g->out, oai_usage_chunk(&g->meta, j->n_prompt, j->n_gen, j->n_cached));
        }
        sse_append_done(&g->out);
        g->finished = 1;
        if (g->cc) { log_job(&s->sched, g->cc, j, 1); g->cc->live = NULL; g->cc = NULL; }
    }
    return g->out.oom ? -1 : 0;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    gen_ctx *g = cls;
    while (g->sent >= g->out.len) {
        sbuf_clear(&g->out);
        g->sent = 0;
        if (g->finished) return MHD_CONTENT_READER_END_OF_STREAM;
        if (stream_pull(g)) {
            if (g->cc) { log_job(&g->s->sched, g->cc, g->job, 1); g->cc->live = NULL; g->cc = NULL; }   /* the client went away */
            sched_cancel(&g->s->sched, g->job);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
    }
    size_t n = g->out.len - g->sent;
    if (n > max) n = max;
    memcpy(buf, g->out.p + g->sent, n);
    g->sent += n;
    return (ssize_t)n;
}

static void gen_ctx_free(gen_ctx *g) {
    if (!g) return;
    atomic_fetch_sub(&g->s->open_replies, 1);
    if (g->cc) g->cc->live = NULL;
    if (g->job) {
        sched_cancel(&g->s->sched, g->job);   /* no-op once done */
        job_release(&g->s->sched, g->job);
    }
    sbuf_free(&g->out);
    sbuf_free(&g->held);
    st_free(g);
}
static void stream_free(void *cls) { gen_ctx_free(cls); }

/* Prompt tokens for a request: chat template or prompt text, tokenized; or given ids. */
static int build_prompt(srv *s, gen_request *r, int32_t **ids, int *n, api_error *e) {
    char err[256] = "";
    char *text = NULL;
    if (r->kind == GEN_COMPLETION && r->prompt_ids) {
        int nv = strata_n_vocab(s->model);
        for (int i = 0; i < r->n_prompt_ids; i++)
            if (r->prompt_ids[i] >= nv)
                return api_error_set(e, 400, "invalid_request_error", "prompt", "invalid_value",
                                     "Invalid 'prompt[%d]': token id %d is outside the vocabulary (0..%d).", i, r->prompt_ids[i], nv - 1);
        *ids = st_malloc((size_t)r->n_prompt_ids * sizeof(int32_t));
        if (!*ids) return api_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
        memcpy(*ids, r->prompt_ids, (size_t)r->n_prompt_ids * sizeof(int32_t));
        *n = r->n_prompt_ids;
        return 0;
    }
    /* --chat-template replaces the model's own (strata_model_params.chat_template) too, so plain
     * chats render it through strata_chat_tokenize (content as text) like the model's */
    if (r->kind == GEN_CHAT && (r->has_tool_msgs || r->tools_json)) {
        /* the template sees the whole messages (tool calls, tool results) and the tools (also with
         * tool_choice "none": the model knows them, it is only not asked to call one) */
        /* every string of the client's JSON is text: none can spell a special token */
        int got = strata_chat_tokenize_json(s->model, s->tmpl, r->messages_json, r->tools_json, 1, NULL, ids, NULL, err,
                                            sizeof err);
        if (got < 0) {
            if (!strcmp(err, "out of memory")) return api_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
            return api_error_set(e, 400, "invalid_request_error", "messages", "invalid_value",
                                 "The chat template could not render these messages: %s", err);
        }
        *n = got;
        return 0;
    } else if (r->kind == GEN_CHAT) {
        /* the template's markers are special tokens; message content is always text */
        int got = strata_chat_tokenize(s->model, r->msgs, r->n_msgs, 1, NULL, ids, NULL, err, sizeof err);
        if (got < 0) {
            if (!strcmp(err, "out of memory")) return api_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
            return api_error_set(e, 400, "invalid_request_error", "messages", "invalid_value", "chat template: %s", err);
        }
        *n = got;
        return 0;
    } else {
        text = st_strdup(r->prompt);
        if (!text) return api_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
    }
    size_t len = strlen(text);
    int cap = (int)(len < 1000000 ? len : 1000000) + 8;
    *ids = st_malloc((size_t)cap * sizeof(int32_t));
    int got = *ids ? strata_tokenize(s->model, text, len, 1, 1, *ids, cap) : -1;
    if (got > cap) {   /* more tokens than bytes + 8: not expected, but the API allows it */
        int32_t *bigger = st_realloc(*ids, (size_t)got * sizeof(int32_t));
        if (bigger) { *ids = bigger; got = strata_tokenize(s->model, text, len, 1, 1, *ids, got); }
        else got = -1;
    }
    st_free(text);
    if (got < 0) { st_free(*ids); *ids = NULL; return api_error_set(e, 500, "server_error", NULL, NULL, "tokenizer failed"); }
    *n = got;
    return 0;
}

/* The tokenizer pool: http.tok_pool worker threads run the templating and tokenizing of
 * prompts longer than TOKENIZE_INLINE_BYTES, one task each at a time, so a flood of large
 * prompts cannot take every core, and under SCHED_IDLE, so the decode thread goes first (a stream keeps its pace while prompts are
 * being read: tests/server/test_sched.py). A connection thread queues
 * its task and waits: up to TOKENIZE_WAIT_S for a worker to take it (then 429), then until it
 * is done (bounded: the text was checked against max_prompt_bytes first). */
typedef struct tok_task {
    void (*fn)(srv *s, void *arg);
    void *arg;
    int state;                  /* 0 queued, 1 running, 2 done */
    struct tok_task *next;
} tok_task;

static void *tok_worker(void *arg) {
    srv *s = arg;
    /* SCHED_IDLE: runs when the decode thread (and its pool) does not want the core. nice 10
     * was not enough: measured with a stream and a prompt flood on the shared 2-core machine,
     * the nice-10 workers took 1.04 s of CPU in 8 s and the decode thread 0.17 s (1.24 s
     * alone); SCHED_IDLE workers 0.14 s, the decode thread 1.29 s */
    struct sched_param sp = { 0 };
    if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp) != 0) {
#ifdef SYS_gettid
        setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);   /* this thread only (Linux) */
#endif
    }
    pthread_setname_np(pthread_self(), "strata-tok");
    pthread_mutex_lock(&s->conn_mu);
    for (;;) {
        while (!s->tok_head && !atomic_load(&s->stopping)) pthread_cond_wait(&s->tok_cv, &s->conn_mu);
        if (atomic_load(&s->stopping)) break;   /* the waiters of queued tasks answer 503 */
        tok_task *t = s->tok_head;
        s->tok_head = t->next;
        if (!s->tok_head) s->tok_tail = NULL;
        s->http.tok_waiting--;
        if (++s->http.tok_busy > s->http.tok_peak) s->http.tok_peak = s->http.tok_busy;
        t->state = 1;
        pthread_mutex_unlock(&s->conn_mu);
        t->fn(s, t->arg);
        pthread_mutex_lock(&s->conn_mu);
        s->http.tok_busy--;
        t->state = 2;
        pthread_cond_broadcast(&s->tok_done_cv);
    }
    pthread_mutex_unlock(&s->conn_mu);
    return NULL;
}

/* Run fn(s, arg) on a worker. 0: it ran; otherwise an error is set (429 when no worker took it
 * within TOKENIZE_WAIT_S, 503 on shutdown) and it did not run. */
static int tok_run(srv *s, void (*fn)(srv *, void *), void *arg, api_error *e) {
    tok_task t = { fn, arg, 0, NULL };
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += TOKENIZE_WAIT_S;
    int rc = 0;
    pthread_mutex_lock(&s->conn_mu);
    if (atomic_load(&s->stopping) || !s->n_tok_threads) rc = 503;
    else {
        if (s->tok_tail) s->tok_tail->next = &t;
        else s->tok_head = &t;
        s->tok_tail = &t;
        s->http.tok_waiting++;
        pthread_cond_signal(&s->tok_cv);
        int timed_out = 0;
        while (t.state != 2) {
            if (t.state == 0 && (timed_out || atomic_load(&s->stopping))) {   /* not taken: leave the queue */
                tok_task **pp = &s->tok_head, *prev = NULL;
                while (*pp != &t) { prev = *pp; pp = &(*pp)->next; }
                *pp = t.next;
                if (s->tok_tail == &t) s->tok_tail = prev;
                s->http.tok_waiting--;
                rc = timed_out ? 429 : 503;
                break;
            }
            if (pthread_cond_timedwait(&s->tok_done_cv, &s->conn_mu, &dl) == ETIMEDOUT) timed_out = 1;
        }
    }
    int pool = s->http.tok_pool;
    pthread_mutex_unlock(&s->conn_mu);
    if (rc == 429)
        return api_error_set(e, 429, "requests", NULL, "rate_limit_exceeded",
                             "The server is busy: %d prompts are being tokenized and this one waited %d seconds. "
                             "Retry after 1 second.", pool, TOKENIZE_WAIT_S);
    if (rc == 503) return api_error_set(e, 503, "server_error", NULL, "shutting_down", "The server is shutting down.");
    return 0;
}

typedef struct { gen_request *r; int32_t *ids; int n; api_error e; int rc; } prompt_task;
static void prompt_task_run(srv *s, void *arg) {
    prompt_task *pt = arg;
    pt->rc = build_prompt(s, pt->r, &pt->ids, &pt->n, &pt->e);
}

/* Bytes of text a request asks to tokenize (message content or prompt text). */
static size_t request_text_bytes(const gen_request *r) {
    size_t n = 0;
    if (r->kind == GEN_CHAT) {
        for (int i = 0; i < r->n_msgs; i++) n += r->msgs[i].content ? strlen(r->msgs[i].content) : 0;
    } else if (r->prompt) n = strlen(r->prompt);
    return n;
}

/* Tools given and not switched off: the template must have a tool format; "required" and a
 * named function get a grammar that forces the call. */
static int setup_tools(srv *s, gen_request *r, tool_format *tf, api_error *e) {
    const char *tmpl = s->tmpl ? s->tmpl : strata_model_chat_template(s->model);
    *tf = tool_format_of(tmpl);
    if (*tf == TOOLFMT_NONE)
        return api_error_set(e, 400, "invalid_request_error", "tools", "unsupported_value",
                             "This model's chat template has no tool support (it renders no tools in a format this "
                             "server parses: Hermes/Qwen <tool_call>, Llama 3.x JSON, Mistral [TOOL_CALLS], functionary). "
                             "Start the server with --chat-template FILE to use one that does.");
    if (r->tool_choice != TOOL_CHOICE_REQUIRED && r->tool_choice != TOOL_CHOICE_NAMED) return 0;
    if (r->grammar)
        return api_error_set(e, 400, "invalid_request_error", "tool_choice", "invalid_value",
                             "Invalid 'tool_choice': a required tool call cannot be combined with 'response_format' or 'grammar'.");
    json_t *tools = json_loads(r->tools_json, 0, NULL);
    char err[300] = "";
    char *text = tools ? tool_call_grammar(*tf, tools, r->tool_choice == TOOL_CHOICE_NAMED ? r->tool_name : NULL,
                                           r->parallel_tool_calls, err, sizeof err) : NULL;
    json_decref(tools);
    if (text) { r->grammar = grammar_parse(text, err, sizeof err); st_free(text); }
    if (!r->grammar)
        return api_error_set(e, 400, "invalid_request_error", "tools", "invalid_value",
                             "Invalid 'tools': the function parameters cannot be enforced: %s", err);
    return 0;
}

/* 429 (slots and queue full: sub -1) or 503 (shutting down: sub -2). */
static enum MHD_Result send_busy(srv *s, struct MHD_Connection *c, srv_endpoint ep, int sub, int running, int waiting) {
    api_error e;
    if (sub == -2) api_error_set(&e, 503, "server_error", NULL, "shutting_down", "The server is shutting down.");
    else
        api_error_set(&e, 429, "requests", NULL, "rate_limit_exceeded",
                      "The server is busy: %d of %d slots are generating and %d requests are waiting for one "
                      "(--queue %d). Retry after 1 second.", running, s->sched.n_slots, waiting, s->sched.q_cap);
    return send_error(s, c, ep, &e);
}

static enum MHD_Result handle_generate(srv *s, struct MHD_Connection *c, conn_ctx *cc, gen_kind kind) {
    api_error e;
    gen_request r;
    if (gen_request_parse(cc->body.p, cc->body.len, kind, &r, &e)) return send_error(s, c, cc->ep, &e);
    tool_format tf = TOOLFMT_NONE;
    if (kind == GEN_CHAT && r.tools_json && r.tool_choice != TOOL_CHOICE_NONE && setup_tools(s, &r, &tf, &e)) {
        gen_request_free(&r);
        return send_error(s, c, cc->ep, &e);
    }
    int32_t *ids = NULL;
    int n = 0;
    const char *what = kind == GEN_CHAT ? "messages" : "prompt";
    /* no token covers more than max_token_len bytes, so longer text cannot fit the context:
     * refused before any templating or tokenizing */
    size_t bytes = request_text_bytes(&r);
    if (bytes > s->max_prompt_bytes) {
        api_error_set(&e, 400, "invalid_request_error", what, "context_length_exceeded",
                      "This model's maximum context length is %d tokens. However, your %s %zu bytes of text, "
                      "more than %d tokens can hold (%zu bytes: no token is longer than %d bytes). "
                      "Please reduce the length of the %s.", s->sched.n_ctx, kind == GEN_CHAT ? "messages have" : "prompt has", bytes, s->sched.n_ctx,
                      s->max_prompt_bytes, s->max_token_len, what);
        gen_request_free(&r);
        return send_error(s, c, cc->ep, &e);
    }
    /* admission before work: a place among the slots and the queue is reserved first, so a
     * request the server would refuse with 429 is refused before any templating or tokenizing */
    int running = 0, waiting = 0, sub = sched_reserve(&s->sched, &running, &waiting);
    if (sub) {
        gen_request_free(&r);
        return send_busy(s, c, cc->ep, sub, running, waiting);
    }
    prompt_task pt = { &r, NULL, 0, { 0 }, 0 };
    /* a short text (most chats) is read here at once: microseconds, and a SCHED_IDLE worker
     * could wait long for a core that streams keep busy; larger texts go to the pool */
    int tr = 0;
    if (bytes <= TOKENIZE_INLINE_BYTES && !r.tools_json && !r.has_tool_msgs) prompt_task_run(s, &pt);
    else tr = tok_run(s, prompt_task_run, &pt, &e);
    if (!tr && pt.rc) { e = pt.e; tr = -1; }
    if (tr) {
        st_free(pt.ids);
        sched_unreserve(&s->sched);
        gen_request_free(&r);
        return send_error(s, c, cc->ep, &e);
    }
    ids = pt.ids;
    n = pt.n;
    int n_ctx = s->sched.n_ctx;
    if (n == 0) {
        api_error_set(&e, 400, "invalid_request_error", kind == GEN_CHAT ? "messages" : "prompt", "invalid_value",
                      "The prompt is empty (0 tokens): give at least one token of text.");
    } else if (n >= n_ctx) {
        api_error_set(&e, 400, "invalid_request_error", kind == GEN_CHAT ? "messages" : "prompt", "context_length_exceeded",
                      "This model's maximum context length is %d tokens. However, your %s resulted in %d tokens. "
                      "Please reduce the length of the %s.", n_ctx, kind == GEN_CHAT ? "messages" : "prompt", n,
                      kind == GEN_CHAT ? "messages" : "prompt");
    } else e.status = 0;
    if (e.status) { st_free(ids); sched_unreserve(&s->sched); gen_request_free(&r); return send_error(s, c, cc->ep, &e); }

    gen_ctx *g = st_calloc(1, sizeof *g);
    if (g) { g->s = s; atomic_fetch_add(&s->open_replies, 1); }
    srv_job *j = g ? job_new(&r, ids, n) : NULL;
    int stream = r.stream, include_usage = r.include_usage;
    int forced = r.tool_choice == TOOL_CHOICE_REQUIRED || r.tool_choice == TOOL_CHOICE_NAMED;
    gen_request_free(&r);
    st_free(ids);
    if (!j) {
        gen_ctx_free(g);
        sched_unreserve(&s->sched);
        api_error_set(&e, 500, "server_error", NULL, NULL, "out of memory");
        return send_error(s, c, cc->ep, &e);
    }
    g->s = s;
    g->job = j;
    g->ep = cc->ep;
    g->fd = conn_fd(c);
    g->include_usage = include_usage;
    g->cc = cc;
    cc->live = g;
    g->tools = tf;
    g->tools_forced = forced;
    sbuf_init(&g->held);
    make_id(g->id, sizeof g->id, kind == GEN_CHAT ? "chatcmpl-" : "cmpl-");
    g->meta.id = g->id;
    g->meta.model = s->model_id;
    g->meta.created = (long long)time(NULL);
    g->meta.kind = kind;
    g->meta.usage_null = stream && include_usage;
    sbuf_init(&g->out);

    if (sched_submit_reserved(&s->sched, j)) {   /* only when the scheduler stopped */
        gen_ctx_free(g);
        return send_busy(s, c, cc->ep, -2, 0, 0);
    }

    if (stream) {
        if (kind == GEN_CHAT) sse_append_json(&g->out, oai_stream_chunk(&g->meta, 1, "", 0, NULL, NULL));
        struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, stream_read, g, stream_free);
        if (!resp) { gen_ctx_free(g); return MHD_NO; }
        MHD_add_response_header(resp, "Content-Type", "text/event-stream; charset=utf-8");
        MHD_add_response_header(resp, "Cache-Control", "no-cache");
        MHD_add_response_header(resp, "X-Accel-Buffering", "no");
        add_cors(s, resp);
        enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, resp);
        MHD_destroy_response(resp);
        count_status(s, cc->ep, 200);
        return ret;
    }

    if (wait_job(s, j, g->fd, 1)) {   /* client gone: cancel, close */
        log_job(&s->sched, cc, j, 0);
        gen_ctx_free(g);
        return MHD_NO;
    }
    log_job(&s->sched, cc, j, 0);
    sbuf text; sbuf_init(&text);
    json_t *lp = NULL;
    int done;
    take_output(s, j, &text, &lp, &done);
    enum MHD_Result ret;
    if (!j->finish) {
        json_decref(lp);
        api_error_set(&e, atomic_load(&s->stopping) ? 503 : 500, "server_error", NULL, NULL, "%s",
                      j->error[0] ? j->error : "generation failed");
        ret = send_error(s, c, cc->ep, &e);
    } else {
        oai_timings t = job_timings(j);
        json_t *lpj = lp ? oai_logprobs_shape(kind, lp, &g->text_offset) : NULL;
        if (!lpj && j->logprobs) lpj = oai_logprobs_shape(kind, json_array(), &g->text_offset);
        json_t *resp = oai_response(&g->meta, text.p ? text.p : "", text.len, j->finish, lpj, j->n_prompt, j->n_gen,
                                    j->n_cached, &t);
        if (g->tools) {
            char *content = NULL;
            json_t *calls = tools_reply(g, text.p ? text.p : "", text.len, &content);
            json_t *choice = json_array_get(json_object_get(resp, "choices"), 0);
            json_t *msg = json_object_get(choice, "message");
            if (json_array_size(calls)) {
                json_object_set_new(msg, "content", content ? json_string(content) : json_null());
                json_object_set_new(msg, "tool_calls", calls);
                if (!strcmp(j->finish, "stop")) json_object_set_new(choice, "finish_reason", json_string("tool_calls"));
            } else json_decref(calls);
            st_free(content);
        }
        ret = send_json(s, c, cc->ep, 200, resp, 0);
    }
    sbuf_free(&text);
    gen_ctx_free(g);
    return ret;
}

/* ---- small endpoints ---------------------------------------------------------------------------------- */
typedef struct { const char *text; size_t len; int bos, special; int32_t *ids; int n; } tokenize_task;
static void tokenize_task_run(srv *s, void *arg) {
    tokenize_task *t = arg;
    int cap = (int)(t->len < 4000000 ? t->len : 4000000) + 8;
    t->ids = st_malloc((size_t)cap * sizeof(int32_t));
    t->n = t->ids ? strata_tokenize(s->model, t->text, t->len, t->bos, t->special, t->ids, cap) : -1;
    if (t->n > cap) {
        int32_t *b = st_realloc(t->ids, (size_t)t->n * sizeof(int32_t));
        if (b) { t->ids = b; t->n = strata_tokenize(s->model, t->text, t->len, t->bos, t->special, t->ids, t->n); } else t->n = -1;
    }
}

static enum MHD_Result handle_tokenize(srv *s, struct MHD_Connection *c, conn_ctx *cc) {
    api_error e;
    json_t *root = request_parse_object(cc->body.p, cc->body.len, &e);
    if (!root) return send_error(s, c, cc->ep, &e);
    json_t *content = json_object_get(root, "content");
    json_t *add_special = json_object_get(root, "add_special");
    json_t *parse_special = json_object_get(root, "parse_special");
    json_t *with_pieces = json_object_get(root, "with_pieces");
    if (!content) api_error_set(&e, 400, "invalid_request_error", "content", "missing_required_parameter", "Missing required parameter: 'content'.");
    else if (!json_is_string(content)) api_error_set(&e, 400, "invalid_request_error", "content", "invalid_type", "Invalid type for 'content': expected a string.");
    else if (add_special && !json_is_boolean(add_special)) api_error_set(&e, 400, "invalid_request_error", "add_special", "invalid_type", "Invalid type for 'add_special': expected a boolean.");
    else if (parse_special && !json_is_boolean(parse_special)) api_error_set(&e, 400, "invalid_request_error", "parse_special", "invalid_type", "Invalid type for 'parse_special': expected a boolean.");
    else if (with_pieces && !json_is_boolean(with_pieces)) api_error_set(&e, 400, "invalid_request_error", "with_pieces", "invalid_type", "Invalid type for 'with_pieces': expected a boolean.");
    else e.status = 0;
    if (e.status) { json_decref(root); return send_error(s, c, cc->ep, &e); }
    const char *text = json_string_value(content);
    size_t len = json_string_length(content);
    tokenize_task tt = { text, len, json_is_true(add_special), parse_special ? json_is_true(parse_special) : 1, NULL, -1 };
    if (len <= TOKENIZE_INLINE_BYTES) tokenize_task_run(s, &tt);
    else if (tok_run(s, tokenize_task_run, &tt, &e)) { json_decref(root); return send_error(s, c, cc->ep, &e); }
    int32_t *ids = tt.ids;
    int n = tt.n;
    json_t *toks = json_array();
    for (int i = 0; i < n; i++) {
        if (json_is_true(with_pieces)) {
            size_t pl = 0;
            const char *p = strata_token_text(s->model, ids[i], &pl);
            sbuf piece; sbuf_init(&piece);
            utf8_append_sanitized(&piece, p ? p : "", p ? pl : 0);
            json_array_append_new(toks, json_pack("{s:i, s:s}", "id", ids[i], "piece", piece.p ? piece.p : ""));
            sbuf_free(&piece);
        } else json_array_append_new(toks, json_integer(ids[i]));
    }
    st_free(ids);
    json_decref(root);
    if (n < 0) {
        json_decref(toks);
        api_error_set(&e, 500, "server_error", NULL, NULL, "tokenizer failed");
        return send_error(s, c, cc->ep, &e);
    }
    return send_json(s, c, cc->ep, 200, json_pack("{s:o}", "tokens", toks), 0);
}

static enum MHD_Result handle_detokenize(srv *s, struct MHD_Connection *c, conn_ctx *cc) {
    api_error e;
    json_t *root = request_parse_object(cc->body.p, cc->body.len, &e);
    if (!root) return send_error(s, c, cc->ep, &e);
    json_t *toks = json_object_get(root, "tokens");
    int nv = strata_n_vocab(s->model);
    e.status = 0;
    if (!toks) api_error_set(&e, 400, "invalid_request_error", "tokens", "missing_required_parameter", "Missing required parameter: 'tokens'.");
    else if (!json_is_array(toks)) api_error_set(&e, 400, "invalid_request_error", "tokens", "invalid_type", "Invalid type for 'tokens': expected an array of token ids.");
    else for (size_t i = 0; i < json_array_size(toks); i++) {
        json_t *t = json_array_get(toks, i);
        if (!json_is_integer(t) || json_integer_value(t) < 0 || json_integer_value(t) >= nv) {
            api_error_set(&e, 400, "invalid_request_error", "tokens", "invalid_value",
                          "Invalid 'tokens[%zu]': expected a token id in 0..%d.", i, nv - 1);
            break;
        }
    }
    if (e.status) { json_decref(root); return send_error(s, c, cc->ep, &e); }
    size_t n = json_array_size(toks);
    int32_t *ids = st_malloc((n ? n : 1) * sizeof(int32_t));
    for (size_t i = 0; ids && i < n; i++) ids[i] = (int32_t)json_integer_value(json_array_get(toks, i));
    json_decref(root);
    int cap = (int)n * 16 + 64;
    char *out = ids ? st_malloc((size_t)cap) : NULL;
    int len = out ? strata_detokenize(s->model, ids, (int)n, out, cap) : -1;
    if (len >= cap) {
        char *b = st_realloc(out, (size_t)len + 1);
        if (b) { out = b; len = strata_detokenize(s->model, ids, (int)n, out, len + 1); } else len = -1;
    }
    st_free(ids);
    if (len < 0) {
        st_free(out);
        api_error_set(&e, 500, "server_error", NULL, NULL, "detokenizer failed");
        return send_error(s, c, cc->ep, &e);
    }
    sbuf text; sbuf_init(&text);
    utf8_append_sanitized(&text, out, (size_t)len);
    st_free(out);
    json_t *j = json_pack("{s:s}", "content", text.p ? text.p : "");
    sbuf_free(&text);
    return send_json(s, c, cc->ep, 200, j, 0);
}

static json_t *model_object(srv *s) {
    strata_model_info info;
    strata_model_get_info(s->model, &info);
    return json_pack("{s:s, s:s, s:I, s:s, s:{s:s, s:i, s:i, s:I, s:i, s:i}}",
                     "id", s->model_id, "object", "model", "created", (json_int_t)s->t_loaded, "owned_by", "strata",
                     "meta", "arch", info.arch ? info.arch : "", "n_vocab", info.n_vocab, "n_ctx_train", info.n_ctx_train,
                     "n_params", (json_int_t)info.n_params, "n_ctx", s->sched.n_ctx, "n_slots", s->sched.n_slots);
}

static enum MHD_Result handle_health(srv *s, struct MHD_Connection *c, conn_ctx *cc) {
    int st = atomic_load(&s->state);
    if (st != SRV_READY) {
        api_error e;
        api_error_set(&e, 503, "server_error", NULL, st == SRV_LOADING ? "model_loading" : "model_failed",
                      st == SRV_LOADING ? "Loading model" : "The model failed to load");
        json_t *j = api_error_json(&e);
        json_object_set_new(j, "status", json_string(st == SRV_LOADING ? "loading" : "error"));
        return send_json(s, c, cc->ep, 503, j, 1);
    }
    int busy, queued;
    sched_snapshot(&s->sched, &busy, &queued, NULL);
    return send_json(s, c, cc->ep, 200, json_pack("{s:s, s:i, s:i, s:i, s:i}", "status", "ok",
        "slots_idle", s->sched.n_slots - busy, "slots_processing", busy, "queue_depth", queued,
        "queue_capacity", s->sched.q_cap), 0);
}

static enum MHD_Result handle_metrics(srv *s, struct MHD_Connection *c) {
    srv_metrics m;
    memset(&m, 0, sizeof m);
    m.ready = atomic_load(&s->state) == SRV_READY;
    if (m.ready) {
        sched_snapshot(&s->sched, &m.slots_busy, &m.queue_depth, &m.c);
        m.slots_total = s->sched.n_slots;
        m.queue_capacity = s->sched.q_cap;
    }
    pthread_mutex_lock(&s->conn_mu);
    m.h = s->http;
    pthread_mutex_unlock(&s->conn_mu);
    pthread_mutex_lock(&s->stats_mu);
    s->requests[EP_METRICS][metrics_code_index(200)]++;   /* count this scrape in itself */
    memcpy(m.requests, s->requests, sizeof m.requests);
    pthread_mutex_unlock(&s->stats_mu);
    sbuf o; sbuf_init(&o);
    metrics_render(&o, &m);
    struct MHD_Response *r = MHD_create_response_from_buffer(o.len, o.p ? o.p : (char *)"", MHD_RESPMEM_MUST_COPY);
    sbuf_free(&o);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
    add_cors(s, r);
    enum MHD_Result ret = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ret;
}

/* ---- routing ---------------------------------------------------------------------------------------------- */
static srv_endpoint route(const char *url) {
    if (!strncmp(url, "/v1/", 4)) url += 3;
    if (!strcmp(url, "/chat/completions")) return EP_CHAT;
    if (!strcmp(url, "/completions")) return EP_COMPLETIONS;
    if (!strcmp(url, "/models") || !strncmp(url, "/models/", 8)) return EP_MODELS;
    if (!strcmp(url, "/health")) return EP_HEALTH;
    if (!strcmp(url, "/metrics")) return EP_METRICS;
    if (!strcmp(url, "/tokenize")) return EP_TOKENIZE;
    if (!strcmp(url, "/detokenize")) return EP_DETOKENIZE;
    if (!strcmp(url, "/") || !strcmp(url, "/index.html")) return EP_WEBUI;
    return EP_OTHER;
}

static int endpoint_is_post(srv_endpoint ep) {
    return ep == EP_CHAT || ep == EP_COMPLETIONS || ep == EP_TOKENIZE || ep == EP_DETOKENIZE;
}

/* Constant-time comparison: the time taken does not depend on where the strings differ. */
static int key_equal(const char *given, size_t n, const char *key) {
    size_t k = strlen(key);
    unsigned diff = (unsigned)(n ^ k);
    for (size_t i = 0; i < k; i++) diff |= (unsigned char)key[i] ^ (unsigned char)(i < n ? given[i] : 0);
    return diff == 0;
}

static int authorized(srv *s, struct MHD_Connection *c) {
    if (!s->opt.api_key) return 1;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (h && !strncasecmp(h, "Bearer ", 7)) {
        h += 7;
        while (*h == ' ') h++;
        size_t n = strlen(h);
        while (n && h[n - 1] == ' ') n--;
        if (key_equal(h, n, s->opt.api_key)) return 1;
    }
    const char *x = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Api-Key");
    return x && key_equal(x, strlen(x), s->opt.api_key);
}

/* The chat page's Markdown and highlighting scripts: Debian's libjs-marked and libjs-highlight.js,
 * served from /usr/share/javascript (never a CDN). Only these names; read once, kept. */
static const struct { const char *name, *path, *ctype; } static_files[] = {
    { "marked.js", "/usr/share/javascript/marked/marked.min.js", "application/javascript; charset=utf-8" },
    { "hljs.js", "/usr/share/javascript/highlight.js/highlight.min.js", "application/javascript; charset=utf-8" },
    { "hljs-light.css", "/usr/share/javascript/highlight.js/styles/github.css", "text/css; charset=utf-8" },
    { "hljs-dark.css", "/usr/share/javascript/highlight.js/styles/a11y-dark.css", "text/css; charset=utf-8" },
};
#define N_STATIC ((int)(sizeof static_files / sizeof static_files[0]))
static struct { char *data; size_t len; int tried; } static_cache[N_STATIC];
static pthread_mutex_t static_mu = PTHREAD_MUTEX_INITIALIZER;

static enum MHD_Result handle_static(srv *s, struct MHD_Connection *c, const char *name) {
    for (int i = 0; i < N_STATIC; i++) {
        if (strcmp(name, static_files[i].name)) continue;
        pthread_mutex_lock(&static_mu);
        if (!static_cache[i].tried) {
            static_cache[i].tried = 1;
            FILE *f = fopen(static_files[i].path, "rb");
            if (f && !fseek(f, 0, SEEK_END)) {
                long n = ftell(f);
                char *d = n > 0 && n < (32L << 20) ? malloc((size_t)n) : NULL;
                if (d && !fseek(f, 0, SEEK_SET) && fread(d, 1, (size_t)n, f) == (size_t)n) {
                    static_cache[i].data = d;
                    static_cache[i].len = (size_t)n;
                } else free(d);
            }
            if (f) fclose(f);
        }
        const char *d = static_cache[i].data;
        size_t len = static_cache[i].len;
        pthread_mutex_unlock(&static_mu);
        if (!d) break;   /* the package is not installed: the page falls back to plain text */
        struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)d, MHD_RESPMEM_PERSISTENT);
        if (!r) return MHD_NO;
        MHD_add_response_header(r, "Content-Type", static_files[i].ctype);
        MHD_add_response_header(r, "Cache-Control", "max-age=3600");
        add_cors(s, r);
        enum MHD_Result ret = MHD_queue_response(c, 200, r);
        MHD_destroy_response(r);
        count_status(s, EP_WEBUI, 200);
        return ret;
    }
    return send_bytes(s, c, EP_WEBUI, 404, "text/plain; charset=utf-8", "not found\n", 10, 0);
}

/* ---- HTTP framing ------------------------------------------------------------------------------------- */
typedef struct framing { int n_cl, n_te, cl_bad; } framing;

static enum MHD_Result scan_framing(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
    (void)kind;
    framing *f = cls;
    if (!strcasecmp(key, "Content-Length")) {
        f->n_cl++;
        const char *v = value ? value : "";
        while (*v == ' ' || *v == '\t') v++;
        if (!*v) f->cl_bad = 1;
        for (; *v && *v != ' ' && *v != '\t'; v++) if (*v < '0' || *v > '9') f->cl_bad = 1;
        while (*v == ' ' || *v == '\t') v++;
        if (*v) f->cl_bad = 1;
    } else if (!strcasecmp(key, "Transfer-Encoding")) f->n_te++;
    return MHD_YES;
}

/* An error after which the connection closes (its framing cannot be trusted). */
static enum MHD_Result send_error_close(srv *s, struct MHD_Connection *c, srv_endpoint ep, const api_error *e) {
    json_t *j = api_error_json(e);
    char *txt = j ? oai_dump(j) : NULL;
    json_decref(j);
    if (!txt) return MHD_NO;
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(txt), txt, MHD_RESPMEM_MUST_COPY);
    free(txt);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "application/json");
    MHD_add_response_header(r, "Connection", "close");
    add_cors(s, r);
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)e->status, r);
    MHD_destroy_response(r);
    count_status(s, ep, e->status);
    return ret;
}

/* ---- connections: caps on accept, deadlines ------------------------------------------------------------
 * MHD runs one thread per connection (poll(), so no FD_SETSIZE limit). Every open connection is
 * in s->conns (MHD_OPTION_NOTIFY_CONNECTION). A new one is closed on accept when --max-conn are
 * open, or --max-conn-per-ip from its address. A connection must send its request headers within
 * --header-timeout seconds of opening (or 3x that after a reply, when kept alive) and the body
 * within BODY_TIMEOUT_S after the headers, however slowly it trickles bytes: the watchdog thread
 * shuts the socket of one that does not (its MHD thread then sees the end and closes it). Entries
 * leave the list in NOTIFY_CLOSED, before MHD closes the descriptor, under conn_mu, so the
 * watchdog never touches a reused descriptor. */
static void addr_key(const struct sockaddr *sa, int *family, unsigned char key[16]) {
    memset(key, 0, 16);
    *family = sa ? sa->sa_family : 0;
    if (*family == AF_INET) memcpy(key, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    else if (*family == AF_INET6) memcpy(key, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
}

static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen) {
    (void)addrlen;
    srv *s = cls;
    int fam;
    unsigned char key[16];
    addr_key(addr, &fam, key);
    pthread_mutex_lock(&s->conn_mu);
    int same = 0, refuse = 0;
    if (s->http.conns_open >= s->opt.max_conn) { refuse = 1; s->http.refused_total++; }
    else if (s->opt.max_conn_per_ip > 0) {
        for (conn_track *t = s->conns; t && same < s->opt.max_conn_per_ip; t = t->next)
            same += t->family == fam && !memcmp(t->addr, key, 16);
        if (same >= s->opt.max_conn_per_ip) { refuse = 2; s->http.refused_per_ip++; }
    }
    if (refuse) {
        /* one line per second at most: a flood must not flood the log too */
        s->refusals_unlogged++;
        double now = now_seconds();
        if (now - s->refusal_logged_at >= 1.0) {
            char host[64] = "?";
            if (fam == AF_INET || fam == AF_INET6) inet_ntop(fam, key, host, sizeof host);
            fprintf(stderr, "strata serve: refused %llu connection%s (latest from %s: %s)\n", s->refusals_unlogged,
                    s->refusals_unlogged == 1 ? "" : "s", host,
                    refuse == 1 ? "--max-conn connections are open" : "--max-conn-per-ip connections are open from that address");
            s->refusal_logged_at = now;
            s->refusals_unlogged = 0;
        }
    }
    pthread_mutex_unlock(&s->conn_mu);
    return refuse ? MHD_NO : MHD_YES;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context, enum MHD_ConnectionNotificationCode code) {
    srv *s = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        conn_track *t = calloc(1, sizeof *t);
        if (!t) return;
        const union MHD_ConnectionInfo *fi = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        const union MHD_ConnectionInfo *ai = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        t->fd = fi ? fi->connect_fd : -1;
        addr_key(ai ? ai->client_addr : NULL, &t->family, t->addr);
        t->deadline = now_seconds() + s->opt.header_timeout;
        pthread_mutex_lock(&s->conn_mu);
        t->next = s->conns;
        if (s->conns) s->conns->prev = t;
        s->conns = t;
        s->http.conns_open++;
        pthread_mutex_unlock(&s->conn_mu);
        *socket_context = t;
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        conn_track *t = *socket_context;
        if (!t) return;
        pthread_mutex_lock(&s->conn_mu);
        if (t->prev) t->prev->next = t->next; else s->conns = t->next;
        if (t->next) t->next->prev = t->prev;
        s->http.conns_open--;
        pthread_mutex_unlock(&s->conn_mu);
        free(t);
        *socket_context = NULL;
    }
}

static void conn_set_deadline(srv *s, struct MHD_Connection *c, double deadline) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    conn_track *t = ci ? ci->socket_context : NULL;
    if (!t) return;
    pthread_mutex_lock(&s->conn_mu);
    t->deadline = deadline;
    pthread_mutex_unlock(&s->conn_mu);
}

static void *conn_watchdog(void *arg) {
    srv *s = arg;
    pthread_mutex_lock(&s->conn_mu);
    while (!atomic_load(&s->stopping)) {
        double now = now_seconds();
        for (conn_track *t = s->conns; t; t = t->next)
            if (t->deadline > 0 && now > t->deadline && !t->killed && t->fd >= 0) {
                shutdown(t->fd, SHUT_RDWR);
                t->killed = 1;
                s->http.timed_out++;
            }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 200 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
        pthread_cond_timedwait(&s->conn_cv, &s->conn_mu, &ts);
    }
    pthread_mutex_unlock(&s->conn_mu);
    return NULL;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls) {
    (void)version;
    srv *s = cls;
    conn_ctx *cc = *con_cls;
    api_error e;
    if (!cc) {
        cc = st_calloc(1, sizeof *cc);
        if (!cc) return MHD_NO;
        sbuf_init(&cc->body);
        cc->ep = route(url);
        cc->t0 = now_seconds();
        snprintf(cc->method, sizeof cc->method, "%s", method);
        snprintf(cc->path, sizeof cc->path, "%s", url);
        *con_cls = cc;
        conn_set_deadline(s, c, now_seconds() + BODY_TIMEOUT_S);   /* headers are in; now the body */
        /* request smuggling: a proxy and this server must not disagree on where the body ends */
        framing fr = { 0 };
        MHD_get_connection_values(c, MHD_HEADER_KIND, scan_framing, &fr);
        if (fr.n_cl > 1 || (fr.n_cl && fr.n_te) || fr.cl_bad) {
            api_error_set(&e, 400, "invalid_request_error", NULL, "invalid_framing",
                          fr.cl_bad ? "Invalid Content-Length header."
                          : fr.n_cl > 1 ? "Conflicting Content-Length headers: send exactly one."
                                        : "Content-Length together with Transfer-Encoding is not allowed: send one of them.");
            return send_error_close(s, c, cc->ep, &e);
        }
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        if (cl && strtoull(cl, NULL, 10) > s->opt.max_body) {
            api_error_set(&e, 413, "invalid_request_error", NULL, "request_too_large",
                          "The request body (%s bytes) is larger than this server accepts (%zu bytes).", cl, s->opt.max_body);
            return send_error(s, c, cc->ep, &e);
        }
        /* admission before work, its cheapest form: a generation that a full server would refuse
         * is refused as soon as its headers are in, before its body is read or parsed (a
         * client that sent Expect: 100-continue does not send it at all) */
        if ((cc->ep == EP_CHAT || cc->ep == EP_COMPLETIONS) && !strcmp(method, "POST") &&
            atomic_load(&s->state) == SRV_READY && authorized(s, c)) {
            int running = 0, waiting = 0, full = sched_full(&s->sched, &running, &waiting);
            if (full) return send_busy(s, c, cc->ep, full, running, waiting);
        }
        return MHD_YES;
    }
    if (*upload_size) {
        if (cc->body.len + *upload_size > s->opt.max_body) cc->too_big = 1;
        if (!cc->too_big) sbuf_append(&cc->body, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    conn_set_deadline(s, c, 0);   /* the whole request is in */
    if (cc->too_big || cc->body.oom) {
        api_error_set(&e, 413, "invalid_request_error", NULL, "request_too_large",
                      "The request body is larger than this server accepts (%zu bytes).", s->opt.max_body);
        return send_error(s, c, cc->ep, &e);
    }

    if (!strcmp(method, "OPTIONS")) {   /* CORS preflight; without --cors just the allowed methods */
        struct MHD_Response *r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
        if (!r) return MHD_NO;
        MHD_add_response_header(r, "Allow", "GET, POST, OPTIONS");
        if (s->opt.cors) {
            add_cors(s, r);
            MHD_add_response_header(r, "Access-Control-Allow-Methods", "GET, POST, OPTIONS");
            MHD_add_response_header(r, "Access-Control-Allow-Headers", "Authorization, Content-Type, X-Api-Key");
            MHD_add_response_header(r, "Access-Control-Max-Age", "86400");
        }
        enum MHD_Result ret = MHD_queue_response(c, 204, r);
        MHD_destroy_response(r);
        count_status(s, cc->ep, 204);
        return ret;
    }

    srv_endpoint ep = cc->ep;
    if (ep == EP_HEALTH) {   /* open (no key), GET or HEAD only */
        if (!strcmp(method, "GET") || !strcmp(method, "HEAD")) return handle_health(s, c, cc);
        api_error_set(&e, 405, "invalid_request_error", NULL, "method_not_allowed",
                      "Method %.16s is not allowed for %.200s: use GET.", method, url);
        return send_error(s, c, ep, &e);
    }
    if (ep == EP_WEBUI && !strcmp(method, "GET"))
        return send_bytes(s, c, ep, 200, "text/html; charset=utf-8", srv_webui_html, strlen(srv_webui_html), 0);
    if (!strncmp(url, "/static/", 8) && (!strcmp(method, "GET") || !strcmp(method, "HEAD")))
        return handle_static(s, c, url + 8);
    if (!authorized(s, c)) {
        api_error_set(&e, 401, "invalid_request_error", NULL, "invalid_api_key",
                      "Incorrect API key provided. Send it as 'Authorization: Bearer KEY' or 'X-Api-Key: KEY'.");
        return send_error(s, c, ep, &e);
    }
    if (ep == EP_OTHER) {
        api_error_set(&e, 404, "invalid_request_error", NULL, NULL, "Invalid URL (%.16s %.200s)", method, url);
        return send_error(s, c, ep, &e);
    }
    int want_post = endpoint_is_post(ep);
    if (strcmp(method, want_post ? "POST" : "GET") && !(!want_post && !strcmp(method, "HEAD"))) {
        api_error_set(&e, 405, "invalid_request_error", NULL, "method_not_allowed",
                      "Method %.16s is not allowed for %.200s: use %s.", method, url, want_post ? "POST" : "GET");
        return send_error(s, c, ep, &e);
    }
    if (ep == EP_METRICS) return handle_metrics(s, c);
    if (atomic_load(&s->state) != SRV_READY) {
        api_error_set(&e, 503, "server_error", NULL, "model_loading", "Loading model: retry in a moment.");
        return send_error(s, c, ep, &e);
    }
    switch (ep) {
    case EP_CHAT: return handle_generate(s, c, cc, GEN_CHAT);
    case EP_COMPLETIONS: return handle_generate(s, c, cc, GEN_COMPLETION);
    case EP_TOKENIZE: return handle_tokenize(s, c, cc);
    case EP_DETOKENIZE: return handle_detokenize(s, c, cc);
    case EP_MODELS: {
        const char *rest = url + (strncmp(url, "/v1/", 4) ? 0 : 3) + strlen("/models");
        if (*rest == '/') {
            if (strcmp(rest + 1, s->model_id)) {
                api_error_set(&e, 404, "invalid_request_error", "model", "model_not_found",
                              "The model '%.200s' does not exist: this server serves '%s'.", rest + 1, s->model_id);
                return send_error(s, c, ep, &e);
            }
            return send_json(s, c, ep, 200, model_object(s), 0);
        }
        json_t *list = json_array();
        json_array_append_new(list, model_object(s));
        return send_json(s, c, ep, 200, json_pack("{s:s, s:o}", "object", "list", "data", list), 0);
    }
    default: break;
    }
    api_error_set(&e, 404, "invalid_request_error", NULL, NULL, "Invalid URL (%.16s %.200s)", method, url);
    return send_error(s, c, ep, &e);
}

/* One line per request on stderr (-v), text or JSON (--log-format json). */
static void log_request(srv *s, struct MHD_Connection *c, const conn_ctx *cc, enum MHD_RequestTerminationCode toe) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_HTTP_STATUS);
    int status = ci ? (int)ci->http_status : 0;
    double total_ms = (now_seconds() - cc->t0) * 1e3;
    const char *end = toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "ok"
                    : toe == MHD_REQUEST_TERMINATED_CLIENT_ABORT || toe == MHD_REQUEST_TERMINATED_READ_ERROR ? "client_gone"
                    : toe == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED ? "timeout"
                    : toe == MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN ? "shutdown" : "error";
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    char ts[32];
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
    sbuf path; sbuf_init(&path);   /* the URL as valid UTF-8, control bytes made visible */
    utf8_append_sanitized(&path, cc->path, strlen(cc->path));
    for (size_t i = 0; i < path.len; i++) if ((unsigned char)path.p[i] < 0x20) path.p[i] = '?';
    const char *p = path.p ? path.p : "";
    if (s->opt.log_json) {
        json_t *o = json_pack("{s:s, s:s, s:s, s:i, s:f, s:s}", "time", ts, "method", cc->method, "path", p,
                              "status", status, "total_ms", total_ms, "end", end);
        if (o && cc->gen) {
            json_object_set_new(o, "prompt_tokens", json_integer(cc->n_prompt));
            json_object_set_new(o, "cached_tokens", json_integer(cc->n_cached));
            json_object_set_new(o, "completion_tokens", json_integer(cc->n_gen));
            json_object_set_new(o, "ttft_ms", cc->ttft_ms >= 0 ? json_real(cc->ttft_ms) : json_null());
            json_object_set_new(o, "stream", json_boolean(cc->stream));
            json_object_set_new(o, "finish", cc->finish ? json_string(cc->finish) : json_null());
        }
        char *txt = o ? json_dumps(o, JSON_COMPACT) : NULL;
        if (txt) fprintf(stderr, "%s\n", txt);
        free(txt);
        json_decref(o);
    } else if (cc->gen) {
        char ttft[32] = "-";
        if (cc->ttft_ms >= 0) snprintf(ttft, sizeof ttft, "%.1f", cc->ttft_ms);
        fprintf(stderr, "%s %s %s %d prompt=%d cached=%d completion=%d ttft_ms=%s total_ms=%.1f%s finish=%s%s%s\n",
                ts, cc->method, p, status, cc->n_prompt, cc->n_cached, cc->n_gen, ttft, total_ms,
                cc->stream ? " stream" : "", cc->finish ? cc->finish : "none", strcmp(end, "ok") ? " end=" : "",
                strcmp(end, "ok") ? end : "");
    } else {
        fprintf(stderr, "%s %s %s %d total_ms=%.1f%s%s\n", ts, cc->method, p, status, total_ms,
                strcmp(end, "ok") ? " end=" : "", strcmp(end, "ok") ? end : "");
    }
    sbuf_free(&path);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
    srv *s = cls;
    /* a kept-alive connection has the header time-out (three times, for the idle gap) to send
     * its next request */
    conn_set_deadline(s, c, now_seconds() + 3.0 * s->opt.header_timeout);
    conn_ctx *cc = *con_cls;
    if (!cc) return;
    if (cc->live) {   /* MHD ended a stream (the client left, a write failed) before stream_read saw it:
                       * MHD calls this before it frees the response, so the gen_ctx is still there */
        gen_ctx *g = cc->live;
        log_job(&s->sched, cc, g->job, 1);
        g->cc = NULL;
        cc->live = NULL;
    }
    if (s->opt.log_requests) log_request(s, c, cc, toe);
    sbuf_free(&cc->body);
    st_free(cc);
    *con_cls = NULL;
}

/* MHD's diagnostics, minus the line it prints whenever a client hangs up mid-stream (our
 * reader returns END_WITH_ERROR then: the expected way a cancelled stream ends). */
static void mhd_log(void *cls, const char *fmt, va_list ap) {
    (void)cls;
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    if (strstr(line, "application error generating response")) return;
    fprintf(stderr, "strata serve: http: %s", line);
}

static const char *mi_arch(const strata_model *m) {
    strata_model_info mi;
    strata_model_get_info(m, &mi);
    return mi.arch;
}

/* ---- start-up -------------------------------------------------------------------------------------------- */
static void model_id_from_path(char *id, size_t n, const char *path) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t len = strlen(base);
    if (len > 5 && !strcmp(base + len - 5, ".gguf")) len -= 5;
    sbuf b; sbuf_init(&b);
    utf8_append_sanitized(&b, base, len);
    snprintf(id, n, "%s", b.p ? b.p : "model");
    sbuf_free(&b);
}

int srv_run(const srv_options *o) {
    srv *s = calloc(1, sizeof *s);
    if (!s) { fprintf(stderr, "strata serve: out of memory\n"); return 1; }
    s->opt = *o;
    if (s->opt.parallel < 1) s->opt.parallel = 1;
    if (s->opt.queue < 0) s->opt.queue = 0;
    if (!s->opt.max_body) s->opt.max_body = 8u << 20;
    if (s->opt.max_conn < 1) s->opt.max_conn = 512;
    if (s->opt.header_timeout < 1) s->opt.header_timeout = 10;
    pthread_mutex_init(&s->stats_mu, NULL);
    pthread_mutex_init(&s->conn_mu, NULL);
    pthread_cond_init(&s->conn_cv, NULL);
    pthread_cond_init(&s->tok_cv, NULL);
    pthread_cond_init(&s->tok_done_cv, NULL);
    int nc = cpu_count() / 4;
    s->http.tok_pool = nc < 2 ? 2 : nc > 8 ? 8 : nc;
    atomic_store(&s->state, SRV_LOADING);

    /* each connection is a descriptor: make room for --max-conn of them */
    struct rlimit rl;
    if (!getrlimit(RLIMIT_NOFILE, &rl)) {
        rlim_t want = (rlim_t)s->opt.max_conn + 64;
        if (rl.rlim_cur < want) {
            rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
            setrlimit(RLIMIT_NOFILE, &rl);
        }
        if (rl.rlim_cur < want) {
            int fit = rl.rlim_cur > 96 ? (int)rl.rlim_cur - 64 : 32;
            fprintf(stderr, "strata serve: the descriptor limit (ulimit -n %llu) allows %d connections, not --max-conn %d\n",
                    (unsigned long long)rl.rlim_cur, fit, s->opt.max_conn);
            s->opt.max_conn = fit;
        }
    }

    /* signals: handled by sigwait in this thread; every other thread inherits the block */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    struct addrinfo hints, *ai = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    char port[16];
    snprintf(port, sizeof port, "%d", o->port);
    int gai = getaddrinfo(o->host, port, &hints, &ai);
    if (gai) {
        fprintf(stderr, "strata serve: cannot resolve --host '%s': %s\n", o->host, gai_strerror(gai));
        free(s);
        return 1;
    }
    /* poll(), not select(): no FD_SETSIZE (1024) ceiling; ITC for MHD_quiesce_daemon */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL | MHD_USE_ITC |
                     MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
    s->daemon = MHD_start_daemon(flags, (uint16_t)o->port, on_accept, s, on_request, s,
                                 MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s,   /* first, so it sees every message */
                                 MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                                 MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                                 MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
                                 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)(3 * s->opt.header_timeout + 5),
                                 /* a backstop above our own cap (on_accept refuses first) */
                                 MHD_OPTION_CONNECTION_LIMIT, (unsigned)(s->opt.max_conn + 16),
                                 MHD_OPTION_THREAD_STACK_SIZE, (size_t)(512 * 1024),
                                 MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!s->daemon) {
        fprintf(stderr, "strata serve: cannot listen on %s:%d (%s): is the port in use? try --port\n",
                o->host, o->port, strerror(errno));
        free(s);
        return 1;
    }
    if (pthread_create(&s->watchdog, NULL, conn_watchdog, s) == 0) s->watchdog_started = 1;
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    int bound_port = di ? di->port : o->port;

    /* the listener is up (GET /health says 503 "loading") while the model loads */
    fprintf(stderr, "strata serve: loading %s\n", o->model_path);
    char err[512] = "";
    strata_model_params mp = strata_model_default_params();
    mp.path = o->model_path;
    mp.n_threads = o->n_threads;
    mp.device = o->device;
    mp.chat_template = o->chat_template;
    int rc = 1;
    if (strata_model_load(&mp, &s->model, err, sizeof err)) {
        fprintf(stderr, "strata serve: %s\n", err);
        atomic_store(&s->state, SRV_FAILED);
        goto out;
    }
    model_id_from_path(s->model_id, sizeof s->model_id, o->model_path);
    if (o->chat_template && !(s->tmpl = st_strdup(o->chat_template))) {   /* the tools' template */
        fprintf(stderr, "strata serve: --chat-template: out of memory\n");
        atomic_store(&s->state, SRV_FAILED);
        goto out;
    }
    s->t_loaded = (long long)time(NULL);
    if (sched_init(&s->sched, s->model, s->opt.parallel, s->opt.queue, o->n_ctx, o->spec, o->kv_type, err, sizeof err)) {
        fprintf(stderr, "strata serve: %s\n", err);
        atomic_store(&s->state, SRV_FAILED);
        goto out;
    }
    {   /* --step-tokens' default by device: wide passes cost little more than narrow ones on the GPU */
        strata_model_info mi;
        strata_model_get_info(s->model, &mi);
        sched_set_step_tokens(&s->sched, o->step_tokens > 0 ? o->step_tokens
                              : mi.device && !strcmp(mi.device, "cuda") ? SRV_STEP_TOKENS_CUDA : SRV_STEP_TOKENS);
    }
    /* no token is longer than max_token_len bytes, so text longer than n_ctx of them cannot fit */
    for (int i = 0, nv = strata_n_vocab(s->model); i < nv; i++) {
        size_t l = 0;
        if (strata_token_text(s->model, i, &l) && (int)l > s->max_token_len) s->max_token_len = (int)l;
    }
    if (s->max_token_len < 1) s->max_token_len = 1;
    s->max_prompt_bytes = (size_t)s->sched.n_ctx * (size_t)s->max_token_len;
    s->tok_threads = st_calloc((size_t)s->http.tok_pool, sizeof *s->tok_threads);
    for (int i = 0; s->tok_threads && i < s->http.tok_pool; i++)
        if (pthread_create(&s->tok_threads[i], NULL, tok_worker, s) == 0) s->n_tok_threads++;
    if (!s->n_tok_threads) {
        fprintf(stderr, "strata serve: cannot start the tokenizer threads\n");
        atomic_store(&s->state, SRV_FAILED);
        goto out;
    }
    atomic_store(&s->state, SRV_READY);
    {   /* which chat template the chat endpoint uses */
        const char *t = strata_model_chat_template(s->model);
        const char *bt = t ? chat_builtin_template(mi_arch(s->model)) : NULL;
        if (o->chat_template) fprintf(stderr, "strata serve: chat template: %s (--chat-template)\n", o->chat_template_name ? o->chat_template_name : "given");
        else if (bt && !strcmp(t, bt)) fprintf(stderr, "strata serve: chat template: built-in %s (the file has none)\n", mi_arch(s->model));
        else if (t) fprintf(stderr, "strata serve: chat template: the model's (tokenizer.chat_template)\n");
        else fprintf(stderr, "strata serve: chat template: ChatML (the model has none)\n");
    }
    const char *h = o->host;
    int v6 = strchr(h, ':') != NULL;
    strata_model_info mi;
    strata_model_get_info(s->model, &mi);
    char spec[32] = "";
    if (o->spec > 0) snprintf(spec, sizeof spec, ", spec %d", o->spec);
    printf("strata serve: listening on http://%s%s%s:%d (model %s, %d slot%s, context %d, queue %d, %s%s)\n",
           v6 ? "[" : "", h, v6 ? "]" : "", bound_port, s->model_id, s->sched.n_slots,
           s->sched.n_slots == 1 ? "" : "s", s->sched.n_ctx, s->sched.q_cap, mi.device, spec);
    fflush(stdout);

    int sig = 0;
    sigwait(&sigs, &sig);
    fprintf(stderr, "strata serve: %s, shutting down\n", sig == SIGINT ? "interrupted" : "terminated");
    rc = 0;
out:
    /* shutdown: stop accepting, end every generation with an error event (streams get it and
     * [DONE], waiting replies a 503), give the replies SHUTDOWN_GRACE_S to go out, then close */
    atomic_store(&s->stopping, 1);
    pthread_mutex_lock(&s->conn_mu);
    pthread_cond_broadcast(&s->tok_cv);
    pthread_cond_broadcast(&s->tok_done_cv);
    pthread_cond_broadcast(&s->conn_cv);
    pthread_mutex_unlock(&s->conn_mu);
    if (s->watchdog_started) pthread_join(s->watchdog, NULL);
    for (int i = 0; i < s->n_tok_threads; i++) pthread_join(s->tok_threads[i], NULL);   /* each ends its task first */
    st_free(s->tok_threads);
    MHD_socket lfd = MHD_quiesce_daemon(s->daemon);
    if (lfd != MHD_INVALID_SOCKET) close(lfd);
    if (s->sched.slots) sched_stop(&s->sched);
    double t_stop = now_seconds();
    while (atomic_load(&s->open_replies) > 0 && now_seconds() - t_stop < SHUTDOWN_GRACE_S) {
        struct timespec ts = { 0, 10 * 1000000L };
        nanosleep(&ts, NULL);
    }
    MHD_stop_daemon(s->daemon);
    if (s->sched.slots) sched_free(&s->sched);
    if (s->model) strata_model_free(s->model);
    st_free(s->tmpl);
    pthread_mutex_destroy(&s->stats_mu);
    pthread_mutex_destroy(&s->conn_mu);
    pthread_cond_destroy(&s->conn_cv);
    pthread_cond_destroy(&s->tok_cv);
    pthread_cond_destroy(&s->tok_done_cv);
    free(s);
    return rc;
}
