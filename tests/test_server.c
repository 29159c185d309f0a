/* Server unit tests that need no model: request validation (exact OpenAI-style 400 messages),
 * SSE framing and chunk bytes, UTF-8 holdback, stop-string holdback (also split across tokens),
 * Prometheus text. The end-to-end tests with the real openai client are in
 * tests/server/test_openai.py (make test-server). */
#include "test.h"
#include "core/util.h"
#include "server/openai.h"
#include "server/request.h"
#include "server/server.h"
#include "server/stream.h"
#include "server/tools.h"
#include "grammar/grammar.h"

/* Parse body as kind; expect a 400 whose message/param/code are exactly these. */
static void expect_400(gen_kind kind, const char *body, const char *message, const char *param, const char *code) {
    gen_request r;
    api_error e;
    memset(&e, 0, sizeof e);
    int rc = gen_request_parse(body, strlen(body), kind, &r, &e);
    CHECKF(rc == -1, "accepted: %s", body);
    if (rc != -1) { gen_request_free(&r); return; }
    CHECK_EQ_INT(e.status, 400);
    if (message) CHECK_STR(e.message, message);
    CHECK_STR(e.param, param ? param : "");
    if (code) CHECK_STR(e.code, code); else CHECK(e.code == NULL);
}

/* response_format json_object / json_schema and the grammar extension compile a grammar */
static void test_response_format_ok(void) {
    static const char *const bodies[] = {
        "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"response_format\":{\"type\":\"json_object\"}}",
        "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"response_format\":{\"type\":\"json_schema\","
        "\"json_schema\":{\"name\":\"p\",\"strict\":true,\"schema\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}},"
        "\"required\":[\"a\"],\"additionalProperties\":false}}}}",
        "{\"prompt\":\"x\",\"grammar\":\"root ::= [a-z]+\"}",
    };
    for (int i = 0; i < 3; i++) {
        gen_request r;
        api_error e;
        int rc = gen_request_parse(bodies[i], strlen(bodies[i]), i == 2 ? GEN_COMPLETION : GEN_CHAT, &r, &e);
        CHECKF(rc == 0 && r.grammar != NULL, "%s: %s", bodies[i], rc ? e.message : "no grammar");
        if (rc == 0) gen_request_free(&r);
    }
    const char *text = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"response_format\":{\"type\":\"text\"}}";
    gen_request r;
    api_error e;
    CHECK_EQ_INT(gen_request_parse(text, strlen(text), GEN_CHAT, &r, &e), 0);
    CHECK(r.grammar == NULL);
    gen_request_free(&r);
}

static void test_chat_request_ok(void) {
    const char *body = "{\"model\":\"x\",\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"},"
                       "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Hello \"},{\"type\":\"text\",\"text\":\"there\"}]}],"
                       "\"max_tokens\":7,\"temperature\":0,\"top_p\":0.5,\"top_k\":40,\"min_p\":0.05,\"seed\":42,"
                       "\"stop\":[\"\\n\\n\",\"END\"],\"stream\":true,\"stream_options\":{\"include_usage\":true},"
                       "\"logprobs\":true,\"top_logprobs\":3}";
    gen_request r;
    api_error e;
    CHECK_EQ_INT(gen_request_parse(body, strlen(body), GEN_CHAT, &r, &e), 0);
    CHECK_EQ_INT(r.n_msgs, 2);
    CHECK_STR(r.msgs[0].role, "system");
    CHECK_STR(r.msgs[1].content, "Hello there");
    CHECK_EQ_INT(r.max_tokens, 7);
    CHECK(r.sampler.temperature == 0.0f);
    CHECK(r.sampler.top_p == 0.5f);
    CHECK_EQ_INT(r.sampler.top_k, 40);
    CHECK(r.sampler.min_p == 0.05f);
    CHECK_EQ_INT(r.has_seed, 1);
    CHECK_EQ_INT((long long)r.sampler.seed, 42);
    CHECK_EQ_INT(r.n_stops, 2);
    CHECK_STR(r.stops[0], "\n\n");
    CHECK_STR(r.stops[1], "END");
    CHECK_EQ_INT(r.stream, 1);
    CHECK_EQ_INT(r.include_usage, 1);
    CHECK_EQ_INT(r.logprobs, 1);
    CHECK_EQ_INT(r.top_logprobs, 3);
    CHECK_STR(r.model, "x");
    gen_request_free(&r);

    /* defaults are OpenAI's: temperature 1, top_p 1, no limit, no stream */
    const char *min = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"stop\":\"x\",\"max_completion_tokens\":9,\"max_tokens\":3}";
    CHECK_EQ_INT(gen_request_parse(min, strlen(min), GEN_CHAT, &r, &e), 0);
    CHECK(r.sampler.temperature == 1.0f && r.sampler.top_p == 1.0f && r.sampler.top_k == 0);
    CHECK_EQ_INT(r.max_tokens, 9);           /* max_completion_tokens wins */
    CHECK_EQ_INT(r.stream, 0);
    CHECK_EQ_INT(r.has_seed, 0);
    CHECK_EQ_INT(r.n_stops, 1);
    CHECK_STR(r.stops[0], "x");
    gen_request_free(&r);

    const char *nolimit = "{\"messages\":[{\"role\":\"assistant\",\"content\":null},{\"role\":\"user\",\"content\":\"q\"}],\"max_tokens\":null,\"n\":1,\"max_tokens\":4.0}";
    /* duplicate keys are refused (JSON_REJECT_DUPLICATES) */
    CHECK_EQ_INT(gen_request_parse(nolimit, strlen(nolimit), GEN_CHAT, &r, &e), -1);
    const char *intreal = "{\"messages\":[{\"role\":\"assistant\",\"content\":null},{\"role\":\"user\",\"content\":\"q\"}],\"n\":1,\"max_tokens\":4.0}";
    CHECK_EQ_INT(gen_request_parse(intreal, strlen(intreal), GEN_CHAT, &r, &e), 0);
    CHECK_EQ_INT(r.max_tokens, 4);
    CHECK_STR(r.msgs[0].content, "");
    gen_request_free(&r);
}

