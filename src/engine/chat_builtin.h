#ifndef STRATA_CHAT_BUILTIN_H
#define STRATA_CHAT_BUILTIN_H
/* The published chat template of an architecture's instruction-tuned models, for GGUF files
 * that carry none; NULL when strata knows none. */
const char *chat_builtin_template(const char *arch);
/* A built-in template by name (--chat-template NAME): "chatml", "gemma3"; NULL when unknown. */
const char *chat_builtin_by_name(const char *name);
/* The names chat_builtin_by_name knows, comma-separated (for messages). */
#define CHAT_BUILTIN_NAMES "chatml, gemma3"
#endif
