/* Jinja lexer with Hugging Face's settings: trim_blocks (drop the first newline after a
 * block or comment tag), lstrip_blocks (drop spaces/tabs from the line start up to a block or
 * comment tag), `-` / `+` whitespace control, newlines normalized to \n and one trailing
 * newline of the source dropped (keep_trailing_newline=False). Mirrors jinja2/lexer.py. */
#include "template/jinja_int.h"
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    jctx *c;
    const char *s; size_t n, pos;
    int line;
    jtok *t; size_t nt, cap;
    int line_starting;
} lexer;

static void push(lexer *L, int type, const char *s, size_t n, int line) {
    if (L->nt == L->cap) {
        size_t cap = L->cap ? L->cap * 2 : 256;
        jtok *nt = ja_alloc(L->c, cap * sizeof(jtok));
        if (L->nt) memcpy(nt, L->t, L->nt * sizeof(jtok));
        L->t = nt; L->cap = cap;
    }
    jtok *t = &L->t[L->nt++];
    memset(t, 0, sizeof *t);
    t->type = type; t->s = s; t->n = n; t->line = line;
}

static int count_nl(const char *s, size_t n) {
    int k = 0;
    for (size_t i = 0; i < n; i++) k += s[i] == '\n';
    return k;
}

/* Python str.rstrip(): strip trailing Unicode whitespace. Returns the new length. */
static size_t rstrip_len(const char *s, size_t n) {
    size_t p = 0, keep = 0;
    while (p < n) {
        uint32_t cp = (uint32_t)jutf8_decode(s, n, &p);
        if (!jis_py_space(cp)) keep = p;
    }
    return keep;
}
/* Length of the run of Unicode whitespace at s. */
static size_t ws_run(const char *s, size_t n) {
    size_t p = 0;
    while (p < n) {
        size_t q = p;
        uint32_t cp = (uint32_t)jutf8_decode(s, n, &q);
        if (!jis_py_space(cp)) break;
        p = q;
    }
    return p;
}

/* Emit the text before a tag, applying `-` stripping or lstrip_blocks. */
static void emit_text(lexer *L, size_t start, size_t end, char sign, int is_var) {
    const char *text = L->s + start;
    size_t n = end - start;
    if (sign == '-') n = rstrip_len(text, n);
    else if (sign != '+' && !is_var) {
        size_t lpos = n;
        while (lpos > 0 && text[lpos - 1] != '\n') lpos--;
        if ((lpos > 0 || L->line_starting) && lpos < n && ws_run(text + lpos, n - lpos) == n - lpos) n = lpos;
    }
    if (n) push(L, T_DATA, text, n, L->line);
    L->line += count_nl(L->s + start, end - start);
}

/* Decode a Python string literal body (unicode-escape semantics). */
static void decode_string(lexer *L, jtok *t, const char *s, size_t n) {
    jbuf b = {0};
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (ch != '\\' || i + 1 >= n) { jbuf_putc(L->c, &b, ch); continue; }
        char e = s[++i];
        switch (e) {
        case '\n': break;
        case '\\': jbuf_putc(L->c, &b, '\\'); break;
        case '\'': jbuf_putc(L->c, &b, '\''); break;
        case '"': jbuf_putc(L->c, &b, '"'); break;
        case 'a': jbuf_putc(L->c, &b, 7); break;
        case 'b': jbuf_putc(L->c, &b, 8); break;
        case 'f': jbuf_putc(L->c, &b, 12); break;
        case 'n': jbuf_putc(L->c, &b, '\n'); break;
        case 'r': jbuf_putc(L->c, &b, '\r'); break;
        case 't': jbuf_putc(L->c, &b, '\t'); break;
        case 'v': jbuf_putc(L->c, &b, 11); break;
        case 'x': case 'u': case 'U': {
            int want = e == 'x' ? 2 : e == 'u' ? 4 : 8;
            uint32_t cp = 0;
            for (int k = 0; k < want; k++) {
                if (i + 1 >= n || !isxdigit((unsigned char)s[i + 1]))
                    jfail(L->c, "line %d: truncated \\%cXX escape in string literal", t->line, e);
                char h = s[++i];
                cp = cp * 16 + (uint32_t)(h <= '9' ? h - '0' : (h | 32) - 'a' + 10);
            }
            if (cp > 0x10FFFF) jfail(L->c, "line %d: illegal Unicode character in string literal", t->line);
            jutf8_put(L->c, &b, cp);
            break;
        }
        default:
            if (e >= '0' && e <= '7') {
                uint32_t cp = (uint32_t)(e - '0');
                for (int k = 0; k < 2 && i + 1 < n && s[i + 1] >= '0' && s[i + 1] <= '7'; k++)
                    cp = cp * 8 + (uint32_t)(s[++i] - '0');
                jutf8_put(L->c, &b, cp);
            } else { jbuf_putc(L->c, &b, '\\'); jbuf_putc(L->c, &b, e); }
        }
    }
    t->s = b.p ? b.p : ""; t->n = b.n;
}

