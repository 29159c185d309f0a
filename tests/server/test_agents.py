#!/usr/bin/env python3
"""Agents against the real model with the official openai client: schema-constrained output
(response_format json_schema / json_object, validated with the jsonschema package) and an
agent loop with tool calls (tools -> call -> tool result -> answer).

SmolLM2's own chat template renders no tools, so that server must answer tools with a 400; the
tool tests run a second server with --chat-template set to Qwen 2.5's published template (the
same ChatML markup SmolLM2 was trained on, plus Hermes-style <tool_call> tools). A 135M model
chooses badly: the tests assert the protocol, and force the call with tool_choice.

usage: python3 tests/server/test_agents.py [--bin build/strata] [--model PATH] [--quick]
(--quick, for sanitizer builds: two schema runs, the forced call and its answer only)
Prints "N passed, N failed" last, like the C tests.
"""
import argparse, json, os, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import Server, check, done, cpu_seconds, part_time  # noqa: E402  (also clears proxy variables)
import jsonschema  # noqa: E402
import openai  # noqa: E402

QUICK = False   # --quick (sanitizer builds): fewer and shorter requests


def client(s):
    # sanitizer builds on a shared machine can take minutes for a request with a long prompt
    return openai.OpenAI(base_url=s.base + "/v1", api_key="none", max_retries=0, timeout=900)


ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
QWEN_TEMPLATE = os.path.join(ROOT, "tests", "data", "templates", "Qwen-Qwen2.5-7B-Instruct.jinja")

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 24},
        "age": {"type": "integer"},
        "hobbies": {"type": "array", "items": {"enum": ["chess", "music", "hiking", "painting"]},
                    "minItems": 1, "maxItems": 3},
        "email": {"type": ["string", "null"], "maxLength": 32},
        "address": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20},
                                                     "zip": {"type": "string", "maxLength": 8}},
                    "required": ["city"], "additionalProperties": False},
    },
    "required": ["name", "age", "hobbies"],
    "additionalProperties": False,
}

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The current weather in a city",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "city name"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city"], "additionalProperties": False}}}
TIME = {"type": "function", "function": {
    "name": "get_time", "description": "The local time in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


def test_json_schema(s):
    c = client(s)
    fmt = {"type": "json_schema", "json_schema": {"name": "person", "strict": True, "schema": PERSON}}
    msgs = [{"role": "user", "content": "Invent a person and describe them as JSON."}]
    # every string is bounded, so every reply ends within max_tokens: "stop" is asserted
    runs = [(0.0, 0), (0.8, 1), (1.2, 3), (1.2, 4)] if not QUICK else [(0.0, 0), (1.2, 3)]
    for temp, seed in runs:
        r = c.chat.completions.create(model="x", messages=msgs, temperature=temp, seed=seed, max_tokens=300,
                                      response_format=fmt)
        text = r.choices[0].message.content
        try:
            obj = json.loads(text)
            jsonschema.validate(obj, PERSON)
            ok = True
        except Exception as e:  # noqa: BLE001
            ok = False
            print("  invalid (temp %.1f seed %d): %r: %s" % (temp, seed, text, e), file=sys.stderr)
        check(ok and r.choices[0].finish_reason == "stop", "json_schema output valid (temp %.1f seed %d)" % (temp, seed))
    if QUICK:
        return
    # streamed: the deltas join into the same kind of valid document
    parts, finish = [], None
    for ch in c.chat.completions.create(model="x", messages=msgs, temperature=1.0, seed=9, max_tokens=300,
                                        response_format=fmt, stream=True):
        if ch.choices:
            parts.append(ch.choices[0].delta.content or "")
            finish = ch.choices[0].finish_reason or finish
    try:
        jsonschema.validate(json.loads("".join(parts)), PERSON)
        ok = True
    except Exception as e:  # noqa: BLE001
        ok = False
        print("  invalid stream: %r: %s" % ("".join(parts), e), file=sys.stderr)
    check(ok and finish == "stop", "streamed json_schema output valid")
    # json_object: any JSON object
    r = c.chat.completions.create(model="x", messages=[{"role": "user", "content": "Reply with a JSON object with the keys name and color of a cat."}],
                                  temperature=0, max_tokens=300, response_format={"type": "json_object"})
    try:
        ok = isinstance(json.loads(r.choices[0].message.content), dict)
    except ValueError:
        ok = False
    check(ok and r.choices[0].finish_reason == "stop", "json_object output is a JSON object: %r" % r.choices[0].message.content)
    # what the grammar cannot enforce is refused, with the reason
    try:
        c.chat.completions.create(model="x", messages=msgs, max_tokens=5, response_format={
            "type": "json_schema", "json_schema": {"name": "p", "schema": {"type": "string", "pattern": "^a+$"}}})
        check(False, "pattern refused")
    except openai.BadRequestError as e:
        check(e.status_code == 400 and "'pattern' is not supported" in str(e), "pattern refused: %s" % e)


def test_no_tool_support(s):
    try:
        client(s).chat.completions.create(model="x", messages=[{"role": "user", "content": "hi"}], tools=[WEATHER],
                                          max_tokens=5)
        check(False, "tools on a template without tool support -> 400")
    except openai.BadRequestError as e:
        check(e.status_code == 400 and "no tool support" in str(e), "400 without tool support: %s" % e)
    # tool_choice none: the tools are not used, the request is served
    r = client(s).chat.completions.create(model="x", messages=[{"role": "user", "content": "hi"}], tools=[WEATHER],
                                          tool_choice="none", max_tokens=5, temperature=0)
    check(r.choices[0].message.tool_calls is None, "tool_choice none answers in text")


def valid_args(call, tool):
    try:
        jsonschema.validate(json.loads(call.function.arguments), tool["function"]["parameters"])
        return True
    except Exception as e:  # noqa: BLE001
        print("  bad arguments %r: %s" % (call.function.arguments, e), file=sys.stderr)
        return False


def test_agent_loop(s):
    c = client(s)
    msgs = [{"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "What is the weather like in Paris today?"}]
    # 1. the model must call a tool
    r = c.chat.completions.create(model="x", messages=msgs, tools=[WEATHER, TIME], tool_choice="required",
                                  temperature=0, max_tokens=200, parallel_tool_calls=not QUICK)
    ch = r.choices[0]
    calls = ch.message.tool_calls or []
    check(ch.finish_reason == "tool_calls" and len(calls) >= 1, "required: tool_calls returned (%s)" % ch.finish_reason)
    tools = {"get_weather": WEATHER, "get_time": TIME}
    for call in calls:
        check(call.type == "function" and call.id.startswith("call_") and call.function.name in tools,
              "call shape: %s" % call)
        check(valid_args(call, tools.get(call.function.name, WEATHER)), "arguments valid against the parameters")
    ids = [call.id for call in calls]
    check(len(set(ids)) == len(ids), "call ids distinct")
    # 2. the tool results go back through the template; the model answers in text
    msgs.append({"role": "assistant", "content": ch.message.content,
                 "tool_calls": [{"id": call.id, "type": "function",
                                 "function": {"name": call.function.name, "arguments": call.function.arguments}}
                                for call in calls]})
    for call in calls:
        msgs.append({"role": "tool", "tool_call_id": call.id,
                     "content": json.dumps({"city": "Paris", "temperature": 18, "unit": "celsius", "sky": "sunny"})})
    r2 = c.chat.completions.create(model="x", messages=msgs, tools=[WEATHER, TIME], tool_choice="none",
                                   temperature=0, max_tokens=40)
    ans = r2.choices[0].message
    check(ans.tool_calls is None and isinstance(ans.content, str) and ans.content.strip() != "",
          "answer after the tool result: %r" % ans.content)
    check(r2.usage.prompt_tokens > r.usage.prompt_tokens, "the tool result is in the prompt")
    if QUICK:
        return
    # 3. a named function, one call only, streamed as deltas
    deltas, finish, content = {}, None, ""
    for chunk in c.chat.completions.create(model="x", messages=msgs[:2], tools=[WEATHER, TIME], temperature=0.7, seed=3,
                                           tool_choice={"type": "function", "function": {"name": "get_time"}},
                                           parallel_tool_calls=False, max_tokens=120, stream=True):
        if not chunk.choices:
            continue
        d = chunk.choices[0].delta
        finish = chunk.choices[0].finish_reason or finish
        content += d.content or ""
        for tc in d.tool_calls or []:
            e = deltas.setdefault(tc.index, {"id": None, "name": "", "arguments": ""})
            e["id"] = tc.id or e["id"]
            if tc.function:
                e["name"] += tc.function.name or ""
                e["arguments"] += tc.function.arguments or ""
    check(finish == "tool_calls" and len(deltas) == 1, "stream named: one call, finish %s" % finish)
    if deltas:
        e = deltas[0]
        check(e["name"] == "get_time" and e["id"] and e["id"].startswith("call_"), "stream named: %s" % e)
        try:
            jsonschema.validate(json.loads(e["arguments"]), TIME["function"]["parameters"])
            ok = True
        except Exception:  # noqa: BLE001
            ok = False
        check(ok, "stream named: arguments valid: %r" % e["arguments"])
    # 4. auto: the model may answer or call; either way the reply is well-formed
    r = c.chat.completions.create(model="x", messages=msgs[:2], tools=[WEATHER, TIME], temperature=0, max_tokens=80)
    ch = r.choices[0]
    if ch.message.tool_calls:
        check(ch.finish_reason == "tool_calls" and all(x.function.name in ("get_weather", "get_time") for x in ch.message.tool_calls),
              "auto: calls well-formed")
    else:
        check(ch.finish_reason in ("stop", "length") and ch.message.content is not None, "auto: text answer")
    # 4b. the same streamed: the text deltas and the call deltas give the same reply
    content, deltas, finish = "", {}, None
    for chunk in c.chat.completions.create(model="x", messages=msgs[:2], tools=[WEATHER, TIME], temperature=0,
                                           max_tokens=80, stream=True):
        if not chunk.choices:
            continue
        d = chunk.choices[0].delta
        finish = chunk.choices[0].finish_reason or finish
        content += d.content or ""
        for tc in d.tool_calls or []:
            e = deltas.setdefault(tc.index, {"name": "", "arguments": ""})
            if tc.function:
                e["name"] += tc.function.name or ""
                e["arguments"] += tc.function.arguments or ""
    want = [(x.function.name, x.function.arguments) for x in ch.message.tool_calls or []]
    got = [(deltas[i]["name"], deltas[i]["arguments"]) for i in sorted(deltas)]
    check(finish == ch.finish_reason and got == want, "auto streamed = non-stream calls: %s / %s" % (got, want))
    check(content.strip() == (ch.message.content or "").strip(), "auto streamed = non-stream text: %r / %r"
          % (content, ch.message.content))
    # 5. tool_choice for an unknown function: 400
    try:
        c.chat.completions.create(model="x", messages=msgs[:2], tools=[WEATHER], max_tokens=5,
                                  tool_choice={"type": "function", "function": {"name": "nope"}})
        check(False, "unknown named function -> 400")
    except openai.BadRequestError as e:
        check(e.status_code == 400 and "no function named 'nope'" in str(e), "unknown named function: %s" % e)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/strata")
    ap.add_argument("--model", default=os.path.expanduser("~/.cache/strata/SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    global QUICK
    QUICK = a.quick
    t0, c0 = time.time(), cpu_seconds()
    plain = Server(a.bin, a.model, "--parallel", "2")
    # the tool server computes its grammar masks on the helper thread that overlaps the step
    # (the default only with CUDA), so that path runs here too
    os.environ["STRATA_GRAMMAR_OVERLAP"] = "1"
    try:
        tools = Server(a.bin, a.model, "--chat-template", QWEN_TEMPLATE)
    finally:
        del os.environ["STRATA_GRAMMAR_OVERLAP"]
    try:
        for name, fn, srv in (("json_schema", test_json_schema, plain), ("no_tool_support", test_no_tool_support, plain),
                              ("agent_loop", test_agent_loop, tools)):
            t, c = time.time(), cpu_seconds()
            try:
                fn(srv)
            except Exception as e:  # noqa: BLE001
                check(False, "%s raised %r" % (name, e))
            part_time(name, t, c)
    finally:
        for srv in (plain, tools):
            srv.stop()
            err = srv.stderr()
            check("ERROR: AddressSanitizer" not in err and "runtime error:" not in err, "no sanitizer report")
    print("  total %.1f s, cpu %.1f s" % (time.time() - t0, cpu_seconds() - c0), file=sys.stderr)
    return done()


if __name__ == "__main__":
    sys.exit(main())
