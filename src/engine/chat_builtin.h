#ifndef STRATA_CHAT_BUILTIN_H
#define STRATA_CHAT_BUILTIN_H
/* The published chat template of an architecture's instruction-tuned models, for GGUF files
 * that carry none; NULL when strata knows none. */
const char *chat_builtin_template(const char *arch);
#endif