static const char *const ops2[] = { "//", "**", "==", "!=", ">=", "<=" };
static const char ops1[] = "+-/*%~[](){}><=.:|,;";

/* Tokens inside {{ }} or {% %} up to and including the end tag. */
static void lex_tag(lexer *L, int is_block) {
    int depth = 0; /* open brackets: an end tag inside brackets lexes as operators */
    int start_line = L->line;
    for (;;) {
        const char *s = L->s; size_t n = L->n, p = L->pos;
        if (p >= n) jfail(L->c, "line %d: unexpected end of template: unclosed '%s'", start_line, is_block ? "{%" : "{{");
        char ch = s[p];
        /* end tag */
        if (!depth) {
            char e = is_block ? '%' : '}';
            if (is_block && ch == '+' && p + 2 < n && s[p + 1] == '%' && s[p + 2] == '}') {
                push(L, T_BLOCK_END, s + p, 3, L->line); L->pos = p + 3; L->line_starting = 0; return;
            }
            if (ch == '-' && p + 2 < n && s[p + 1] == e && s[p + 2] == '}') {
                size_t q = p + 3, w = ws_run(s + q, n - q);
                push(L, is_block ? T_BLOCK_END : T_VAR_END, s + p, 3, L->line);
                L->line += count_nl(s + q, w);
                L->pos = q + w;
                L->line_starting = w > 0 && s[q + w - 1] == '\n';
                return;
            }
            if (ch == e && p + 1 < n && s[p + 1] == '}') {
                size_t q = p + 2;
                push(L, is_block ? T_BLOCK_END : T_VAR_END, s + p, 2, L->line);
                L->line_starting = 0;
                if (is_block && q < n && s[q] == '\n') { q++; L->line++; L->line_starting = 1; }
                L->pos = q;
                return;
            }
        }
        /* whitespace */
        size_t w = ws_run(s + p, n - p);
        if (w) { L->line += count_nl(s + p, w); L->pos = p + w; continue; }
        /* numbers */
        if (isdigit((unsigned char)ch)) {
            size_t q = p;
            char buf[128]; size_t k = 0;
            int is_float = 0;
            if (ch == '0' && q + 1 < n && strchr("xXoObB", s[q + 1]) && q + 2 < n && isxdigit((unsigned char)s[q + 2])) {
                int base = (s[q + 1] | 32) == 'x' ? 16 : (s[q + 1] | 32) == 'o' ? 8 : 2;
                q += 2;
                while (q < n && (isxdigit((unsigned char)s[q]) || s[q] == '_')) { if (s[q] != '_' && k < 100) buf[k++] = s[q]; q++; }
                buf[k] = 0;
                push(L, T_INT, s + p, q - p, L->line);
                L->t[L->nt - 1].i = (int64_t)strtoull(buf, NULL, base);
                L->pos = q; continue;
            }
            while (q < n && (isdigit((unsigned char)s[q]) || (s[q] == '_' && q + 1 < n && isdigit((unsigned char)s[q + 1])))) {
                if (s[q] != '_' && k < 100) buf[k++] = s[q];
                q++;
            }
            if (q + 1 < n && s[q] == '.' && isdigit((unsigned char)s[q + 1])) {
                is_float = 1; buf[k++] = '.'; q++;
                while (q < n && (isdigit((unsigned char)s[q]) || (s[q] == '_' && q + 1 < n && isdigit((unsigned char)s[q + 1])))) {
                    if (s[q] != '_' && k < 110) buf[k++] = s[q];
                    q++;
                }
            }
            if (q < n && (s[q] | 32) == 'e') {
                size_t r = q + 1;
                if (r < n && (s[r] == '+' || s[r] == '-')) r++;
                if (r < n && isdigit((unsigned char)s[r])) {
                    is_float = 1; buf[k++] = 'e';
                    if (s[q + 1] == '-') buf[k++] = '-';
                    q = r;
                    while (q < n && (isdigit((unsigned char)s[q]) || s[q] == '_')) { if (s[q] != '_' && k < 120) buf[k++] = s[q]; q++; }
                }
            }
            buf[k] = 0;
            push(L, is_float ? T_FLOAT : T_INT, s + p, q - p, L->line);
            if (is_float) L->t[L->nt - 1].f = strtod(buf, NULL);
            else {
                char *endp; unsigned long long v = strtoull(buf, &endp, 10);
                if (k > 18 && (k > 19 || strcmp(buf, "9223372036854775807") > 0))
                    jfail(L->c, "line %d: integer literal %s is too large", L->line, buf);
                L->t[L->nt - 1].i = (int64_t)v;
            }
            L->pos = q; continue;
        }
        /* names */
        if (isalpha((unsigned char)ch) || ch == '_') {
            size_t q = p;
            while (q < n && (isalnum((unsigned char)s[q]) || s[q] == '_')) q++;
            push(L, T_NAME, s + p, q - p, L->line);
            L->pos = q; continue;
        }
        /* strings */
        if (ch == '\'' || ch == '"') {
            size_t q = p + 1;
            while (q < n && s[q] != ch) { if (s[q] == '\\') q++; q++; }
            if (q >= n) jfail(L->c, "line %d: unterminated string literal", L->line);
            push(L, T_STRING, NULL, 0, L->line);
            decode_string(L, &L->t[L->nt - 1], s + p + 1, q - p - 1);
            L->line += count_nl(s + p, q - p);
            L->pos = q + 1; continue;
        }
        /* operators */
        int matched = 0;
        for (size_t k = 0; k < sizeof ops2 / sizeof ops2[0]; k++)
            if (p + 1 < n && s[p] == ops2[k][0] && s[p + 1] == ops2[k][1]) {
                push(L, T_OP, s + p, 2, L->line); L->pos = p + 2; matched = 1; break;
            }
        if (matched) continue;
        if (strchr(ops1, ch) && ch) {
            if (ch == '(' || ch == '[' || ch == '{') depth++;
            else if (ch == ')' || ch == ']' || ch == '}') {
                if (!depth) jfail(L->c, "line %d: unexpected '%c'", L->line, ch);
                depth--;
            }
            push(L, T_OP, s + p, 1, L->line); L->pos = p + 1; continue;
        }
        jfail(L->c, "line %d: unexpected char '%c' in tag", L->line, ch);
    }
}

