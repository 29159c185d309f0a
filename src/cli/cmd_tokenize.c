/* strata tokenize -m MODEL.gguf [-f FILE | TEXT] [--pieces] [--no-bos] [--no-special]
 *
 * Prints the token ids of a text on one line, space-separated; with --pieces one token per
 * line: id, a tab and the token's bytes (non-printable bytes escaped). Needs only the
 * tokenizer keys of the file, so vocabulary-only GGUF files (no tensors) work. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "core/env.h"
#include "core/util.h"
#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"

static const char *usage_text =
    "usage: strata tokenize [-m MODEL.gguf] [-f FILE | TEXT] [--pieces] [--no-bos] [--no-special]\n"
    "  -m MODEL.gguf  model or vocabulary-only GGUF (default: %s)\n"
    "  -f FILE        tokenize the bytes of FILE ('-': standard input); without -f and TEXT,\n"
    "                 standard input is read\n"
    "  --pieces       one token per line: id, tab, the token's text (\\n, \\t, \\xNN escaped)\n"
    "  --no-bos       do not prepend BOS even when the model asks for it\n"
    "  --no-special   \"<|im_start|>\" and the like in the text stay plain text\n";

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
    const char *model = NULL, *file = NULL;
    int pieces = 0, no_bos = 0, no_special = 0;
    char *text = NULL;
    size_t text_len = 0, text_cap = 0;
    int have_text = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { printf(usage_text, env_default_model_path()); free(text); return 0; }
        if ((!strcmp(a, "-m") || !strcmp(a, "--model") || !strcmp(a, "-f") || !strcmp(a, "--file")) && i + 1 >= argc) {
            fprintf(stderr, "strata tokenize: %s needs a value\n", a);
            free(text);
            return 2;
        }
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) model = argv[++i];
        else if (!strcmp(a, "-f") || !strcmp(a, "--file")) file = argv[++i];
        else if (!strcmp(a, "--pieces")) pieces = 1;
        else if (!strcmp(a, "--no-bos")) no_bos = 1;
        else if (!strcmp(a, "--no-special")) no_special = 1;
        else if (a[0] == '-' && a[1] && strcmp(a, "--")) {
            fprintf(stderr, "strata tokenize: unknown option '%s'\n\n", a);
            fprintf(stderr, usage_text, env_default_model_path());
            free(text);
            return 2;
        } else {
            if (!strcmp(a, "--") && i + 1 < argc) a = argv[++i];
            /* several words join with spaces, as the shell split them */
            size_t l = strlen(a), need = text_len + l + 2;
            if (need > text_cap) {
                char *nt = realloc(text, need * 2);
                if (!nt) { free(text); fprintf(stderr, "strata tokenize: out of memory\n"); return 1; }
                text = nt;
                text_cap = need * 2;
            }
            if (have_text) text[text_len++] = ' ';
            memcpy(text + text_len, a, l);
            text_len += l;
            text[text_len] = 0;
            have_text = 1;
        }
    }
    if (file && have_text) {
        fprintf(stderr, "strata tokenize: give either -f FILE or TEXT, not both\n");
        free(text);
        return 2;
    }
    if (!have_text) {
        FILE *fp = (!file || !strcmp(file, "-")) ? stdin : fopen(file, "rb");
        if (!fp) { fprintf(stderr, "strata tokenize: cannot open '%s': ", file); perror(NULL); return 1; }
        text = read_stream(fp, &text_len);
        if (fp != stdin) fclose(fp);
        if (!text) { fprintf(stderr, "strata tokenize: cannot read '%s'\n", file ? file : "(stdin)"); return 1; }
    }
    if (!model) model = env_default_model_path();

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
