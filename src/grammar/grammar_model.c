/* The grammar machinery over a loaded model: its vocabulary as a grammar_vocab, and the mask
 * hook that strata_session_set_logits_mask takes (grammar_model.h). */
#include "grammar/grammar_model.h"

static const char *model_bytes(void *u, int32_t id, size_t *len) { return strata_token_text(u, id, len); }
static int model_is_text(void *u, int32_t id) { return !strata_token_is_control(u, id); }
static int model_is_eog(void *u, int32_t id) { return strata_token_is_eog(u, id); }

grammar_vocab *grammar_vocab_for_model(const strata_model *m) {
    grammar_vocab_src src = { strata_n_vocab(m), model_bytes, model_is_text, model_is_eog, (void *)m };
    return grammar_vocab_new(&src);
}

void grammar_logits_mask(float *logits, int n_vocab, void *user) {
    (void)n_vocab;
    grammar_match_apply(user, logits);
}

const uint8_t *grammar_logits_mask_prepare(void *user) { return grammar_match_prepare(user); }

grammar *grammar_from_options(const char *gbnf, const char *json_schema, int json_object, char *err, size_t errlen) {
    if (gbnf) return grammar_parse(gbnf, err, errlen);
    if (!json_schema && !json_object) return NULL;
    char *text = json_schema_to_grammar(json_schema, err, errlen);
    if (!text) return NULL;
    grammar *g = grammar_parse(text, err, errlen);
    st_free(text);
    return g;
}