/* `{% raw %}` ... `{% endraw %}`: returns 1 when the block at p (after "{%" and sign) is raw. */
static int try_raw(lexer *L, size_t p, size_t *after) {
    const char *s = L->s; size_t n = L->n;
    p += ws_run(s + p, n - p);
    if (p + 3 > n || memcmp(s + p, "raw", 3)) return 0;
    p += 3;
    p += ws_run(s + p, n - p);
    if (p + 1 < n && s[p] == '-' && p + 2 < n && s[p + 1] == '%' && s[p + 2] == '}') {
        p += 3; p += ws_run(s + p, n - p);
    } else if (p + 1 < n && s[p] == '%' && s[p + 1] == '}') p += 2;
    else return 0;
    *after = p;
    return 1;
}

static void lex_raw(lexer *L, size_t body) {
    const char *s = L->s; size_t n = L->n;
    for (size_t p = body; p + 1 < n; p++) {
        if (s[p] != '{' || s[p + 1] != '%') continue;
        size_t q = p + 2; char sign = 0;
        if (q < n && (s[q] == '-' || s[q] == '+')) sign = s[q++];
        q += ws_run(s + q, n - q);
        if (q + 6 > n || memcmp(s + q, "endraw", 6)) continue;
        q += 6; q += ws_run(s + q, n - q);
        size_t end;
        if (q + 2 < n && s[q] == '+' && s[q + 1] == '%' && s[q + 2] == '}') end = q + 3;
        else if (q + 2 < n && s[q] == '-' && s[q + 1] == '%' && s[q + 2] == '}') { end = q + 3; end += ws_run(s + end, n - end); }
        else if (q + 1 < n && s[q] == '%' && s[q + 1] == '}') { end = q + 2; if (end < n && s[end] == '\n') end++; }
        else continue;
        L->line_starting = 0;
        emit_text(L, body, p, sign, 0);
        L->line += count_nl(s + p, end - p);
        L->pos = end;
        L->line_starting = s[end - 1] == '\n';
        return;
    }
    jfail(L->c, "line %d: missing end of raw directive", L->line);
}