static void test_chat_request_errors(void) {
    const char *m = "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]";
    char b[512];
    expect_400(GEN_CHAT, "{}", "Missing required parameter: 'messages'.", "messages", "missing_required_parameter");
    expect_400(GEN_CHAT, "{\"messages\":[]}",
               "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
               "messages", "empty_array");
    expect_400(GEN_CHAT, "{\"messages\":\"hi\"}", "Invalid type for 'messages': expected an array, but got a string instead.",
               "messages", "invalid_type");
    expect_400(GEN_CHAT, "{\"messages\":[{\"role\":\"wizard\",\"content\":\"x\"}]}",
               "Invalid value: 'wizard'. Supported values are: 'system', 'developer', 'user', 'assistant', and 'tool'.",
               "messages[0].role", "invalid_value");
    expect_400(GEN_CHAT, "{\"messages\":[{\"content\":\"x\"}]}", "Missing required parameter: 'messages[0].role'.",
               "messages[0].role", "missing_required_parameter");
    expect_400(GEN_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":{}}]}]}",
               "Invalid 'messages[0].content[0].type': only 'text' content parts are supported by this server.",
               "messages[0].content[0].type", "unsupported_value");
    expect_400(GEN_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":5}]}",
               "Invalid type for 'messages[0].content': expected a string or an array of content parts, but got an integer instead.",
               "messages[0].content", "invalid_type");
    snprintf(b, sizeof b, "{%s,\"n\":2}", m);
    expect_400(GEN_CHAT, b, "Invalid 'n': this server generates one choice per request (n=1), but got n=2.", "n", "unsupported_value");
    snprintf(b, sizeof b, "{%s,\"temperature\":3}", m);
    expect_400(GEN_CHAT, b, "Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got 3 instead.",
               "temperature", "decimal_above_max_value");
    snprintf(b, sizeof b, "{%s,\"temperature\":-0.5}", m);
    expect_400(GEN_CHAT, b, "Invalid 'temperature': decimal below minimum value. Expected a value >= 0, but got -0.5 instead.",
               "temperature", "decimal_below_min_value");
    snprintf(b, sizeof b, "{%s,\"temperature\":\"hot\"}", m);
    expect_400(GEN_CHAT, b, "Invalid type for 'temperature': expected a decimal, but got a string instead.", "temperature", "invalid_type");
    snprintf(b, sizeof b, "{%s,\"max_tokens\":0}", m);
    expect_400(GEN_CHAT, b, "Invalid 'max_tokens': integer below minimum value. Expected a value >= 1, but got 0 instead.",
               "max_tokens", "integer_below_min_value");
    snprintf(b, sizeof b, "{%s,\"max_tokens\":2.5}", m);
    expect_400(GEN_CHAT, b, "Invalid type for 'max_tokens': expected an integer, but got a decimal instead.", "max_tokens", "invalid_type");
    snprintf(b, sizeof b, "{%s,\"top_p\":1.5}", m);
    expect_400(GEN_CHAT, b, NULL, "top_p", "decimal_above_max_value");
    snprintf(b, sizeof b, "{%s,\"top_k\":-1}", m);
    expect_400(GEN_CHAT, b, NULL, "top_k", "integer_below_min_value");
    snprintf(b, sizeof b, "{%s,\"stream\":\"yes\"}", m);
    expect_400(GEN_CHAT, b, "Invalid type for 'stream': expected a boolean, but got a string instead.", "stream", "invalid_type");
    snprintf(b, sizeof b, "{%s,\"stream_options\":{\"include_usage\":true}}", m);
    expect_400(GEN_CHAT, b, "The 'stream_options' parameter is only allowed when 'stream' is enabled.", "stream_options", "invalid_value");
    snprintf(b, sizeof b, "{%s,\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}", m);
    expect_400(GEN_CHAT, b, "Invalid 'stop': array too long. Expected an array with maximum length 4, but got an array with length 5 instead.",
               "stop", "array_above_max_length");
    snprintf(b, sizeof b, "{%s,\"stop\":[\"a\",7]}", m);
    expect_400(GEN_CHAT, b, "Invalid type for 'stop[1]': expected a string, but got an integer instead.", "stop[1]", "invalid_type");
    snprintf(b, sizeof b, "{%s,\"top_logprobs\":2}", m);
    expect_400(GEN_CHAT, b, "Invalid 'top_logprobs': 'logprobs' must be set to true when 'top_logprobs' is used.", "top_logprobs", "invalid_value");
    snprintf(b, sizeof b, "{%s,\"logprobs\":true,\"top_logprobs\":21}", m);
    expect_400(GEN_CHAT, b, NULL, "top_logprobs", "integer_above_max_value");
    snprintf(b, sizeof b, "{%s,\"response_format\":{\"type\":\"xml\"}}", m);
    expect_400(GEN_CHAT, b, "Invalid 'response_format.type': expected 'text', 'json_object' or 'json_schema'.",
               "response_format.type", "unsupported_value");
    snprintf(b, sizeof b, "{%s,\"response_format\":{\"type\":\"json_schema\"}}", m);
    expect_400(GEN_CHAT, b, "Invalid type for 'response_format.json_schema': expected an object, but got null instead.",
               "response_format.json_schema", "invalid_type");
    snprintf(b, sizeof b, "{%s,\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"x\"}}}", m);
    expect_400(GEN_CHAT, b, "Missing required parameter: 'response_format.json_schema.schema'.",
               "response_format.json_schema.schema", "missing_required_parameter");
    snprintf(b, sizeof b, "{%s,\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"x\","
                          "\"schema\":{\"type\":\"string\",\"pattern\":\"a+\"}}}}", m);
    expect_400(GEN_CHAT, b, "Invalid 'response_format.json_schema.schema': json_schema: 'pattern' is not supported in a JSON schema here",
               "response_format.json_schema.schema", "invalid_value");
    snprintf(b, sizeof b, "{%s,\"grammar\":\"root ::= foo\"}", m);
    expect_400(GEN_CHAT, b, "Invalid 'grammar': grammar: rule 'foo' is used but not defined", "grammar", "invalid_value");
    snprintf(b, sizeof b, "{%s,\"grammar\":\"root ::= \\\"a\\\"\",\"response_format\":{\"type\":\"json_object\"}}", m);
    expect_400(GEN_CHAT, b, NULL, "grammar", "invalid_value");
    snprintf(b, sizeof b, "{%s,\"grammar\":7}", m);
    expect_400(GEN_CHAT, b, NULL, "grammar", "invalid_type");
    snprintf(b, sizeof b, "{%s,\"repeat_penalty\":0}", m);
    expect_400(GEN_CHAT, b, "Invalid 'repeat_penalty': decimal below minimum value. Expected a value >= 0.01, but got 0 instead.",
               "repeat_penalty", "decimal_below_min_value");
    snprintf(b, sizeof b, "{%s,\"seed\":1.5}", m);
    expect_400(GEN_CHAT, b, NULL, "seed", "invalid_type");

    /* not JSON / not an object / empty */
    api_error e;
    gen_request r;
    CHECK_EQ_INT(gen_request_parse("{\"messages\": [", 14, GEN_CHAT, &r, &e), -1);
    CHECK_EQ_INT(e.status, 400);
    CHECK(!strncmp(e.message, "We could not parse the JSON body of your request: ", 50));
    CHECK_EQ_INT(gen_request_parse("[1,2]", 5, GEN_CHAT, &r, &e), -1);
    CHECK_STR(e.message, "The request body must be a JSON object, but got an array.");
    CHECK_EQ_INT(gen_request_parse("", 0, GEN_CHAT, &r, &e), -1);
    CHECK_EQ_INT(e.status, 400);
    /* a NUL inside the body is not JSON */
    CHECK_EQ_INT(gen_request_parse("{\"a\":1}\0x", 9, GEN_CHAT, &r, &e), -1);
}

