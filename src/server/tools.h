/* Tool calls: the template family a chat template's tool format belongs to, the grammar that
 * forces a call (tool_choice "required" or a named function), and the parser that turns the
 * model's text into OpenAI tool_calls. Pure code (jansson + src/grammar): tests/test_server.c
 * checks it without a model.
 *
 * Families (recognised from the template source; the output formats are the published ones):
 *   hermes      Hermes / Qwen 2.5 / Qwen 3:  <tool_call>\n{"name": N, "arguments": {...}}\n</tool_call>
 *   llama3      Llama 3.1 / 3.2 JSON calls:  {"name": N, "parameters": {...}} (optionally after <|python_tag|>)
 *   mistral     Mistral / Devstral:          [TOOL_CALLS][{"name": N, "arguments": {...}}, ...]
 *   functionary functionary v3.2:            (the prompt ends in ">>>") N\n{...} then >>>N\n{...}; "all\n" is text */
#ifndef STRATA_SERVER_TOOLS_H
#define STRATA_SERVER_TOOLS_H
#include <stddef.h>
#include <jansson.h>

typedef enum { TOOLFMT_NONE = 0, TOOLFMT_HERMES, TOOLFMT_LLAMA3, TOOLFMT_MISTRAL, TOOLFMT_FUNCTIONARY } tool_format;

/* The family of a chat template; TOOLFMT_NONE when it renders no tools. */
tool_format tool_format_of(const char *template_src);
const char *tool_format_name(tool_format f);

/* GBNF text forcing tool calls in format f: one call of any tool in tools (an OpenAI tools
 * array), or of the tool named only (non-NULL); parallel: one or more calls. NULL with err. */
char *tool_call_grammar(tool_format f, json_t *tools, const char *only, int parallel, char *err, size_t errlen);

/* Parse generated text: an array of OpenAI tool calls ({"id","type":"function","function":
 * {"name","arguments": JSON text}}; ids "call_" + 24 characters from id_seed), empty when the
 * text holds none; *content (malloc'ed with st_malloc, or NULL when nothing else was said)
 * gets the text outside the calls, trimmed. */
json_t *tool_calls_parse(tool_format f, const char *text, size_t len, unsigned long long id_seed, char **content);

/* Streaming with tools ("auto"): the part of the text so far, [*start, *end), that is plain text
 * for certain and may be sent as content now: everything before the family's call marker, less a
 * tail that could still become the marker. The window only grows as text is appended; once a
 * call may have begun, *end stays where it began. Llama 3 replies that open with '{' (or the
 * python tag) and functionary replies that do not open with "all\n" are held whole. */
void tool_text_window(tool_format f, const char *text, size_t len, size_t *start, size_t *end);
#endif