void jlex(jctx *c, const char *src) {
    /* normalize newlines, drop one trailing newline */
    size_t sn = strlen(src);
    char *s = ja_alloc(c, sn + 1);
    size_t n = 0;
    for (size_t i = 0; i < sn; i++) {
        if (src[i] == '\r') { s[n++] = '\n'; if (i + 1 < sn && src[i + 1] == '\n') i++; }
        else s[n++] = src[i];
    }
    if (n && s[n - 1] == '\n') n--;
    s[n] = 0;
    lexer L = { .c = c, .s = s, .n = n, .line = 1, .line_starting = 1 };
    while (L.pos < n) {
        /* next tag start */
        size_t p = L.pos;
        const char *hit = NULL;
        while (p + 1 < n) {
            hit = memchr(s + p, '{', n - p - 1);
            if (!hit) break;
            char nx = hit[1];
            if (nx == '{' || nx == '%' || nx == '#') break;
            p = (size_t)(hit - s) + 1;
            hit = NULL;
        }
        if (!hit) { push(&L, T_DATA, s + L.pos, n - L.pos, L.line); break; }
        size_t k = (size_t)(hit - s);
        char kind = hit[1];
        size_t q = k + 2;
        char sign = 0;
        if (q < n && (s[q] == '-' || s[q] == '+')) sign = s[q++];
        if (kind == '%') {
            size_t after;
            if (try_raw(&L, q, &after)) {
                emit_text(&L, L.pos, k, sign, 0);
                L.line += count_nl(s + k, after - k);
                lex_raw(&L, after);
                continue;
            }
        }
        emit_text(&L, L.pos, k, sign, kind == '{');
        L.line_starting = 0;
        if (kind == '#') {
            /* comment: ends at the first +#}, -#}\s* or #}\n? */
            size_t e = q, end = 0;
            for (; e + 1 < n; e++) {
                if ((s[e] == '+' || s[e] == '-') && e + 2 < n && s[e + 1] == '#' && s[e + 2] == '}') {
                    end = e + 3;
                    if (s[e] == '-') end += ws_run(s + end, n - end);
                    break;
                }
                if (s[e] == '#' && s[e + 1] == '}') { end = e + 2; if (end < n && s[end] == '\n') end++; break; }
            }
            if (!end) jfail(c, "line %d: missing end of comment tag", L.line);
            L.line += count_nl(s + k, end - k);
            L.line_starting = s[end - 1] == '\n';
            L.pos = end;
            continue;
        }
        push(&L, kind == '%' ? T_BLOCK_BEGIN : T_VAR_BEGIN, s + k, q - k, L.line);
        L.pos = q;
        lex_tag(&L, kind == '%');
    }
    push(&L, T_EOF, s + n, 0, L.line);
    c->toks = L.t; c->ntok = L.nt; c->pos = 0;
}