static void test_completion_request(void) {
    gen_request r;
    api_error e;
    const char *b1 = "{\"prompt\":\"Once upon\",\"max_tokens\":5,\"logprobs\":2}";
    CHECK_EQ_INT(gen_request_parse(b1, strlen(b1), GEN_COMPLETION, &r, &e), 0);
    CHECK_STR(r.prompt, "Once upon");
    CHECK_EQ_INT(r.logprobs, 1);
    CHECK_EQ_INT(r.top_logprobs, 2);
    gen_request_free(&r);
    const char *b2 = "{\"prompt\":[[1,2,3]]}";
    CHECK_EQ_INT(gen_request_parse(b2, strlen(b2), GEN_COMPLETION, &r, &e), 0);
    CHECK(r.prompt == NULL);
    CHECK_EQ_INT(r.n_prompt_ids, 3);
    CHECK_EQ_INT(r.prompt_ids[2], 3);
    gen_request_free(&r);
    const char *b3 = "{\"prompt\":[\"only one\"]}";
    CHECK_EQ_INT(gen_request_parse(b3, strlen(b3), GEN_COMPLETION, &r, &e), 0);
    CHECK_STR(r.prompt, "only one");
    gen_request_free(&r);
    expect_400(GEN_COMPLETION, "{}", "Missing required parameter: 'prompt'.", "prompt", "missing_required_parameter");
    expect_400(GEN_COMPLETION, "{\"prompt\":[\"a\",\"b\"]}",
               "Invalid 'prompt': only one prompt per request is supported by this server, got 2.", "prompt", "unsupported_value");
    expect_400(GEN_COMPLETION, "{\"prompt\":[1,-2]}", "Invalid 'prompt[1]': expected a token id (a non-negative integer).", "prompt", "invalid_type");
    expect_400(GEN_COMPLETION, "{\"prompt\":\"x\",\"logprobs\":6}", NULL, "logprobs", "integer_above_max_value");
    expect_400(GEN_COMPLETION, "{\"prompt\":\"x\",\"echo\":true}", "Invalid 'echo': echo=true is not supported by this server.", "echo", "unsupported_value");
    expect_400(GEN_COMPLETION, "{\"prompt\":\"x\",\"best_of\":3}", NULL, "best_of", "unsupported_value");
    expect_400(GEN_COMPLETION, "{\"prompt\":\"x\",\"n\":3}", NULL, "n", "unsupported_value");
    expect_400(GEN_COMPLETION, "{\"prompt\":{}}", "Invalid type for 'prompt': expected a string or an array of token ids, but got an object instead.",
               "prompt", "invalid_type");
}

static void test_error_json(void) {
    api_error e;
    api_error_set(&e, 401, "invalid_request_error", NULL, "invalid_api_key", "Incorrect API key provided.");
    json_t *j = api_error_json(&e);
    char *s = oai_dump(j);
    CHECK_STR(s, "{\"error\":{\"message\":\"Incorrect API key provided.\",\"type\":\"invalid_request_error\",\"param\":null,\"code\":\"invalid_api_key\"}}");
    free(s);
    json_decref(j);
    /* client bytes quoted in a message may be invalid UTF-8: the JSON must still be valid */
    api_error_set(&e, 400, "invalid_request_error", "x", NULL, "bad '%s'", "\xff");
    j = api_error_json(&e);
    s = j ? oai_dump(j) : NULL;
    CHECK_STR(s, "{\"error\":{\"message\":\"bad '\xEF\xBF\xBD'\",\"type\":\"invalid_request_error\",\"param\":\"x\",\"code\":null}}");
    free(s);
    json_decref(j);
}

