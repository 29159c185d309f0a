/* OpenAI request bodies -> validated generation parameters, and OpenAI-shaped errors.
 * Pure code (jansson only): tests/test_server.c checks the exact 400 messages.
 *
 * Error shape, as the OpenAI API sends it:
 *   {"error": {"message": "...", "type": "invalid_request_error", "param": "temperature" | null,
 *              "code": "decimal_above_max_value" | null}} */
#ifndef STRATA_SERVER_REQUEST_H
#define STRATA_SERVER_REQUEST_H
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "strata.h"
#include "grammar/grammar.h"

typedef struct api_error {
    int status;                 /* HTTP status: 400, 401, 404, 413, 429, 500, 503 */
    char message[512];
    const char *type;           /* "invalid_request_error", "server_error", ... */
    char param[96];             /* "" -> null */
    const char *code;           /* NULL -> null */
} api_error;
/* Fill e; returns -1 so parsers can `return api_error_set(...)`. */
int api_error_set(api_error *e, int status, const char *type, const char *param, const char *code,
                  const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* {"error":{...}} as a new JSON object. */
json_t *api_error_json(const api_error *e);

#define GEN_MAX_STOPS 4          /* OpenAI accepts at most 4 stop sequences */
#define GEN_MAX_TOP_LOGPROBS 20  /* chat: top_logprobs 0..20; completions: logprobs 0..5 */

typedef enum { GEN_CHAT = 1, GEN_COMPLETION = 2 } gen_kind;

typedef struct gen_request {
    gen_kind kind;
    char *model;                /* as sent (informational), or NULL */
    /* chat: messages with text content (parts joined); completion: prompt text or ids */
    strata_chat_msg *msgs;      /* role/content strings owned by the request */
    int n_msgs;
    char *prompt;               /* completion prompt text, or NULL when prompt_ids */
    int32_t *prompt_ids;        /* completion prompt given as token ids */
    int n_prompt_ids;
    int stream, include_usage;
    int max_tokens;             /* -1: until end of generation or context */
    strata_sampler_params sampler;
    int has_seed;
    char *stops[GEN_MAX_STOPS];
    int n_stops;
    int logprobs;               /* 1: return logprobs of the chosen tokens */
    int top_logprobs;           /* alternatives per position (0..20) */
    /* constrained output: response_format json_object / json_schema, or "grammar" (GBNF,
     * extension), compiled; NULL: free text */
    grammar *grammar;
    /* tool calls (chat): the messages as the chat template sees them (assistant tool_calls with
     * their arguments as objects, tool results with tool_call_id), the tools array, the choice */
    char *messages_json;
    int has_tool_msgs;          /* some message carries tool_calls or is a tool result */
    char *tools_json;           /* compact JSON array, NULL when no tools were given */
    int tool_choice;            /* TOOL_CHOICE_*; AUTO when tools are given and no choice */
    char *tool_name;            /* TOOL_CHOICE_NAMED: the function */
    int parallel_tool_calls;    /* default 1 */
} gen_request;
enum { TOOL_CHOICE_NONE = 0, TOOL_CHOICE_AUTO, TOOL_CHOICE_REQUIRED, TOOL_CHOICE_NAMED };

/* Parse and validate. 0 on success; -1 with e filled (status 400) on any client mistake. */
int  gen_request_parse(const char *body, size_t len, gen_kind kind, gen_request *r, api_error *e);
void gen_request_free(gen_request *r);

/* Parse a JSON body that must be an object (shared by every POST endpoint). NULL with e set. */
json_t *request_parse_object(const char *body, size_t len, api_error *e);
#endif
