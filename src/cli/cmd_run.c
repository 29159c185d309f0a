/* strata run / strata chat: stream a model's answer to stdout, stats to stderr. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "cli_common.h"
#include "cli_gen.h"
#include "core/util.h"
#include "grammar/grammar_model.h"

static const cli_command run_cmd = {
    CMD_RUN, "run", "[-m MODEL] [-p PROMPT | -f FILE] [options]",
    "Answers one prompt, streaming the text to stdout and the stats to stderr. --chat formats it\n"
    "with the model's chat template; --temp 0 is greedy. Ctrl-C stops (exit 130).\n"
    "--grammar / --json-schema constrain the answer (GBNF text or a JSON schema; @FILE reads a\n"
    "file; --json-schema '{}' is any JSON value): tokens the grammar forbids are masked.\n", 0 };

/* --grammar / --json-schema: the grammar, the model's vocabulary and the matcher whose mask
 * the session applies before each draw. 0 (also when neither was given), -1 with a message. */
typedef struct { grammar *g; grammar_vocab *v; grammar_match *match; char *text[2]; } cli_grammar;

static int open_grammar(const strata_model *m, const cli_opts *o, strata_session *s, cli_grammar *gc) {
    if (!o->grammar && !o->json_schema) return 0;
    const char *src[2] = { o->grammar, o->json_schema };
    for (int k = 0; k < 2; k++)
        if (src[k] && src[k][0] == '@') {
            gc->text[k] = cli_read_file(src[k] + 1, NULL);
            if (!gc->text[k]) return -1;
            src[k] = gc->text[k];
        }
    char err[512] = "";
    gc->g = grammar_from_options(src[0], src[1], 0, err, sizeof err);
    if (!gc->g) { fprintf(stderr, "strata: %s: %s\n", o->grammar ? "--grammar" : "--json-schema", err); return -1; }
    gc->v = grammar_vocab_for_model(m);
    gc->match = gc->v ? grammar_match_new(gc->g, gc->v) : NULL;
    if (!gc->match) { fprintf(stderr, "strata: out of memory for the grammar\n"); return -1; }
    strata_session_set_logits_mask(s, grammar_logits_mask, gc->match);
    strata_session_set_logits_mask_prepare(s, grammar_logits_mask_prepare, -1);
    return 0;
}

static void close_grammar(cli_grammar *gc) {
    grammar_match_free(gc->match);
    grammar_vocab_free(gc->v);
    grammar_free(gc->g);
    st_free(gc->text[0]);
    st_free(gc->text[1]);
}

int cmd_run(int argc, char **argv) {
    cli_opts o;
    int rc = cli_parse(&run_cmd, argc, argv, &o);
    if (rc >= 0) return rc;
    char *file_prompt = NULL;
    if (o.prompt_file) {
        if (o.prompt) return cli_usage_error("run", "give either -p PROMPT or -f FILE, not both");
        file_prompt = cli_read_file(o.prompt_file, NULL);
        if (!file_prompt) return CLI_ERR;
        o.prompt = file_prompt;
    }
    if (!o.prompt) o.prompt = "Tell me a short story about a robot who learns to paint.";
    strata_model *m = cli_load_model(&o);
    if (!m) { st_free(file_prompt); st_free(o.chat_template_text); return CLI_ERR; }
    char err[512];
    int n_ids = 0;
    int32_t *ids = NULL;
    if (o.chat) {
        strata_chat_msg msgs[2];
        int n = 0;
        if (o.system) msgs[n++] = (strata_chat_msg){ "system", o.system };
        msgs[n++] = (strata_chat_msg){ "user", o.prompt };
        /* the template's markers are special tokens, the user's text is text */
        n_ids = strata_chat_tokenize(m, msgs, n, 1, NULL, &ids, NULL, err, sizeof err);
        if (n_ids < 0) { fprintf(stderr, "strata: chat template: %s\n", err); strata_model_free(m); st_free(file_prompt); st_free(o.chat_template_text); return CLI_ERR; }
    } else ids = tokenize_alloc(m, o.prompt, 1, 0, &n_ids);
    cli_grammar gc = { 0 };
    strata_model *draft = NULL;
    strata_session *s = ids ? open_session(m, &o, &draft) : NULL;
    rc = CLI_ERR;
    if (!ids) fprintf(stderr, "strata: cannot tokenize the prompt\n");
    else if (!s) { /* reported */ }
    else if (n_ids < 1) fprintf(stderr, "strata: the prompt is empty\n");
    else if (n_ids + 1 > strata_session_n_ctx(s)) fprintf(stderr, "strata: the prompt has %d tokens; the context holds %d (use -c)\n", n_ids, strata_session_n_ctx(s));
    else {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = cli_on_sigint;
        sigaction(SIGINT, &sa, NULL);
        streamer st = { .m = m, .stops = o.stops, .n_stops = o.n_stops };
        strata_detok_init(&st.dt);
        if (open_grammar(m, &o, s, &gc) != 0) goto done;
        st.gm = gc.match;
        if (!o.chat) { fputs(o.prompt, stdout); fflush(stdout); }
        int max = o.n_predict;
        if (max < 0 || max > strata_session_n_ctx(s) - n_ids) max = strata_session_n_ctx(s) - n_ids;
        double pre_t = 0;
        int n = 0;
        if (max == 0) {   /* -n 0: the prompt is evaluated (its stats are printed), nothing generated */
            double t0 = now_seconds();
            n = eval_prompt_interruptible(s, ids, n_ids, &pre_t) < 0 ? -1 : 0;
            pre_t = now_seconds() - t0;
            if (n == 0) { rc = CLI_OK; if (o.show_stats && !cli_interrupted) print_stats(s, m, n_ids, pre_t); }
            else fprintf(stderr, "strata: prompt evaluation failed\n");
        } else {
            int e = eval_prompt_interruptible(s, ids, n_ids - 1, &pre_t);
            n = e == 0 ? strata_generate(s, ids + n_ids - 1, 1, max, on_token, &st) : e > 0 ? 0 : -1;
            stream_finish(&st);
            if (n >= 0) { rc = CLI_OK; if (o.show_stats && !cli_interrupted) print_stats(s, m, n_ids - 1, pre_t); }
            else fprintf(stderr, "strata: generation failed\n");
            if (n > 0 && n >= max && (o.n_predict < 0 || max < o.n_predict)) fprintf(stderr, "strata: stopped at the end of the context (%d tokens)\n", strata_session_n_ctx(s));
        }
        fputc('\n', stdout);
        fflush(stdout);
        st_free(st.text);
        if (gc.match && o.show_stats && !cli_interrupted) {
            long computed, cached;
            double secs;
            strata_stats ss;
            grammar_match_stats(gc.match, &computed, &cached, &secs);
            strata_session_get_stats(s, &ss);
            fprintf(stderr, "[grammar] masks computed %ld (%.1f ms), from the cache %ld, during the forward pass %ld\n",
                    computed, secs * 1e3, cached, ss.n_mask_overlap);
        }
        if (cli_interrupted) { fprintf(stderr, "strata: interrupted\n"); rc = CLI_INTERRUPTED; }
    }
done:
    close_grammar(&gc);
    strata_session_free(s);
    strata_model_free(draft);
    st_free(ids); st_free(file_prompt); st_free(o.chat_template_text);
    strata_model_free(m);
    return rc;
}