static void test_sse_and_chunks(void) {
    sbuf o; sbuf_init(&o);
    sse_append_event(&o, "{\"a\":1}", 7);
    CHECK_STR(o.p, "data: {\"a\":1}\n\n");
    sbuf_clear(&o);
    sse_append_event(&o, "x\ny", 3);             /* multi-line data: one data: line each */
    CHECK_STR(o.p, "data: x\ndata: y\n\n");
    sbuf_clear(&o);
    sse_append_done(&o);
    CHECK_STR(o.p, "data: [DONE]\n\n");
    sbuf_clear(&o);

    oai_meta m = { "chatcmpl-abc", "smol", 1700000000, GEN_CHAT, 0 };
    sse_append_json(&o, oai_stream_chunk(&m, 1, "", 0, NULL, NULL));
    CHECK_STR(o.p, "data: {\"id\":\"chatcmpl-abc\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"smol\","
                   "\"system_fingerprint\":\"strata\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},"
                   "\"logprobs\":null,\"finish_reason\":null}]}\n\n");
    sbuf_clear(&o);
    sse_append_json(&o, oai_stream_chunk(&m, 0, "h\xC3\xA9\"\n", 5, NULL, NULL));
    CHECK_STR(o.p, "data: {\"id\":\"chatcmpl-abc\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"smol\","
                   "\"system_fingerprint\":\"strata\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"h\xC3\xA9\\\"\\n\"},"
                   "\"logprobs\":null,\"finish_reason\":null}]}\n\n");
    sbuf_clear(&o);
    m.usage_null = 1;
    sse_append_json(&o, oai_stream_chunk(&m, 0, NULL, 0, "length", NULL));
    CHECK_STR(o.p, "data: {\"id\":\"chatcmpl-abc\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"smol\","
                   "\"system_fingerprint\":\"strata\",\"choices\":[{\"index\":0,\"delta\":{},\"logprobs\":null,\"finish_reason\":\"length\"}],"
                   "\"usage\":null}\n\n");
    sbuf_clear(&o);
    sse_append_json(&o, oai_usage_chunk(&m, 12, 5, 3));
    CHECK_STR(o.p, "data: {\"id\":\"chatcmpl-abc\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"smol\","
                   "\"system_fingerprint\":\"strata\",\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":5,\"total_tokens\":17,\"prompt_tokens_details\":{\"cached_tokens\":3}}}\n\n");
    sbuf_clear(&o);
    oai_meta c = { "cmpl-x", "smol", 5, GEN_COMPLETION, 0 };
    sse_append_json(&o, oai_stream_chunk(&c, 0, "ab", 2, NULL, NULL));
    CHECK_STR(o.p, "data: {\"id\":\"cmpl-x\",\"object\":\"text_completion\",\"created\":5,\"model\":\"smol\",\"system_fingerprint\":\"strata\","
                   "\"choices\":[{\"index\":0,\"text\":\"ab\",\"logprobs\":null,\"finish_reason\":null}]}\n\n");
    sbuf_free(&o);

    /* non-stream response: usage and timings */
    oai_timings t = { .cache_n = 2, .prompt_n = 10, .predicted_n = 4, .prompt_ms = 100.0, .predicted_ms = 50.0 };
    json_t *r = oai_response(&m, "Paris", 5, "stop", NULL, 12, 4, 2, &t);
    CHECK_STR(json_string_value(json_object_get(r, "object")), "chat.completion");
    json_t *ch = json_array_get(json_object_get(r, "choices"), 0);
    CHECK_STR(json_string_value(json_object_get(json_object_get(ch, "message"), "content")), "Paris");
    CHECK_STR(json_string_value(json_object_get(ch, "finish_reason")), "stop");
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(r, "usage"), "total_tokens")), 16);
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(json_object_get(r, "usage"), "prompt_tokens_details"), "cached_tokens")), 2);
    json_t *tj = json_object_get(r, "timings");
    CHECK_EQ_INT(json_integer_value(json_object_get(tj, "cache_n")), 2);
    CHECK(fabs(json_real_value(json_object_get(tj, "prompt_per_second")) - 100.0) < 1e-9);
    CHECK(fabs(json_real_value(json_object_get(tj, "predicted_per_second")) - 80.0) < 1e-9);
    CHECK(json_object_get(tj, "draft_n") == NULL);   /* speculation off: no draft fields */
    json_decref(r);
    /* speculation on: drafted, accepted, their ratio, passes and tokens per pass */
    oai_timings ts = { .predicted_n = 30, .predicted_ms = 10.0, .spec = 1, .n_steps = 10, .n_drafted = 40, .n_accepted = 19 };
    tj = oai_timings_json(&ts);
    CHECK_EQ_INT(json_integer_value(json_object_get(tj, "draft_n")), 40);
    CHECK_EQ_INT(json_integer_value(json_object_get(tj, "draft_n_accepted")), 19);
    CHECK_EQ_INT(json_integer_value(json_object_get(tj, "decode_passes")), 10);
    CHECK(fabs(json_real_value(json_object_get(tj, "draft_acceptance_rate")) - 0.475) < 1e-9);
    CHECK(fabs(json_real_value(json_object_get(tj, "tokens_per_pass")) - 2.9) < 1e-9);
    json_decref(tj);
    ts.n_drafted = ts.n_accepted = 0;   /* on but nothing drafted: the fields say so */
    tj = oai_timings_json(&ts);
    CHECK(json_integer_value(json_object_get(tj, "draft_n")) == 0 && json_real_value(json_object_get(tj, "draft_acceptance_rate")) == 0.0
          && json_real_value(json_object_get(tj, "tokens_per_pass")) == 1.0);
    json_decref(tj);
}

static void test_logprobs_shape(void) {
    const char *tt[2] = { "a", "\xE2\x82" };
    size_t tl[2] = { 1, 2 };
    float tlp[2] = { -0.25f, -2.0f };
    json_t *entries = json_array();
    json_array_append_new(entries, oai_logprob_entry("a", 1, -0.25f, 2, tt, tl, tlp));
    json_array_append_new(entries, oai_logprob_entry("\xE2\x82", 2, -2.0f, 0, NULL, NULL, NULL));
    json_t *e1 = json_array_get(entries, 1);
    CHECK_STR(json_string_value(json_object_get(e1, "token")), "\xEF\xBF\xBD");   /* half a character */
    CHECK_EQ_INT(json_integer_value(json_array_get(json_object_get(e1, "bytes"), 1)), 0x82);
    size_t off = 10;
    json_t *c = oai_logprobs_shape(GEN_COMPLETION, entries, &off);
    char *s = oai_dump(c);
    CHECK_STR(s, "{\"tokens\":[\"a\",\"\xEF\xBF\xBD\"],\"token_logprobs\":[-0.25,-2.0],"
                 "\"top_logprobs\":[{\"a\":-0.25,\"\xEF\xBF\xBD\":-2.0},{}],\"text_offset\":[10,11]}");
    CHECK_EQ_INT(off, 13);
    free(s);
    json_decref(c);
}

static void test_utf8(void) {
    CHECK_EQ_INT(utf8_incomplete_tail("ab", 2), 0);
    CHECK_EQ_INT(utf8_incomplete_tail("a\xC3", 2), 1);
    CHECK_EQ_INT(utf8_incomplete_tail("\xE2\x82", 2), 2);
    CHECK_EQ_INT(utf8_incomplete_tail("\xE2\x82\xAC", 3), 0);      /* complete euro sign */
    CHECK_EQ_INT(utf8_incomplete_tail("x\xF0\x9F\x98", 4), 3);
    CHECK_EQ_INT(utf8_incomplete_tail("\xF0\x9F\x98\x80", 4), 0);
    CHECK_EQ_INT(utf8_incomplete_tail("a\x80", 2), 0);              /* stray continuation: invalid, not held */
    CHECK_EQ_INT(utf8_incomplete_tail("\xE0\x80", 2), 0);           /* overlong start: invalid */
    CHECK_EQ_INT(utf8_incomplete_tail("\xED\xA0", 2), 0);           /* surrogate start: invalid */
    sbuf o; sbuf_init(&o);
    utf8_append_sanitized(&o, "a\xFF" "b\xC3(\xE2\x82", 7);
    CHECK_STR(o.p, "a\xEF\xBF\xBD" "b\xEF\xBF\xBD(\xEF\xBF\xBD");
    sbuf_free(&o);
    CHECK(utf8_valid("h\xC3\xA9", 3));
    CHECK(!utf8_valid("h\xC3", 2));
    CHECK(!utf8_valid("\xC0\xAF", 2));   /* overlong slash */
}

