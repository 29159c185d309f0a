/* strata tokenize -m MODEL.gguf [-f FILE | TEXT] [--pieces] [--no-bos] [--no-special]
 *
 * Prints the token ids of a text on one line, space-separated; with --pieces one token per
 * line: id, a tab and the token's bytes (non-printable bytes escaped). Needs only the
 * tokenizer keys of the file, so vocabulary-only GGUF files (no tensors) work. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "cli_common.h"
#include "core/env.h"
#include "core/util.h"
#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"

static const cli_command tokenize_cmd = {
    CMD_TOKENIZE, "tokenize", "[-m MODEL.gguf] [-f FILE | TEXT...] [options]",
    "Prints the token ids of a text on one line. The model may be a vocabulary-only GGUF.\n"
    "Without -f and TEXT, standard input is read; several TEXT words join with spaces.\n", 64 };

static char *read_stream(FILE *fp, size_t *len) {
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    if (!buf) return NULL;
    for (;;) {
        if (n == cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) { free(buf); return NULL; }
            buf = nb;
            cap *= 2;
        }
        size_t r = fread(buf + n, 1, cap - n, fp);
        n += r;
        if (r == 0) break;
    }
    if (ferror(fp)) { free(buf); return NULL; }
    *len = n;
    return buf;
}

static void print_piece(const char *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '\n') fputs("\\n", stdout);
        else if (c == '\t') fputs("\\t", stdout);
        else if (c == '\r') fputs("\\r", stdout);
        else if (c == '\\') fputs("\\\\", stdout);
        else if (c < 0x20 || c == 0x7f) printf("\\x%02x", c);
        else putchar(c);
    }
}

int cmd_tokenize(int argc, char **argv) {
    cli_opts o;
    int rc = cli_parse(&tokenize_cmd, argc, argv, &o);
    if (rc >= 0) return rc;
    const char *model = o.model, *file = o.prompt_file;
    int pieces = o.pieces, no_bos = o.no_bos, no_special = o.no_special;
    char *text = NULL;
    size_t text_len = 0;
    int have_text = o.n_args > 0;
    if (have_text) {   /* several words join with spaces, as the shell split them */
        size_t need = 1;
        for (int i = 0; i < o.n_args; i++) need += strlen(o.args[i]) + 1;
        text = malloc(need);
        if (!text) { fprintf(stderr, "strata tokenize: out of memory\n"); return 1; }
        for (int i = 0; i < o.n_args; i++) {
            if (i) text[text_len++] = ' ';
            memcpy(text + text_len, o.args[i], strlen(o.args[i]));
            text_len += strlen(o.args[i]);
        }
        text[text_len] = 0;
    }
    if (file && have_text) {
        free(text);
        return cli_usage_error("tokenize", "give either -f FILE or TEXT, not both");
    }
    if (!have_text) {
        FILE *fp = (!file || !strcmp(file, "-")) ? stdin : fopen(file, "rb");
        if (!fp) { fprintf(stderr, "strata tokenize: cannot open '%s': ", file); perror(NULL); return 1; }
        text = read_stream(fp, &text_len);
        if (fp != stdin) fclose(fp);
        if (!text) { fprintf(stderr, "strata tokenize: cannot read '%s'\n", file ? file : "(stdin)"); return 1; }
    }

    char err[512];
    gguf_file *g = NULL;
    tokenizer *t = NULL;
    if (gguf_open(model, &g, err, sizeof err)) {
        fprintf(stderr, "strata tokenize: %s\n", err);
        free(text);
        return 1;
    }
    if (tokenizer_load_gguf(g, &t, err, sizeof err)) {
        fprintf(stderr, "strata tokenize: %s\n", err);
        gguf_close(g);
        free(text);
        return 1;
    }
    gguf_close(g);

    int add_bos = !no_bos && tokenizer_add_bos(t);
    int n = tokenizer_encode(t, text, text_len, add_bos, !no_special, NULL, 0);
    int32_t *ids = n > 0 ? malloc((size_t)n * sizeof *ids) : NULL;
    if (n < 0 || (n > 0 && !ids)) {
        fprintf(stderr, "strata tokenize: out of memory\n");
        free(ids); free(text); tokenizer_free(t);
        return 1;
    }
    if (n > 0) tokenizer_encode(t, text, text_len, add_bos, !no_special, ids, n);
    for (int i = 0; i < n; i++) {
        if (pieces) {
            size_t l;
            const char *p = tokenizer_token_bytes(t, ids[i], &l);
            printf("%d\t", ids[i]);
            print_piece(p, l);
            putchar('\n');
        } else {
            printf(i ? " %d" : "%d", ids[i]);
        }
    }
    if (!pieces) putchar('\n');
    free(ids);
    free(text);
    tokenizer_free(t);
    return 0;
}
