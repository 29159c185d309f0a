/* Chat templates: a Jinja interpreter for the subset that published chat templates use,
 * rendering byte-identically to Python's jinja2 as Hugging Face configures it
 * (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, tojson with
 * ensure_ascii=False, globals raise_exception / strftime_now / namespace / dict).
 * See docs/TEMPLATES.md for the supported subset.
 *
 * Every entry point returns a malloc'ed (st_malloc) string or NULL with a message in err;
 * nothing aborts. Limits (render depth, loop iterations, memory, output size) turn runaway
 * templates into clean errors. A template's raise_exception("msg") yields NULL with err
 * holding exactly "msg". */
#ifndef STRATA_JINJA_H
#define STRATA_JINJA_H
#include <stddef.h>
#include <stdint.h>

/* strftime_now's clock: JINJA_NOW_REAL reads the local wall clock (as Python's
 * datetime.now()); any other value is a Unix time rendered in UTC (tests, `--now`). */
#define JINJA_NOW_REAL INT64_MIN

/* Render with variables taken from a JSON object (vars_json; NULL = none).
 * Globals range/namespace/dict/raise_exception/strftime_now are always present. */
char *jinja_render(const char *template_src, const char *vars_json, int64_t now,
                   char *err, size_t errlen);

/* Render a chat the way transformers' apply_chat_template does: variables messages
 * (JSON array), tools (JSON array, or none when tools_json is NULL), add_generation_prompt,
 * bos_token, eos_token (empty when NULL), plus every key of extra_vars_json (an object or
 * NULL; e.g. {"enable_thinking": false}). Uses the real clock for strftime_now. */
char *jinja_render_chat(const char *template_src, const char *messages_json, const char *tools_json,
                        int add_generation_prompt, const char *bos_token, const char *eos_token,
                        const char *extra_vars_json, char *err, size_t errlen);
/* Same with a fixed clock (now: Unix seconds, or JINJA_NOW_REAL). */
char *jinja_render_chat_at(const char *template_src, const char *messages_json, const char *tools_json,
                           int add_generation_prompt, const char *bos_token, const char *eos_token,
                           const char *extra_vars_json, int64_t now, char *err, size_t errlen);

/* Parse only (syntax check, unknown filters/tests): 0 ok, -1 with err. */
int jinja_check(const char *template_src, char *err, size_t errlen);
#endif