/* Feed text in pieces; return what the filter emits (flushing at the end when not stopped). */
static char *filter_run(char *const *stops, int n_stops, const char *const *pieces, int n, int *stopped) {
    stop_filter f;
    stop_filter_init(&f, stops, n_stops);
    sbuf out; sbuf_init(&out);
    sbuf_append(&out, "", 0);
    *stopped = 0;
    for (int i = 0; i < n && !*stopped; i++) *stopped = stop_filter_push(&f, pieces[i], strlen(pieces[i]), &out);
    if (!*stopped) stop_filter_flush(&f, &out);
    stop_filter_free(&f);
    return out.p;
}

static void test_stop_filter(void) {
    char *stops[] = { "END", "\n\nUser:" };
    int stopped;
    /* split across three tokens: nothing of "E", "EN" leaks out */
    stop_filter f;
    stop_filter_init(&f, stops, 2);
    sbuf out; sbuf_init(&out);
    CHECK_EQ_INT(stop_filter_push(&f, "Hello E", 7, &out), 0);
    CHECK_STR(out.p, "Hello ");
    CHECK_EQ_INT(stop_filter_push(&f, "N", 1, &out), 0);
    CHECK_STR(out.p, "Hello ");                                   /* "EN" held back */
    CHECK_EQ_INT(stop_filter_push(&f, "D and more", 10, &out), 1);
    CHECK_STR(out.p, "Hello ");
    CHECK_EQ_INT(stop_filter_push(&f, "later", 5, &out), 1);     /* stays stopped */
    CHECK_STR(out.p, "Hello ");
    stop_filter_free(&f);
    sbuf_free(&out);

    /* a partial match that is contradicted is released */
    const char *p1[] = { "Hello E", "N", "X" };
    char *r = filter_run(stops, 2, p1, 3, &stopped);
    CHECK_STR(r, "Hello ENX");
    CHECK_EQ_INT(stopped, 0);
    st_free(r);
    /* partial match at the very end of generation is flushed */
    const char *p2[] = { "ab\n\nUse" };
    r = filter_run(stops, 2, p2, 1, &stopped);
    CHECK_STR(r, "ab\n\nUse");
    st_free(r);
    /* earliest of two stops wins */
    const char *p3[] = { "x\n\nUser: END" };
    r = filter_run(stops, 2, p3, 1, &stopped);
    CHECK_STR(r, "x");
    CHECK_EQ_INT(stopped, 1);
    st_free(r);
    /* overlapping prefix: "EEND" must stop at the second E */
    const char *p4[] = { "E", "E", "N", "D" };
    r = filter_run(stops, 2, p4, 4, &stopped);
    CHECK_STR(r, "E");
    CHECK_EQ_INT(stopped, 1);
    st_free(r);

    /* every way of cutting a text into 3 pieces gives the same output as the whole text */
    const char *text = "The answer is 42 \xE2\x82\xAC.\n\nUser: more";
    size_t n = strlen(text);
    int all_ok = 1;
    for (size_t a = 0; a <= n; a++)
        for (size_t b = a; b <= n; b++) {
            char s1[64], s2[64], s3[64];
            memcpy(s1, text, a); s1[a] = 0;
            memcpy(s2, text + a, b - a); s2[b - a] = 0;
            memcpy(s3, text + b, n - b); s3[n - b] = 0;
            const char *pp[] = { s1, s2, s3 };
            /* check every prefix of emitted output is valid UTF-8 too */
            stop_filter ff;
            stop_filter_init(&ff, stops, 2);
            sbuf o2; sbuf_init(&o2);
            sbuf_append(&o2, "", 0);
            int st = 0;
            for (int i = 0; i < 3 && !st; i++) {
                st = stop_filter_push(&ff, pp[i], strlen(pp[i]), &o2);
                if (!utf8_valid(o2.p, o2.len)) all_ok = 0;
            }
            if (!st || strcmp(o2.p, "The answer is 42 \xE2\x82\xAC.")) all_ok = 0;
            stop_filter_free(&ff);
            sbuf_free(&o2);
        }
    CHECK(all_ok);

    /* without stops the filter only holds back incomplete UTF-8 */
    stop_filter_init(&f, NULL, 0);
    sbuf_init(&out);
    stop_filter_push(&f, "a\xE2\x82", 3, &out);
    CHECK_STR(out.p, "a");
    stop_filter_push(&f, "\xAC", 1, &out);
    CHECK_STR(out.p, "a\xE2\x82\xAC");
    stop_filter_push(&f, "\xF0\x9F", 2, &out);
    stop_filter_flush(&f, &out);                                 /* unfinished at the end: U+FFFD */
    CHECK_STR(out.p, "a\xE2\x82\xAC\xEF\xBF\xBD");
    stop_filter_free(&f);
    sbuf_free(&out);

    /* a stop string with a multi-byte character, arriving byte by byte */
    char *arrow[] = { "\xE2\x86\x92" };
    const char *p5[] = { "x", "\xE2", "\x86", "\x92", "y" };
    r = filter_run(arrow, 1, p5, 5, &stopped);
    CHECK_STR(r, "x");
    CHECK_EQ_INT(stopped, 1);
    st_free(r);
    /* empty stop strings are ignored, not matched everywhere */
    char *empty[] = { "" };
    const char *p6[] = { "abc" };
    r = filter_run(empty, 1, p6, 1, &stopped);
    CHECK_STR(r, "abc");
    CHECK_EQ_INT(stopped, 0);
    st_free(r);
}

/* Admission counts (issue 21): jobs in the ring that idle slots will take at the decode
 * thread's next iteration are starting, not waiting. No decode thread here: the ring is seen
 * before it would move them. */
