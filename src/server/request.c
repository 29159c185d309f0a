/* OpenAI request validation: see request.h. Messages copy OpenAI's wording where it has one,
 * so clients that surface error text read the same thing. */
#include "server/request.h"
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <math.h>
#include "core/util.h"
#include "server/stream.h"

int api_error_set(api_error *e, int status, const char *type, const char *param, const char *code,
                  const char *fmt, ...) {
    e->status = status;
    e->type = type;
    e->code = code;
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return -1;
}

json_t *api_error_json(const api_error *e) {
    sbuf msg; sbuf_init(&msg);
    utf8_append_sanitized(&msg, e->message, strlen(e->message));   /* may quote client bytes */
    json_t *err = json_pack("{s:s?, s:s, s:o, s:o}",
        "message", msg.p ? msg.p : "",
        "type", e->type ? e->type : "invalid_request_error",
        "param", e->param[0] ? json_string(e->param) : json_null(),
        "code", e->code ? json_string(e->code) : json_null());
    sbuf_free(&msg);
    return err ? json_pack("{s:o}", "error", err) : NULL;
}

static int bad_request(api_error *e, const char *param, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int bad_request(api_error *e, const char *param, const char *code, const char *fmt, ...) {
    char msg[sizeof e->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return api_error_set(e, 400, "invalid_request_error", param, code, "%s", msg);
}

static const char *json_kind_name(const json_t *v) {
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a decimal";
    case JSON_TRUE: case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

static int type_error(api_error *e, const char *param, const char *want, const json_t *got) {
    return bad_request(e, param, "invalid_type", "Invalid type for '%s': expected %s, but got %s instead.",
                       param, want, json_kind_name(got));
}

json_t *request_parse_object(const char *body, size_t len, api_error *e) {
    if (len == 0) {
        bad_request(e, NULL, NULL, "The request body is empty: send a JSON object (Content-Type: application/json).");
        return NULL;
    }
    json_error_t je;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        bad_request(e, NULL, NULL, "We could not parse the JSON body of your request: %s (line %d, column %d).",
                    je.text, je.line, je.column);
        return NULL;
    }
    if (!json_is_object(root)) {
        bad_request(e, NULL, NULL, "The request body must be a JSON object, but got %s.", json_kind_name(root));
        json_decref(root);
        return NULL;
    }
    return root;
}

/* ---- typed field readers: absent or null leave *out unchanged and return 0 -------------------- */
static int get_number(json_t *o, const char *key, double lo, double hi, double *out, int *present, api_error *e) {
    json_t *v = json_object_get(o, key);
    if (present) *present = 0;
    if (!v || json_is_null(v)) return 0;
    if (!json_is_number(v)) return type_error(e, key, "a decimal", v);
    double x = json_number_value(v);
    if (!isfinite(x)) return type_error(e, key, "a decimal", v);
    if (x < lo)
        return bad_request(e, key, "decimal_below_min_value",
                           "Invalid '%s': decimal below minimum value. Expected a value >= %g, but got %g instead.", key, lo, x);
    if (x > hi)
        return bad_request(e, key, "decimal_above_max_value",
                           "Invalid '%s': decimal above maximum value. Expected a value <= %g, but got %g instead.", key, hi, x);
    *out = x;
    if (present) *present = 1;
    return 0;
}

/* Integers: 7 and 7.0 are accepted, 7.5 is a type error. */
static int get_int(json_t *o, const char *key, long long lo, long long hi, long long *out, int *present, api_error *e) {
    json_t *v = json_object_get(o, key);
    if (present) *present = 0;
    if (!v || json_is_null(v)) return 0;
    long long x;
    if (json_is_integer(v)) x = json_integer_value(v);
    else if (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)) &&
             fabs(json_real_value(v)) < 9e15) x = (long long)json_real_value(v);
    else return type_error(e, key, "an integer", v);
    if (x < lo)
        return bad_request(e, key, "integer_below_min_value",
                           "Invalid '%s': integer below minimum value. Expected a value >= %lld, but got %lld instead.", key, lo, x);
    if (x > hi)
        return bad_request(e, key, "integer_above_max_value",
                           "Invalid '%s': integer above maximum value. Expected a value <= %lld, but got %lld instead.", key, hi, x);
    *out = x;
    if (present) *present = 1;
    return 0;
}

