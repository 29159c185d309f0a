/* libFuzzer target: the server's request parsing (src/server/request.c) -- the function
 * that turns an HTTP body into generation parameters, gen_request_parse, for both
 * /v1/chat/completions (GEN_CHAT) and /v1/completions (GEN_COMPLETION), and the error
 * document built from its message.
 *
 * Input: byte 0 chooses the endpoint (bit 0); the rest is the body. Oracles: a rejection
 * is a 4xx with a message and a JSON error object that serializes; an accepted request
 * keeps the documented bounds (<= 4 stops, top_logprobs 0..20, messages with role and
 * content strings, prompt text xor prompt ids). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "server/request.h"
#include "core/util.h"

#define FUZZ_ASSERT(c) do { if (!(c)) { fprintf(stderr, "fuzz_server_request: assertion failed: %s (line %d)\n", #c, __LINE__); abort(); } } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const gen_kind kind = (data[0] & 1) ? GEN_COMPLETION : GEN_CHAT;
    const char *body = (const char *)data + 1;
    const size_t len = size - 1;
    gen_request r;
    api_error e;
    memset(&e, 0, sizeof e);
    if (gen_request_parse(body, len, kind, &r, &e) != 0) {
        FUZZ_ASSERT(e.status >= 400 && e.status < 500);
        FUZZ_ASSERT(memchr(e.message, 0, sizeof e.message) && e.message[0]);
        json_t *j = api_error_json(&e);
        FUZZ_ASSERT(j != NULL);
        char *s = json_dumps(j, JSON_COMPACT);
        FUZZ_ASSERT(s != NULL);   /* the message was made valid UTF-8 */
        free(s);
        json_decref(j);
        FUZZ_ASSERT(r.msgs == NULL && r.prompt == NULL && r.n_stops == 0);   /* nothing left behind */
        return 0;
    }
    FUZZ_ASSERT(r.kind == kind);
    FUZZ_ASSERT(r.n_stops >= 0 && r.n_stops <= GEN_MAX_STOPS);
    for (int i = 0; i < r.n_stops; i++) FUZZ_ASSERT(r.stops[i] != NULL);
    FUZZ_ASSERT(r.top_logprobs >= 0 && r.top_logprobs <= GEN_MAX_TOP_LOGPROBS);
    FUZZ_ASSERT(r.max_tokens >= -1);
    if (kind == GEN_CHAT) {
        FUZZ_ASSERT(r.n_msgs >= 1 && r.msgs != NULL);
        for (int i = 0; i < r.n_msgs; i++) FUZZ_ASSERT(r.msgs[i].role && r.msgs[i].content);
    } else {
        FUZZ_ASSERT((r.prompt != NULL) != (r.prompt_ids != NULL) || (r.prompt == NULL && r.n_prompt_ids == 0));
        for (int i = 0; i < r.n_prompt_ids; i++) FUZZ_ASSERT(r.prompt_ids[i] >= 0);
    }
    gen_request_free(&r);

    /* an accepted body parsed again with the k-th allocation failing (k from the input): a
     * 500 "out of memory" or success, nothing leaked (jansson's own allocations use malloc
     * and are not injected) */
    st_alloc_fail_after(1 + (long)(size % 7));
    int rc = gen_request_parse(body, len, kind, &r, &e);
    int injected = st_alloc_fail_pending() == 0;
    st_alloc_fail_after(0);
    if (rc == 0) { FUZZ_ASSERT(!injected); gen_request_free(&r); }
    else FUZZ_ASSERT(injected && e.status == 500);
    return 0;
}
