/* Published chat templates for models whose GGUF carries none (tokenizer.chat_template
 * absent). Each is the model family's own template, verbatim from its published
 * tokenizer_config.json, so rendering goes through the same Jinja interpreter. */
#include <string.h>
#include "chat_builtin.h"

/* Gemma 3 instruction-tuned models (google/gemma-3-*-it), text parts only. */
static const char gemma3_template[] =
    "{{ bos_token }}\n"
    "{%- if messages[0]['role'] == 'system' -%}\n"
    "    {%- if messages[0]['content'] is string -%}\n"
    "        {%- set first_user_prefix = messages[0]['content'] + '\\n\\n' -%}\n"
    "    {%- else -%}\n"
    "        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\\n\\n' -%}\n"
    "    {%- endif -%}\n"
    "    {%- set loop_messages = messages[1:] -%}\n"
    "{%- else -%}\n"
    "    {%- set first_user_prefix = \"\" -%}\n"
    "    {%- set loop_messages = messages -%}\n"
    "{%- endif -%}\n"
    "{%- for message in loop_messages -%}\n"
    "    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}\n"
    "        {{ raise_exception(\"Conversation roles must alternate user/assistant/user/assistant/...\") }}\n"
    "    {%- endif -%}\n"
    "    {%- if (message['role'] == 'assistant') -%}\n"
    "        {%- set role = \"model\" -%}\n"
    "    {%- else -%}\n"
    "        {%- set role = message['role'] -%}\n"
    "    {%- endif -%}\n"
    "    {{ '<start_of_turn>' + role + '\\n' + (first_user_prefix if loop.first else \"\") }}\n"
    "    {%- if message['content'] is string -%}\n"
    "        {{ message['content'] | trim }}\n"
    "    {%- elif message['content'] is iterable -%}\n"
    "        {%- for item in message['content'] -%}\n"
    "            {%- if item['type'] == 'image' -%}\n"
    "                {{ '<start_of_image>' }}\n"
    "            {%- elif item['type'] == 'text' -%}\n"
    "                {{ item['text'] | trim }}\n"
    "            {%- endif -%}\n"
    "        {%- endfor -%}\n"
    "    {%- else -%}\n"
    "        {{ raise_exception(\"Invalid content type\") }}\n"
    "    {%- endif -%}\n"
    "    {{ '<end_of_turn>\\n' }}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}\n"
    "    {{'<start_of_turn>model\\n'}}\n"
    "{%- endif -%}\n";

/* ChatML ("<|im_start|>ROLE\nCONTENT<|im_end|>\n" per message), the format of SmolLM2, Qwen and
 * others: the same text as the server's chatml_format fallback. */
static const char chatml_template[] =
    "{%- for message in messages -%}\n"
    "    {{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}\n"
    "    {{ '<|im_start|>assistant\\n' }}\n"
    "{%- endif -%}\n";

const char *chat_builtin_by_name(const char *name) {
    if (!name) return NULL;
    if (!strcmp(name, "chatml")) return chatml_template;
    if (!strcmp(name, "gemma3") || !strcmp(name, "gemma")) return gemma3_template;
    return NULL;
}

const char *chat_builtin_template(const char *arch) {
    if (arch && !strcmp(arch, "gemma3")) return gemma3_template;
    return NULL;
}
