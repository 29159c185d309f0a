/* Chat prompt for the server: the model's own template through strata_chat_format, ChatML when
 * the model has none (or the engine build lacks the renderer). The engine symbols are weak
 * so the pure ChatML half links into tests without the engine. */
#include <stdio.h>
#include <string.h>
#include "core/util.h"
#include "server/server.h"

#pragma weak strata_chat_format
#pragma weak strata_model_chat_template
#pragma weak strata_free

char *chatml_format(const strata_chat_msg *msgs, int n) {
    sbuf b; sbuf_init(&b);
    for (int i = 0; i < n; i++) {
        /* "developer" is OpenAI's new name for "system" */
        const char *role = strcmp(msgs[i].role, "developer") ? msgs[i].role : "system";
        sbuf_printf(&b, "<|im_start|>%s\n", role);
        sbuf_puts(&b, msgs[i].content ? msgs[i].content : "");
        sbuf_puts(&b, "<|im_end|>\n");
    }
    sbuf_puts(&b, "<|im_start|>assistant\n");
    if (b.oom) { sbuf_free(&b); return NULL; }
    return b.p;   /* allocated with st_malloc: free with st_free */
}

/* Returns a string to free with st_free. */
char *srv_chat_prompt(const strata_model *m, const strata_chat_msg *msgs, int n, char *err, size_t errlen) {
    if (strata_chat_format && strata_model_chat_template && strata_model_chat_template(m)) {
        char *r = strata_chat_format(m, msgs, n, 1, NULL, err, errlen);
        if (!r) {
            /* a template the renderer cannot handle should not take the server down */
            static int warned;
            if (!warned++) fprintf(stderr, "strata serve: chat template failed (%s); using ChatML\n", err);
            goto chatml;
        }
        char *copy = st_strdup(r);
        if (strata_free) strata_free(r);
        if (!copy) snprintf(err, errlen, "out of memory");
        return copy;
    }
chatml:;
    char *r = chatml_format(msgs, n);
    if (!r) snprintf(err, errlen, "out of memory");
    return r;
}
