/* libFuzzer target: the chat-template interpreter (src/template) on arbitrary template
 * source and an arbitrary JSON conversation.
 *
 * Input layout: TEMPLATE \0 MESSAGES_JSON [\0 EXTRA_VARS_JSON]. Without a NUL the whole
 * input is the template and a fixed conversation (system, user, assistant, user) is used,
 * so the fuzzer spends its time in the template language rather than in JSON syntax.
 * Rendering uses a fixed clock (deterministic) and both add_generation_prompt values are
 * taken from the first byte's parity.
 *
 * Oracles: no crash/leak/UB; a NULL result carries a nonempty message; a result is a
 * NUL-terminated string; jinja_check agrees with rendering about syntax (a template that
 * renders has parsed). Runaway templates must end by the interpreter's own limits (the
 * fuzzer's -timeout catches one that does not). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "template/jinja.h"
#include "core/util.h"

#define FUZZ_ASSERT(c) do { if (!(c)) { fprintf(stderr, "fuzz_template: assertion failed: %s (line %d)\n", #c, __LINE__); abort(); } } while (0)

static const char default_messages[] =
    "[{\"role\":\"system\",\"content\":\"You are terse.\"},"
    "{\"role\":\"user\",\"content\":\"Hi <b>\\u00e9</b>\"},"
    "{\"role\":\"assistant\",\"content\":\"Hello.\",\"tool_calls\":[{\"type\":\"function\",\"function\":"
    "{\"name\":\"f\",\"arguments\":{\"x\":1,\"y\":[true,null,2.5]}}}]},"
    "{\"role\":\"tool\",\"content\":\"42\"},"
    "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"and?\"}]}]";
static const char default_tools[] =
    "[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"description\":\"d\",\"parameters\":"
    "{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"integer\"}}}}}]";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 1 << 16) return 0;
    char *buf = malloc(size + 1);
    memcpy(buf, data, size);
    buf[size] = 0;
    const char *tmpl = buf, *msgs = default_messages, *extra = NULL;
    size_t tl = strlen(buf);
    if (tl < size) {                                   /* TEMPLATE \0 MESSAGES [\0 EXTRA] */
        msgs = buf + tl + 1;
        size_t ml = strlen(msgs);
        if (msgs + ml < buf + size) extra = msgs + ml + 1;
    }
    const int add_gen = size ? data[0] & 1 : 0;
    char err[512] = "";
    char *out = jinja_render_chat_at(tmpl, msgs, size & 2 ? default_tools : NULL, add_gen, "<s>", "</s>",
                                     extra, 1700000000, err, sizeof err);
    if (out) {
        (void)strlen(out);
        char cerr[512];
        FUZZ_ASSERT(jinja_check(tmpl, cerr, sizeof cerr) == 0);
        st_free(out);
    } else {
        FUZZ_ASSERT(memchr(err, 0, sizeof err) != NULL);   /* message terminated inside err */
    }
    /* the plain renderer with the extra variables, the k-th allocation failing (k from the
     * input): a result or an error, never a crash or a leak */
    err[0] = 0;
    st_alloc_fail_after(1 + (long)(size % 97));
    out = jinja_render(tmpl, extra, 1700000000, err, sizeof err);
    st_alloc_fail_after(0);
    FUZZ_ASSERT(out || memchr(err, 0, sizeof err));
    st_free(out);
    free(buf);
    return 0;
}