static void test_submit_counts(void) {
    srv_sched sc;
    memset(&sc, 0, sizeof sc);
    sc.n_slots = 2; sc.q_cap = 1; sc.q_alloc = 3;
    srv_slot slots[2];
    memset(slots, 0, sizeof slots);
    srv_job *queue[3] = { 0 };
    sc.slots = slots; sc.queue = queue;
    pthread_mutex_init(&sc.mu, NULL);
    pthread_cond_init(&sc.wake, NULL);
    gen_request r;
    memset(&r, 0, sizeof r);
    int32_t tok = 1;
    srv_job *j[4];
    for (int i = 0; i < 4; i++) j[i] = job_new(&r, &tok, 1);
    int running = -1, waiting = -1;
    CHECK_EQ_INT(sched_submit(&sc, j[0], &running, &waiting), 0);
    CHECK_EQ_INT(sched_submit(&sc, j[1], &running, &waiting), 0);
    CHECK_EQ_INT(sched_submit(&sc, j[2], &running, &waiting), 0);
    /* two idle slots, three admitted: two are starting, one waits */
    CHECK_EQ_INT(sched_submit(&sc, j[3], &running, &waiting), -1);
    CHECK_EQ_INT(running, 2);
    CHECK_EQ_INT(waiting, 1);
    CHECK_EQ_INT(sc.counters.rejected, 1);
    /* one slot generating (its job out of the ring), two in the ring: one starts, one waits */
    sc.q_head = 1; sc.q_len = 2;
    slots[0].job = j[0];
    CHECK_EQ_INT(sched_submit(&sc, j[3], &running, &waiting), -1);
    CHECK_EQ_INT(running, 2);
    CHECK_EQ_INT(waiting, 1);
    slots[0].job = NULL;
    sc.q_head = 0; sc.q_len = 3;
    sched_stop(&sc);   /* ends the ring's jobs with the shutdown error */
    CHECK_EQ_INT(sc.q_len, 0);
    CHECK(j[0]->state == JOB_DONE && j[0]->finish == NULL && strstr(j[0]->error, "shutting down"));
    CHECK_EQ_INT(sched_submit(&sc, j[3], &running, &waiting), -2);
    for (int i = 0; i < 4; i++) job_release(&sc, j[i]);
    pthread_mutex_destroy(&sc.mu);
    pthread_cond_destroy(&sc.wake);
}

