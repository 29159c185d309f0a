/* Grammars over a loaded model (the CLI and the server use these). */
#ifndef STRATA_GRAMMAR_MODEL_H
#define STRATA_GRAMMAR_MODEL_H
#include "strata.h"
#include "grammar/grammar.h"
#include "core/util.h"

/* The model's vocabulary: control tokens excluded, end-of-generation tokens marked. */
grammar_vocab *grammar_vocab_for_model(const strata_model *m);
/* strata_logits_mask over a grammar_match (user): -inf where the grammar forbids. */
void grammar_logits_mask(float *logits, int n_vocab, void *user);
/* strata_logits_mask_prepare over a grammar_match (user): grammar_match_prepare. */
const uint8_t *grammar_logits_mask_prepare(void *user);
/* A grammar from GBNF text, else from a JSON schema, else (json_object) any JSON object;
 * NULL with err set on an error, NULL with err[0] untouched when nothing was asked for. */
grammar *grammar_from_options(const char *gbnf, const char *json_schema, int json_object, char *err, size_t errlen);
#endif