static int get_bool(json_t *o, const char *key, int *out, api_error *e) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_boolean(v)) return type_error(e, key, "a boolean", v);
    *out = json_is_true(v);
    return 0;
}

/* Copy a JSON string (may contain NUL bytes: they are kept out by cutting at the first). */
static char *dup_json_string(const json_t *v) {
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    char *d = st_malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

/* ---- messages ------------------------------------------------------------------------------- */
static const char *const known_roles[] = { "system", "developer", "user", "assistant", "tool" };

/* content: a string, null (assistant turns that only call tools), or an array of parts of
 * which only {"type":"text","text":...} are supported; text parts are concatenated. */
static int parse_content(json_t *c, int idx, char **out, api_error *e) {
    char param[96];
    snprintf(param, sizeof param, "messages[%d].content", idx);
    if (!c || json_is_null(c)) { *out = st_strdup(""); return *out ? 0 : api_error_set(e, 500, "server_error", NULL, NULL, "out of memory"); }
    if (json_is_string(c)) {
        *out = dup_json_string(c);
        return *out ? 0 : api_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
    }
    if (!json_is_array(c)) return type_error(e, param, "a string or an array of content parts", c);
    sbuf text; sbuf_init(&text);
    sbuf_append(&text, "", 0);
    for (size_t i = 0; i < json_array_size(c); i++) {
        json_t *part = json_array_get(c, i);
        char pp[128];
        snprintf(pp, sizeof pp, "%s[%zu]", param, i);
        if (!json_is_object(part)) { sbuf_free(&text); return type_error(e, pp, "an object", part); }
        json_t *type = json_object_get(part, "type");
        json_t *t = json_object_get(part, "text");
        if (!json_is_string(type) || strcmp(json_string_value(type), "text")) {
            sbuf_free(&text);
            snprintf(pp, sizeof pp, "%s[%zu].type", param, i);
            return bad_request(e, pp, "unsupported_value",
                               "Invalid '%s': only 'text' content parts are supported by this server.", pp);
        }
        if (!json_is_string(t)) {
            sbuf_free(&text);
            snprintf(pp, sizeof pp, "%s[%zu].text", param, i);
            return type_error(e, pp, "a string", t ? t : json_null());
        }
        sbuf_append(&text, json_string_value(t), strlen(json_string_value(t)));
    }
    if (text.oom) { sbuf_free(&text); return api_error_set(e, 500, "server_error", NULL, NULL, "out of memory"); }
    *out = text.p;
    return 0;
}

static int parse_messages(json_t *root, gen_request *r, api_error *e) {
    json_t *m = json_object_get(root, "messages");
    if (!m) return bad_request(e, "messages", "missing_required_parameter", "Missing required parameter: 'messages'.");
    if (!json_is_array(m)) return type_error(e, "messages", "an array", m);
    size_t n = json_array_size(m);
    if (n == 0)
        return bad_request(e, "messages", "empty_array",
                           "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.");
    if (n > 100000) return bad_request(e, "messages", "array_above_max_length", "Invalid 'messages': too many messages (%zu).", n);
    r->msgs = st_calloc(n, sizeof *r->msgs);
    if (!r->msgs) return api_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
    for (size_t i = 0; i < n; i++) {
        json_t *msg = json_array_get(m, i);
        char param[96];
        snprintf(param, sizeof param, "messages[%zu]", i);
        if (!json_is_object(msg)) return type_error(e, param, "an object", msg);
        json_t *role = json_object_get(msg, "role");
        snprintf(param, sizeof param, "messages[%zu].role", i);
        if (!role) return bad_request(e, param, "missing_required_parameter", "Missing required parameter: '%s'.", param);
        if (!json_is_string(role)) return type_error(e, param, "a string", role);
        const char *rs = json_string_value(role);
        int known = 0;
        for (size_t k = 0; k < sizeof known_roles / sizeof known_roles[0]; k++) known |= !strcmp(rs, known_roles[k]);
        if (!known)
            return bad_request(e, param, "invalid_value",
                               "Invalid value: '%.64s'. Supported values are: 'system', 'developer', 'user', 'assistant', and 'tool'.", rs);
        char *content = NULL;
        if (parse_content(json_object_get(msg, "content"), (int)i, &content, e)) return -1;
        char *role_copy = st_strdup(rs);
        if (!role_copy) { st_free(content); return api_error_set(e, 500, "server_error", NULL, NULL, "out of memory"); }
        r->msgs[i].role = role_copy;
        r->msgs[i].content = content;
        r->n_msgs = (int)i + 1;
    }
    return 0;
}

/* prompt: a string, an array of one string, an array of token ids, or an array of one such array */
static int parse_prompt(json_t *root, gen_request *r, api_error *e) {
    json_t *p = json_object_get(root, "prompt");
    if (!p) return bad_request(e, "prompt", "missing_required_parameter", "Missing required parameter: 'prompt'.");
    if (json_is_array(p) && json_array_size(p) == 1 &&
        (json_is_string(json_array_get(p, 0)) || json_is_array(json_array_get(p, 0))))
        p = json_array_get(p, 0);
    if (json_is_string(p)) {
        r->prompt = dup_json_string(p);
        return r->prompt ? 0 : api_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
    }
    if (json_is_array(p)) {
        size_t n = json_array_size(p);
        if (n == 0) return bad_request(e, "prompt", "empty_array", "Invalid 'prompt': empty array.");
        if (json_is_string(json_array_get(p, 0)))
            return bad_request(e, "prompt", "unsupported_value",
                               "Invalid 'prompt': only one prompt per request is supported by this server, got %zu.", n);
        if (n > (1u << 24)) return bad_request(e, "prompt", "array_above_max_length", "Invalid 'prompt': too many tokens.");
        r->prompt_ids = st_malloc(n * sizeof(int32_t));
        if (!r->prompt_ids) return api_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
        for (size_t i = 0; i < n; i++) {
            json_t *t = json_array_get(p, i);
            if (!json_is_integer(t) || json_integer_value(t) < 0 || json_integer_value(t) > INT32_MAX)
                return bad_request(e, "prompt", "invalid_type",
                                   "Invalid 'prompt[%zu]': expected a token id (a non-negative integer).", i);
            r->prompt_ids[i] = (int32_t)json_integer_value(t);
        }
        r->n_prompt_ids = (int)n;
        return 0;
    }
    return type_error(e, "prompt", "a string or an array of token ids", p);
}

static int parse_stop(json_t *root, gen_request *r, api_error *e) {
    json_t *s = json_object_get(root, "stop");
    if (!s || json_is_null(s)) return 0;
    if (json_is_string(s)) {
        if (json_string_length(s) == 0) return 0;
        r->stops[0] = dup_json_string(s);
        if (!r->stops[0]) return api_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
        r->n_stops = 1;
        return 0;
    }
    if (!json_is_array(s)) return type_error(e, "stop", "a string or an array of strings", s);
    if (json_array_size(s) > GEN_MAX_STOPS)
        return bad_request(e, "stop", "array_above_max_length",
                           "Invalid 'stop': array too long. Expected an array with maximum length %d, but got an array with length %zu instead.",
                           GEN_MAX_STOPS, json_array_size(s));
    for (size_t i = 0; i < json_array_size(s); i++) {
        json_t *v = json_array_get(s, i);
        if (!json_is_string(v)) {
            char param[32];
            snprintf(param, sizeof param, "stop[%zu]", i);
            return type_error(e, param, "a string", v);
        }
        if (json_string_length(v) == 0) continue;
        r->stops[r->n_stops] = dup_json_string(v);
        if (!r->stops[r->n_stops]) return api_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
        r->n_stops++;
    }
    return 0;
}

static int parse_response_format(json_t *root, gen_request *r, api_error *e);

/* Messages for the chat template with what tool use needs: assistant "tool_calls" (arguments
 * given as JSON text become objects, as transformers' templates expect), tool results'
 * "tool_call_id" and "name". Content parts were joined by parse_messages. */
static int parse_tool_messages(json_t *root, gen_request *r, api_error *e) {
    json_t *m = json_object_get(root, "messages"), *out = json_array();
    if (!out) return api_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
    for (int i = 0; i < r->n_msgs; i++) {
        json_t *msg = json_array_get(m, (size_t)i), *o = json_object();
        json_object_set_new(o, "role", json_string(r->msgs[i].role));
        json_t *c = json_object_get(msg, "content");
        json_object_set_new(o, "content", c && json_is_null(c) ? json_null() : json_string(r->msgs[i].content));
        json_t *tc = json_object_get(msg, "tool_calls");
        char param[96];
        if (tc && !json_is_null(tc)) {
            snprintf(param, sizeof param, "messages[%d].tool_calls", i);
            if (!json_is_array(tc)) { json_decref(o); json_decref(out); return type_error(e, param, "an array", tc); }
            json_t *calls = json_array();
            size_t k;
            json_t *call;
            json_array_foreach(tc, k, call) {
                json_t *fn = json_object_get(call, "function");
                json_t *name = json_object_get(fn, "name"), *args = json_object_get(fn, "arguments");
                if (!json_is_string(name)) {
                    json_decref(calls); json_decref(o); json_decref(out);
                    snprintf(param, sizeof param, "messages[%d].tool_calls[%zu].function.name", i, k);
                    return bad_request(e, param, "missing_required_parameter", "Missing required parameter: '%s'.", param);
                }
                json_t *a = NULL;
                if (json_is_string(args)) a = json_loads(json_string_value(args), JSON_DECODE_ANY, NULL);
                if (!a) a = args ? json_incref(args) : json_object();
                json_t *id = json_object_get(call, "id");
                json_array_append_new(calls, json_pack("{s:O?, s:s, s:{s:O, s:o}}", "id", id, "type", "function",
                                                       "function", "name", name, "arguments", a));
            }
            json_object_set_new(o, "tool_calls", calls);
            r->has_tool_msgs = 1;
        }
        json_t *tid = json_object_get(msg, "tool_call_id"), *nm = json_object_get(msg, "name");
        if (json_is_string(tid)) json_object_set(o, "tool_call_id", tid);
        if (json_is_string(nm)) json_object_set(o, "name", nm);
        if (!strcmp(r->msgs[i].role, "tool")) r->has_tool_msgs = 1;
        json_array_append_new(out, o);
    }
    r->messages_json = json_dumps(out, JSON_COMPACT);
    json_decref(out);
    if (!r->messages_json) return api_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
    return 0;
}

/* tools, tool_choice, parallel_tool_calls */
static int parse_tools(json_t *root, gen_request *r, api_error *e) {
    json_t *tools = json_object_get(root, "tools"), *tc = json_object_get(root, "tool_choice");
    r->parallel_tool_calls = 1;
    if (get_bool(root, "parallel_tool_calls", &r->parallel_tool_calls, e)) return -1;
    if (tools && !json_is_null(tools)) {
        if (!json_is_array(tools)) return type_error(e, "tools", "an array", tools);
        size_t i;
        json_t *t;
        json_array_foreach(tools, i, t) {
            char param[96];
            snprintf(param, sizeof param, "tools[%zu].function.name", i);
            json_t *type = json_object_get(t, "type");
            if (!json_is_object(t) || !json_is_string(type) || strcmp(json_string_value(type), "function")) {
                snprintf(param, sizeof param, "tools[%zu].type", i);
                return bad_request(e, param, "invalid_value", "Invalid '%s': only 'function' tools are supported.", param);
            }
            if (!json_is_string(json_object_get(json_object_get(t, "function"), "name")))
                return bad_request(e, param, "missing_required_parameter", "Missing required parameter: '%s'.", param);
        }
        if (json_array_size(tools) > 0) {
            r->tools_json = json_dumps(tools, JSON_COMPACT);
            if (!r->tools_json) return api_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
            r->tool_choice = TOOL_CHOICE_AUTO;
        }
    }
    if (!tc || json_is_null(tc)) return 0;
    if (json_is_string(tc)) {
        const char *v = json_string_value(tc);
        if (!strcmp(v, "none")) r->tool_choice = TOOL_CHOICE_NONE;
        else if (!strcmp(v, "auto")) r->tool_choice = r->tools_json ? TOOL_CHOICE_AUTO : TOOL_CHOICE_NONE;
        else if (!strcmp(v, "required")) r->tool_choice = TOOL_CHOICE_REQUIRED;
        else return bad_request(e, "tool_choice", "invalid_value",
                                "Invalid 'tool_choice': expected 'none', 'auto', 'required' or a function, but got '%.64s'.", v);
    } else if (json_is_object(tc)) {
        const char *name = json_string_value(json_object_get(json_object_get(tc, "function"), "name"));
        if (!name) return bad_request(e, "tool_choice.function.name", "missing_required_parameter",
                                      "Missing required parameter: 'tool_choice.function.name'.");
        r->tool_choice = TOOL_CHOICE_NAMED;
        if (!(r->tool_name = st_strdup(name))) return api_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
    } else return type_error(e, "tool_choice", "a string or an object", tc);
    if ((r->tool_choice == TOOL_CHOICE_REQUIRED || r->tool_choice == TOOL_CHOICE_NAMED) && !r->tools_json)
        return bad_request(e, "tool_choice", "invalid_value",
                           "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.");
    if (r->tool_choice == TOOL_CHOICE_NAMED) {
        json_t *t;
        size_t i;
        int found = 0;
        json_array_foreach(tools, i, t)
            found |= !strcmp(json_string_value(json_object_get(json_object_get(t, "function"), "name")), r->tool_name);
        if (!found) return bad_request(e, "tool_choice", "invalid_value",
                                       "Invalid 'tool_choice': no function named '%.64s' in 'tools'.", r->tool_name);
    }
    return 0;
}

static int parse_fields(json_t *root, gen_kind kind, gen_request *r, api_error *e) {
    json_t *v;
    if ((v = json_object_get(root, "model")) && !json_is_null(v)) {
        if (!json_is_string(v)) return type_error(e, "model", "a string", v);
        if (!(r->model = dup_json_string(v))) return api_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
    }
    if (kind == GEN_CHAT ? parse_messages(root, r, e) : parse_prompt(root, r, e)) return -1;
    if (kind == GEN_CHAT && (parse_tool_messages(root, r, e) || parse_tools(root, r, e))) return -1;

    long long n = 1;
    if (get_int(root, "n", 1, 128, &n, NULL, e)) return -1;
    if (n != 1)
        return bad_request(e, "n", "unsupported_value", "Invalid 'n': this server generates one choice per request (n=1), but got n=%lld.", n);
    if (kind == GEN_COMPLETION) {
        long long best_of = 1;
        if (get_int(root, "best_of", 1, 128, &best_of, NULL, e)) return -1;
        if (best_of != 1)
            return bad_request(e, "best_of", "unsupported_value", "Invalid 'best_of': only best_of=1 is supported by this server, but got %lld.", best_of);
        int echo = 0;
        if (get_bool(root, "echo", &echo, e)) return -1;
        if (echo) return bad_request(e, "echo", "unsupported_value", "Invalid 'echo': echo=true is not supported by this server.");
        if ((v = json_object_get(root, "suffix")) && !json_is_null(v)) {
            if (!json_is_string(v)) return type_error(e, "suffix", "a string", v);
            if (json_string_length(v))
                return bad_request(e, "suffix", "unsupported_value", "Invalid 'suffix': insertion (suffix) is not supported by this server.");
        }
    }

    if (get_bool(root, "stream", &r->stream, e)) return -1;
    if ((v = json_object_get(root, "stream_options")) && !json_is_null(v)) {
        if (!r->stream)
            return bad_request(e, "stream_options", "invalid_value", "The 'stream_options' parameter is only allowed when 'stream' is enabled.");
        if (!json_is_object(v)) return type_error(e, "stream_options", "an object", v);
        json_t *u = json_object_get(v, "include_usage");
        if (u && !json_is_null(u)) {
            if (!json_is_boolean(u)) return type_error(e, "stream_options.include_usage", "a boolean", u);
            r->include_usage = json_is_true(u);
        }
    }

    /* max_completion_tokens is the current name; max_tokens the deprecated one */
    long long mt = -1, mct = -1;
    int has_mt, has_mct;
    if (get_int(root, "max_tokens", 1, INT32_MAX, &mt, &has_mt, e)) return -1;
    if (get_int(root, "max_completion_tokens", 1, INT32_MAX, &mct, &has_mct, e)) return -1;
    r->max_tokens = (int)(has_mct ? mct : has_mt ? mt : -1);

    double x;
    int present;
    /* OpenAI defaults: temperature 1, top_p 1, no other truncation */
    /* set field by field (not strata_sampler_default_params) so this file needs no engine */
    memset(&r->sampler, 0, sizeof r->sampler);
    r->sampler.repeat_last_n = 64;
    r->sampler.temperature = 1.0f;
    r->sampler.top_p = 1.0f;
    r->sampler.top_k = 0;
    r->sampler.min_p = 0.0f;
    r->sampler.repeat_penalty = 1.0f;
    if (get_number(root, "temperature", 0, 2, &x, &present, e)) return -1;
    if (present) r->sampler.temperature = (float)x;
    if (get_number(root, "top_p", 0, 1, &x, &present, e)) return -1;
    if (present) r->sampler.top_p = (float)x;
    if (get_number(root, "min_p", 0, 1, &x, &present, e)) return -1;
    if (present) r->sampler.min_p = (float)x;
    long long k;
    if (get_int(root, "top_k", 0, INT32_MAX, &k, &present, e)) return -1;
    if (present) r->sampler.top_k = (int)k;
    if (get_number(root, "repeat_penalty", 0.01, 10, &x, &present, e)) return -1;   /* extension; 1 = off */
    if (present) r->sampler.repeat_penalty = (float)x;
    /* accepted for compatibility, range-checked, not applied (documented in docs/SERVER.md) */
    if (get_number(root, "frequency_penalty", -2, 2, &x, NULL, e)) return -1;
    if (get_number(root, "presence_penalty", -2, 2, &x, NULL, e)) return -1;
    long long seed;
    if (get_int(root, "seed", INT64_MIN, INT64_MAX, &seed, &r->has_seed, e)) return -1;
    if (r->has_seed) r->sampler.seed = (uint64_t)seed;

    if (parse_response_format(root, r, e)) return -1;

    if (kind == GEN_CHAT) {
        if (get_bool(root, "logprobs", &r->logprobs, e)) return -1;
        long long tl = 0;
        int has_tl;
        if (get_int(root, "top_logprobs", 0, GEN_MAX_TOP_LOGPROBS, &tl, &has_tl, e)) return -1;
        if (has_tl && !r->logprobs)
            return bad_request(e, "top_logprobs", "invalid_value",
                               "Invalid 'top_logprobs': 'logprobs' must be set to true when 'top_logprobs' is used.");
        r->top_logprobs = (int)tl;
    } else {
        /* legacy completions: logprobs is the number of alternatives, 0..5 */
        long long lp = 0;
        int has_lp;
        if (get_int(root, "logprobs", 0, 5, &lp, &has_lp, e)) return -1;
        r->logprobs = has_lp;
        r->top_logprobs = (int)lp;
    }
    return parse_stop(root, r, e);
}

/* response_format {"type": "text" | "json_object" | "json_schema", "json_schema": {"name", "schema",
 * "strict"}} and the "grammar" extension (GBNF text): compiled into r->grammar. */
static int parse_response_format(json_t *root, gen_request *r, api_error *e) {
    json_t *v = json_object_get(root, "response_format"), *gr = json_object_get(root, "grammar");
    char err[300] = "";
    char *text = NULL;
    const char *param = "response_format";
    if (gr && !json_is_null(gr)) {
        if (!json_is_string(gr)) return type_error(e, "grammar", "a string", gr);
        param = "grammar";
        text = dup_json_string(gr);
        if (!text) return api_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
    }
    if (v && !json_is_null(v)) {
        if (!json_is_object(v)) { st_free(text); return type_error(e, "response_format", "an object", v); }
        json_t *t = json_object_get(v, "type");
        const char *ts = json_is_string(t) ? json_string_value(t) : NULL;
        if (!ts || (strcmp(ts, "text") && strcmp(ts, "json_object") && strcmp(ts, "json_schema"))) {
            st_free(text);
            return bad_request(e, "response_format.type", "unsupported_value",
                               "Invalid 'response_format.type': expected 'text', 'json_object' or 'json_schema'.");
        }
        if (strcmp(ts, "text") && text) {
            st_free(text);
            return bad_request(e, "grammar", "invalid_value", "Invalid 'grammar': give either 'grammar' or a JSON 'response_format', not both.");
        }
        if (!strcmp(ts, "json_object")) text = json_schema_to_grammar(NULL, err, sizeof err);
        else if (!strcmp(ts, "json_schema")) {
            json_t *js = json_object_get(v, "json_schema");
            if (!json_is_object(js)) return type_error(e, "response_format.json_schema", "an object", js ? js : json_null());
            json_t *sc = json_object_get(js, "schema");
            param = "response_format.json_schema.schema";
            if (!sc) return bad_request(e, param, "missing_required_parameter",
                                        "Missing required parameter: 'response_format.json_schema.schema'.");
            char *sj = json_dumps(sc, JSON_COMPACT | JSON_ENCODE_ANY);
            if (!sj) return api_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
            text = json_schema_to_grammar(sj, err, sizeof err);
            free(sj);
        }
        if (!text && err[0]) return bad_request(e, param, "invalid_value", "Invalid '%s': %s", param, err);
    }
    if (!text) return 0;
    r->grammar = grammar_parse(text, err, sizeof err);
    st_free(text);
    if (!r->grammar) return bad_request(e, param, "invalid_value", "Invalid '%s': %s", param, err);
    return 0;
}

int gen_request_parse(const char *body, size_t len, gen_kind kind, gen_request *r, api_error *e) {
    memset(r, 0, sizeof *r);
    r->kind = kind;
    r->max_tokens = -1;
    json_t *root = request_parse_object(body, len, e);
    if (!root) return -1;
    int rc = parse_fields(root, kind, r, e);
    json_decref(root);
    if (rc) gen_request_free(r);
    return rc;
}

void gen_request_free(gen_request *r) {
    for (int i = 0; i < r->n_msgs; i++) {
        st_free((void *)r->msgs[i].role);
        st_free((void *)r->msgs[i].content);
    }
    st_free(r->msgs);
    st_free(r->model);
    st_free(r->prompt);
    st_free(r->prompt_ids);
    for (int i = 0; i < r->n_stops; i++) st_free(r->stops[i]);
    grammar_free(r->grammar);
    st_free(r->messages_json);
    st_free(r->tools_json);
    st_free(r->tool_name);
    gen_kind kind = r->kind;
    memset(r, 0, sizeof *r);
    r->kind = kind;
}