static void test_metrics(void) {
    srv_metrics m;
    memset(&m, 0, sizeof m);
    m.ready = 1; m.slots_total = 4; m.slots_busy = 2; m.queue_depth = 3; m.queue_capacity = 8;
    m.requests[EP_CHAT][metrics_code_index(200)] = 5;
    m.requests[EP_CHAT][metrics_code_index(429)] = 2;
    m.c.generated_tokens = 100;
    m.c.busy_seconds = 4.0;
    m.c.decode_steps = 40; m.c.spec_drafted = 50; m.c.spec_accepted = 30;
    m.c.cached_tokens = 70; m.c.copied_tokens = 60;
    m.h.refused_per_ip = 7; m.h.tok_peak = 2;
    sbuf o; sbuf_init(&o);
    metrics_render(&o, &m);
    CHECK(strstr(o.p, "strata_spec_drafted_tokens_total 50\n") != NULL);
    CHECK(strstr(o.p, "strata_connections_refused_total{reason=\"per_ip\"} 7\n") != NULL);
    CHECK(strstr(o.p, "strata_tokenizer_busy_peak 2\n") != NULL);
    CHECK(strstr(o.p, "strata_spec_accepted_tokens_total 30\n") != NULL);
    CHECK(strstr(o.p, "strata_decode_passes_total 40\n") != NULL);
    CHECK(strstr(o.p, "strata_spec_acceptance_rate 0.600000\n") != NULL);
    CHECK(strstr(o.p, "strata_tokens_per_pass 1.750000\n") != NULL);
    CHECK(strstr(o.p, "# TYPE strata_queue_depth gauge\nstrata_queue_depth 3\n") != NULL);
    CHECK(strstr(o.p, "strata_http_requests_total{endpoint=\"chat_completions\",code=\"429\"} 2\n") != NULL);
    CHECK(strstr(o.p, "strata_slots_busy 2\n") != NULL);
    CHECK(strstr(o.p, "strata_tokens_per_second 25.000\n") != NULL);
    CHECK(strstr(o.p, "strata_generated_tokens_total 100\n") != NULL);
    CHECK(strstr(o.p, "strata_prompt_tokens_cached_total 70\n") != NULL);
    CHECK(strstr(o.p, "strata_prompt_tokens_copied_total 60\n") != NULL);
    /* every line is a comment or "name[{labels}] number" */
    int bad = 0;
    for (char *line = o.p; *line;) {
        char *nl = strchr(line, '\n');
        if (!nl) { bad++; break; }
        if (line[0] != '#') {
            char *sp = memchr(line, ' ', (size_t)(nl - line));
            char *end;
            if (!sp) bad++;
            else { strtod(sp + 1, &end); if (end != nl) bad++; }
        }
        line = nl + 1;
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(metrics_code_index(418), metrics_code_index(500));
    sbuf_free(&o);
}

/* ---- tool calls --------------------------------------------------------------------------------- */
static char *read_all(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *b = malloc((size_t)n + 1);
    size_t got = fread(b, 1, (size_t)n, f);
    b[got] = 0;
    fclose(f);
    return b;
}

static void test_tool_formats(void) {
    static const struct { const char *file; tool_format f; } cases[] = {
        { "Qwen-Qwen2.5-7B-Instruct", TOOLFMT_HERMES }, { "Qwen-Qwen3-0.6B", TOOLFMT_HERMES },
        { "NousResearch-Hermes-3-Llama-3.1-8B-tool_use", TOOLFMT_HERMES },
        { "meta-llama-Llama-3.1-8B-Instruct", TOOLFMT_LLAMA3 }, { "meta-llama-Llama-3.2-3B-Instruct", TOOLFMT_LLAMA3 },
        { "mistralai-Mistral-Nemo-Instruct-2407", TOOLFMT_MISTRAL }, { "Mistral-Small-3.2-24B-Instruct-2506", TOOLFMT_MISTRAL },
        { "unsloth-mistral-Devstral-Small-2507", TOOLFMT_MISTRAL }, { "meetkai-functionary-medium-v3.2", TOOLFMT_FUNCTIONARY },
        /* no tools rendered, or another call syntax than these four */
        { "smollm2", TOOLFMT_NONE }, { "gemma3", TOOLFMT_NONE }, { "google-gemma-2-2b-it", TOOLFMT_NONE },
        { "Qwen3-Coder", TOOLFMT_NONE }, { "GLM-4.7-Flash", TOOLFMT_NONE },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[256];
        snprintf(path, sizeof path, "tests/data/templates/%s.jinja", cases[i].file);
        char *t = read_all(path);
        CHECKF(t != NULL, "%s missing (run from the repository root)", path);
        if (!t) continue;
        tool_format f = tool_format_of(t);
        CHECKF(f == cases[i].f, "%s: %s, expected %s", cases[i].file, tool_format_name(f), tool_format_name(cases[i].f));
        free(t);
    }
    CHECK(tool_format_of(NULL) == TOOLFMT_NONE);
}

static const char *byte_tok(void *u, int32_t id, size_t *len) {
    static char bytes[256];
    (void)u;
    bytes[id] = (char)id;
    *len = 1;
    return &bytes[id];
}
static int byte_text(void *u, int32_t id) { (void)u; return id > 0; }

/* does grammar text g accept s completely? */
static int grammar_accepts(const char *g, const char *s) {
    char err[256];
    grammar *gr = grammar_parse(g, err, sizeof err);
    if (!gr) { fprintf(stderr, "  grammar: %s\n", err); return -1; }
    grammar_vocab_src src = { 256, byte_tok, byte_text, NULL, NULL };
    grammar_vocab *v = grammar_vocab_new(&src);
    grammar_match *m = grammar_match_new(gr, v);
    int ok = grammar_match_bytes(m, s, strlen(s)) == 0 && grammar_match_can_end(m);
    grammar_match_free(m);
    grammar_vocab_free(v);
    grammar_free(gr);
    return ok;
}

static void test_tool_grammar_and_parse(void) {
    json_t *tools = json_loads("[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":{\"type\":\"object\","
                               "\"properties\":{\"city\":{\"type\":\"string\"},\"days\":{\"type\":\"integer\"}},\"required\":[\"city\"]}}},"
                               "{\"type\":\"function\",\"function\":{\"name\":\"now\"}}]", 0, NULL);
    static const struct { tool_format f; const char *good, *bad, *two; } fam[] = {
        { TOOLFMT_HERMES, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n</tool_call>",
          "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"days\": 2}}\n</tool_call>",
          "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\n</tool_call>" },
        { TOOLFMT_LLAMA3, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\", \"days\": 2}}",
          "{\"name\": \"get_weather\", \"parameters\": {\"city\": 7}}", NULL },
        { TOOLFMT_MISTRAL, "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}]",
          "[TOOL_CALLS][{\"name\": \"get_wether\", \"arguments\": {\"city\": \"Paris\"}}]",
          "[TOOL_CALLS][{\"name\": \"now\", \"arguments\": {}}, {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}]" },
        { TOOLFMT_FUNCTIONARY, "get_weather\n{\"city\": \"Paris\", \"days\": 2}", "get_weather\n{\"city\": \"Paris\", \"days\": \"2\"}",
          "now\n{}>>>get_weather\n{\"city\": \"Rome\"}" },
    };
    char err[256];
    for (size_t k = 0; k < sizeof fam / sizeof fam[0]; k++) {
        char *g1 = tool_call_grammar(fam[k].f, tools, NULL, 0, err, sizeof err);
        char *gp = tool_call_grammar(fam[k].f, tools, NULL, 1, err, sizeof err);
        char *gn = tool_call_grammar(fam[k].f, tools, "now", 0, err, sizeof err);
        CHECKF(g1 && gp && gn, "%s: %s", tool_format_name(fam[k].f), err);
        if (!g1 || !gp || !gn) { st_free(g1); st_free(gp); st_free(gn); continue; }
        CHECKF(grammar_accepts(g1, fam[k].good) == 1, "%s good", tool_format_name(fam[k].f));
        CHECKF(grammar_accepts(g1, fam[k].bad) == 0, "%s bad", tool_format_name(fam[k].f));
        CHECK(grammar_accepts(gn, fam[k].good) == 0);            /* only "now" allowed */
        if (fam[k].two) {
            CHECKF(grammar_accepts(gp, fam[k].two) == 1, "%s parallel", tool_format_name(fam[k].f));
            CHECK(grammar_accepts(g1, fam[k].two) == 0);         /* one call unless parallel */
        }
        /* what the grammar forces, the parser reads back */
        char *content = NULL;
        json_t *calls = tool_calls_parse(fam[k].f, fam[k].good, strlen(fam[k].good), 1, &content);
        CHECK_EQ_INT(json_array_size(calls), 1);
        json_t *fn = json_object_get(json_array_get(calls, 0), "function");
        CHECK_STR(json_string_value(json_object_get(fn, "name")), "get_weather");
        CHECK_STR(json_string_value(json_object_get(fn, "arguments")), "{\"city\":\"Paris\",\"days\":2}");
        const char *id = json_string_value(json_object_get(json_array_get(calls, 0), "id"));
        CHECK(id && strlen(id) == 29 && !strncmp(id, "call_", 5));
        CHECK(content == NULL);
        json_decref(calls);
        st_free(content);
        if (fam[k].two) {
            calls = tool_calls_parse(fam[k].f, fam[k].two, strlen(fam[k].two), 2, &content);
            CHECK_EQ_INT(json_array_size(calls), 2);
            CHECK_STR(json_string_value(json_object_get(json_object_get(json_array_get(calls, 0), "function"), "name")), "now");
            json_decref(calls);
            st_free(content);
        }
        st_free(g1); st_free(gp); st_free(gn);
    }
    CHECK(tool_call_grammar(TOOLFMT_HERMES, tools, "nope", 0, err, sizeof err) == NULL && strstr(err, "no function named 'nope'"));
    json_decref(tools);
    /* text around calls, malformed calls, plain answers */
    static const struct { tool_format f; const char *text; int n; const char *content; } p[] = {
        { TOOLFMT_HERMES, "Let me check.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": 1}}\n</tool_call>", 1, "Let me check." },
        { TOOLFMT_HERMES, "<tool_call>\nnot json\n</tool_call>", 0, "<tool_call>\nnot json\n</tool_call>" },
        { TOOLFMT_HERMES, "<tool_call>{\"name\": \"a\", \"arguments\": \"{\\\"x\\\": 1}\"}", 1, NULL },   /* unclosed, string args */
        { TOOLFMT_HERMES, "  Just text.  ", 0, "Just text." },
        { TOOLFMT_LLAMA3, "<|python_tag|>{\"name\": \"a\", \"parameters\": {}}", 1, NULL },
        { TOOLFMT_LLAMA3, "{\"answer\": 42}", 0, "{\"answer\": 42}" },
        { TOOLFMT_MISTRAL, "Sure.[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\", \"arguments\": {}}]", 2, "Sure." },
        { TOOLFMT_MISTRAL, "[TOOL_CALLS][{\"arguments\": {}}]", 0, "[TOOL_CALLS][{\"arguments\": {}}]" },
        { TOOLFMT_FUNCTIONARY, "all\nHello there", 0, "Hello there" },
        { TOOLFMT_FUNCTIONARY, "all\nChecking.>>>a\n{\"x\": 1}", 1, "Checking." },
    };
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) {
        char *content = NULL;
        json_t *calls = tool_calls_parse(p[i].f, p[i].text, strlen(p[i].text), 3, &content);
        CHECKF((int)json_array_size(calls) == p[i].n, "case %zu: %zu calls", i, json_array_size(calls));
        if (p[i].content) CHECK_STR(content, p[i].content); else CHECKF(content == NULL, "case %zu: content \"%s\"", i, content);
        json_decref(calls);
        st_free(content);
    }
}

