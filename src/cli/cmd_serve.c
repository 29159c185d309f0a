/* strata serve: OpenAI-compatible HTTP server (src/server). Parses options, then srv_run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "cli_common.h"
#include "core/env.h"
#include "core/util.h"
#include "server/server.h"

static const cli_command serve_cmd = {
    CMD_SERVE, "serve", "[-m MODEL] [options]",
    "OpenAI-compatible HTTP server. Endpoints: POST /v1/chat/completions, /v1/completions,\n"
    "/tokenize, /detokenize; GET /v1/models, /health, /metrics, / (chat page). See docs/SERVER.md.\n", 0 };

int cmd_serve(int argc, char **argv) {
    cli_opts c;
    int rc = cli_parse(&serve_cmd, argc, argv, &c);
    if (rc >= 0) return rc;
    srv_options o = srv_default_options();
    o.model_path = c.model;
    if (c.host) o.host = c.host;
    if (c.port >= 0) o.port = c.port;
    if (c.parallel) o.parallel = c.parallel;
    o.n_ctx = c.n_ctx;
    if (c.queue >= 0) o.queue = c.queue;
    if (c.api_key) o.api_key = c.api_key;
    if (c.cors) o.cors = c.cors;
    if (c.max_body) o.max_body = (size_t)c.max_body;
    if (c.max_conn >= 0) o.max_conn = c.max_conn;
    if (c.max_conn_per_ip >= 0) o.max_conn_per_ip = c.max_conn_per_ip;
    if (c.header_timeout >= 0) o.header_timeout = c.header_timeout;
    o.n_threads = c.n_threads;
    o.spec = c.spec;
    o.step_tokens = c.step_tokens;
    o.device = c.device;
    o.kv_type = c.kv_type;
    o.chat_template = c.chat_template_text;
    o.chat_template_name = c.chat_template;
    o.log_requests = c.verbose;
    o.log_json = c.log_json;
    rc = srv_run(&o);
    st_free(c.chat_template_text);
    return rc;
}