/* streaming with tools: what may be sent as content at each length of the text */
static void test_tool_window(void) {
    static const struct { tool_format f; const char *text; size_t start, end; } w[] = {
        { TOOLFMT_HERMES, "Hello there", 0, 11 },
        { TOOLFMT_HERMES, "Hello <tool", 0, 6 },                      /* could become the marker */
        { TOOLFMT_HERMES, "Hello <tool_call>\n{\"na", 0, 6 },
        { TOOLFMT_HERMES, "a < b", 0, 5 },
        { TOOLFMT_HERMES, "x<", 0, 1 },
        { TOOLFMT_MISTRAL, "Sure [TOOL_CA", 0, 5 },
        { TOOLFMT_MISTRAL, "Sure [TOOLS] x", 0, 14 },
        { TOOLFMT_LLAMA3, "  ", 0, 0 },
        { TOOLFMT_LLAMA3, " {\"name\"", 0, 0 },
        { TOOLFMT_LLAMA3, "<|python", 0, 0 },
        { TOOLFMT_LLAMA3, "<b>bold", 0, 7 },
        { TOOLFMT_LLAMA3, "The answer", 0, 10 },
        { TOOLFMT_FUNCTIONARY, "al", 0, 0 },
        { TOOLFMT_FUNCTIONARY, "all\nHi >", 4, 7 },
        { TOOLFMT_FUNCTIONARY, "all\nHi >>>get", 4, 7 },
        { TOOLFMT_FUNCTIONARY, "get_weather\n{", 0, 0 },
    };
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
        size_t a = 99, b = 99;
        tool_text_window(w[i].f, w[i].text, strlen(w[i].text), &a, &b);
        CHECKF(a == w[i].start && b == w[i].end, "\"%s\" (%s): [%zu, %zu), expected [%zu, %zu)", w[i].text,
               tool_format_name(w[i].f), a, b, w[i].start, w[i].end);
    }
    /* the window only grows as text is appended (every prefix of a reply with a call) */
    const char *reply = "Let me look. <tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call> done";
    size_t last = 0;
    int monotone = 1;
    for (size_t n = 0; n <= strlen(reply); n++) {
        size_t a, b;
        tool_text_window(TOOLFMT_HERMES, reply, n, &a, &b);
        monotone &= b >= last && b <= 13;
        last = b;
    }
    CHECK(monotone && last == 13);
}

static void test_tool_requests(void) {
    const char *m = "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"},{\"role\":\"assistant\",\"content\":null,"
                    "\"tool_calls\":[{\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"x\\\":1}\"}}]},"
                    "{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":\"42\"}]";
    const char *tools = "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{\"type\":\"object\"}}}]";
    char b[2048];
    snprintf(b, sizeof b, "{%s,%s,\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"f\"}},\"parallel_tool_calls\":false}", m, tools);
    gen_request r;
    api_error e;
    CHECK_EQ_INT(gen_request_parse(b, strlen(b), GEN_CHAT, &r, &e), 0);
    CHECK(r.has_tool_msgs && r.tools_json && r.tool_choice == TOOL_CHOICE_NAMED && !r.parallel_tool_calls);
    CHECK_STR(r.tool_name, "f");
    /* arguments given as JSON text reach the template as an object; null content stays null */
    CHECK_STR(r.messages_json, "[{\"role\":\"user\",\"content\":\"hi\"},{\"role\":\"assistant\",\"content\":null,"
              "\"tool_calls\":[{\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":{\"x\":1}}}]},"
              "{\"role\":\"tool\",\"content\":\"42\",\"tool_call_id\":\"call_1\"}]");
    gen_request_free(&r);
    snprintf(b, sizeof b, "{%s,%s}", m, tools);
    CHECK_EQ_INT(gen_request_parse(b, strlen(b), GEN_CHAT, &r, &e), 0);
    CHECK(r.tool_choice == TOOL_CHOICE_AUTO && r.parallel_tool_calls == 1);
    gen_request_free(&r);
    snprintf(b, sizeof b, "{%s,%s,\"tool_choice\":\"sometimes\"}", m, tools);
    expect_400(GEN_CHAT, b, "Invalid 'tool_choice': expected 'none', 'auto', 'required' or a function, but got 'sometimes'.",
               "tool_choice", "invalid_value");
    snprintf(b, sizeof b, "{%s,\"tool_choice\":\"required\"}", m);
    expect_400(GEN_CHAT, b, "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
               "tool_choice", "invalid_value");
    snprintf(b, sizeof b, "{%s,%s,\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"g\"}}}", m, tools);
    expect_400(GEN_CHAT, b, "Invalid 'tool_choice': no function named 'g' in 'tools'.", "tool_choice", "invalid_value");
    snprintf(b, sizeof b, "{%s,\"tools\":[{\"type\":\"retrieval\"}]}", m);
    expect_400(GEN_CHAT, b, "Invalid 'tools[0].type': only 'function' tools are supported.", "tools[0].type", "invalid_value");
    snprintf(b, sizeof b, "{%s,\"tools\":[{\"type\":\"function\",\"function\":{}}]}", m);
    expect_400(GEN_CHAT, b, NULL, "tools[0].function.name", "missing_required_parameter");
    snprintf(b, sizeof b, "{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"function\":{}}]}]}");
    expect_400(GEN_CHAT, b, NULL, "messages[0].tool_calls[0].function.name", "missing_required_parameter");
}

int main(void) {
    RUN(test_submit_counts);
    RUN(test_tool_formats);
    RUN(test_tool_grammar_and_parse);
    RUN(test_tool_requests);
    RUN(test_tool_window);
    RUN(test_chat_request_ok);
    RUN(test_response_format_ok);
    RUN(test_chat_request_errors);
    RUN(test_completion_request);
    RUN(test_error_json);
    RUN(test_sse_and_chunks);
    RUN(test_logprobs_shape);
    RUN(test_utf8);
    RUN(test_stop_filter);
    RUN(test_metrics);
    TEST_DONE();
}
