#!/usr/bin/env python3
"""The server's scheduling under load (issue 18), loopback only, bounded in count and time:

  admission     a full server answers 429 as soon as a request's headers are in (its body is
                never read); a flood of large prompts (4 clients, each sending text just under
                the context's byte limit again and again) does not starve a stream that is
                running: the stream keeps >= 50% of its tok/s alone (the prompts are templated
                and tokenized after admission, on workers at a lower priority)
  prefix cache  a chat's second turn that lands on another slot than the first copies the
                shared prefix from the slot that holds it: cached_tokens > 0, and the reply
                (text, ids' logprobs) is byte-identical to a cold server's; an unrelated
                prompt reports 0 cached tokens
  prefill       a 2,000-token prompt arriving while a stream runs rides in the stream's
                decode passes (a per-step token budget): the server's step trace shows 4-7
                prompt tokens in each step beside the stream, and the stream's time per token
                stays within 12x its time alone (one pass of 8 columns, not 16 of them per
                token; up to three attempts); a prompt read that way answers what it answers on
                a cold server

Every check compares the server with itself (a cold server, its pace alone, its metrics), so
none needs the real model's text: --quick (make test-asan, STRATA_TEST_QUICK=1) runs them all, the
same checks, on tests/small_model.h's synthetic llama with SmolLM2's tokenizer (harness.small_model:
about a thirteenth of SmolLM2's work per token), its flood stream longer to last as long.

usage: python3 tests/server/test_sched.py [--bin build/strata] [--model PATH] [--only a,b] [--quick]
Prints "N passed, N failed" last, like the C tests.
"""
import argparse, http.client, json, os, re, shutil, socket, statistics, sys, tempfile, threading, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import check, done, run_part, small_model  # noqa: E402  (also clears proxy variables)
from harness import Server as _Server  # noqa: E402


class Server(_Server):
    def post(self, path, body, timeout=300):
        """(status, parsed JSON body) of a POST"""
        st, _, data = self.raw("POST", path, body, timeout=timeout)
        return st, json.loads(data) if data.startswith(b"{") else data


class Stream:
    """A streaming greedy completion read on a thread; arrivals[i] = time of the i-th content chunk."""
    def __init__(self, s, prompt, n, path="/v1/completions"):
        self.arrivals, self.text, self.status = [], "", None
        self.first = threading.Event()
        self.c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=600)
        body = {"max_tokens": n, "temperature": 0, "stream": True}
        if path.endswith("chat/completions"):
            body["messages"] = prompt
        else:
            body["prompt"] = prompt
        self.c.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self):
        try:
            r = self.c.getresponse()
            self.status = r.status
            for line in r:
                if not line.startswith(b"data: {"):
                    continue
                j = json.loads(line[6:])
                ch = j.get("choices") or [{}]
                piece = ch[0].get("text") or (ch[0].get("delta") or {}).get("content")
                if piece:
                    self.arrivals.append(time.perf_counter())
                    self.text += piece
                    if len(self.arrivals) >= 4:
                        self.first.set()
        except Exception:
            pass
        self.first.set()

    def close(self):
        try:
            self.c.sock.shutdown(socket.SHUT_RDWR)
        except Exception:
            pass
        self.c.close()
        self.t.join()

    def join(self):
        self.t.join()
        self.c.close()

    def rate(self, t0=None, t1=None):
        """tok/s between chunk arrivals inside [t0, t1] (all after the 4th chunk when not given)."""
        a = [x for x in self.arrivals[3:] if (t0 is None or x >= t0) and (t1 is None or x <= t1)]
        return (len(a) - 1) / (a[-1] - a[0]) if len(a) > 2 and a[-1] > a[0] else float("nan")

    def gaps(self, t0=None, t1=None):
        a = [x for x in self.arrivals[1:] if (t0 is None or x >= t0) and (t1 is None or x <= t1)]
        return [y - x for x, y in zip(a, a[1:])]


STREAM_PROMPT = "The history of the printing press begins"
FLOOD_TOKENS = 40   # the stream the flood runs beside
QUICK_FLOOD_TOKENS = 200   # --quick: the small model decodes faster; the flood should last as long


# ---- admission before work ------------------------------------------------------------------------
def test_flood(s, figures):
    # the byte limit (n_ctx x the longest token) from the server's own message
    st, e = s.post("/v1/completions", {"prompt": "x" * 2000000, "max_tokens": 1})
    m = re.search(r"\((\d+) bytes", (e.get("error") or {}).get("message", "")) if isinstance(e, dict) else None
    check(st == 400 and m, "2 MB of text refused by its length: %r" % st)
    limit = int(m.group(1)) if m else 100000
    text = ("lorem ipsum dolor sit amet " * (limit // 27 + 1))[: limit - 16]   # too many tokens: 400 after tokenizing
    body = json.dumps({"prompt": text, "max_tokens": 1}).encode()
    req = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
           b"Connection: close\r\n\r\n" % len(body)) + body

    def solo():
        a = Stream(s, STREAM_PROMPT, FLOOD_TOKENS)
        a.join()
        return a.rate()

    def attempt():
        alone = solo()
        stop = threading.Event()
        codes = {}
        lock = threading.Lock()

        def flood():
            while not stop.is_set():
                so = socket.create_connection(("127.0.0.1", s.port), timeout=120)
                try:
                    so.sendall(req)
                    st = int(so.recv(64).split()[1])
                except (OSError, IndexError, ValueError):
                    st = "reset"   # a 429 sent before the body was read may close the socket under it
                so.close()
                with lock:
                    codes[st] = codes.get(st, 0) + 1
                if st != 400:
                    time.sleep(0.1)   # as a client that honours Retry-After, only faster
        a = Stream(s, STREAM_PROMPT, FLOOD_TOKENS)
        a.first.wait(120)
        t0 = time.perf_counter()
        th = [threading.Thread(target=flood, daemon=True) for _ in range(4)]
        try:   # the flood ends with the stream, whatever happens to the stream
            for t in th:
                t.start()
            a.join()
        finally:
            stop.set()
            for t in th:
                t.join(180)
        after = solo()
        return dict(alone=round(alone, 1), after=round(after, 1), during=round(a.rate(t0), 1), codes=codes,
                    chunks=len(a.arrivals), status=a.status)
    # the machine is shared: other jobs' load swings a stream's pace by 2x within seconds, so up to
    # three attempts are made before calling it starved (main's pool: 0.13-0.36 in every attempt;
    # 2026-12-05 a `make test` on the 2-core machine saw two attempts in a row at 0.43 and 0.30, the
    # same build 3 of 3 at or above 0.5 alone right after)
    tries = []
    for _ in range(3):
        f = tries.append(attempt()) or tries[-1]
        if f["during"] >= 0.5 * min(f["alone"], f["after"]):
            break
    figures["flood"] = tries
    f = tries[-1]
    check(f["status"] == 200 and f["chunks"] >= 3 * FLOOD_TOKENS // 4, "the stream ran through the flood: %r" % f)
    check(sum(t["codes"].get(400, 0) for t in tries) >= 2, "flood prompts were read and refused (too many tokens): %r" % tries)
    check(f["during"] >= 0.5 * min(f["alone"], f["after"]), "the stream keeps >= 50%% of its pace during the flood: %r" % tries)
    mt = s.metrics()
    check(mt.get("strata_tokenizer_busy_peak", 99) <= mt.get("strata_tokenizer_pool", 0), "the pool bounds the tokenizing: %r" % mt.get("strata_tokenizer_busy_peak"))
    # The pace above is a rate on a shared machine: with one retry it held at 0.73-1.39 of the pace
    # alone at load 9-11 (2026-12-01) against its 0.5 bound, and a pool at normal priority gave 0.13-0.36.
    # What makes it hold is checked here without timing: the flood's prompts went through the pool
    # (not the decode thread), and every pool thread runs under SCHED_IDLE (nice 19 where refused).
    check(mt.get("strata_tokenizer_busy_peak", 0) >= 1, "the flood's prompts were tokenized by the pool: peak %r" % mt.get("strata_tokenizer_busy_peak"))
    pols = {}
    for tid in os.listdir("/proc/%d/task" % s.proc.pid):
        try:
            with open("/proc/%d/task/%s/comm" % (s.proc.pid, tid)) as f:
                if f.read().strip() != "strata-tok":
                    continue
            pols[int(tid)] = (os.sched_getscheduler(int(tid)), os.getpriority(os.PRIO_PROCESS, int(tid)))
        except OSError:
            pass
    check(pols and all(p == os.SCHED_IDLE or n == 19 for p, n in pols.values()),
          "the tokenizer threads run under SCHED_IDLE (policy, nice): %r" % pols)


def test_full_headers(s):
    # fill 2 slots + 2 queue places with long streams, then send only headers: 429 at once
    streams = [Stream(s, STREAM_PROMPT + " " + str(i), 2000) for i in range(4)]
    ok = False
    t_end = time.time() + 30
    while time.time() < t_end and not ok:
        m = s.metrics()
        ok = m.get("strata_slots_busy") == 2 and m.get("strata_queue_depth") == 2
        time.sleep(0.05)
    check(ok, "2 slots busy and 2 requests queued")
    so = socket.create_connection(("127.0.0.1", s.port), timeout=5)
    t0 = time.time()
    so.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 300000\r\n\r\n")
    try:
        head = so.recv(4096)
    except socket.timeout:
        head = b""
    dt = time.time() - t0
    so.close()
    check(head.startswith(b"HTTP/1.1 429") and b"Retry-After: 1" in head and b"rate_limit_exceeded" in head,
          "a full server answers 429 to the headers alone (no body sent): %r in %.3f s" % (head[:200], dt))
    # Expect: 100-continue: the refusal comes instead of the go-ahead, and the body is never sent
    so = socket.create_connection(("127.0.0.1", s.port), timeout=5)
    so.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               b"Content-Length: 300000\r\nExpect: 100-continue\r\n\r\n")
    try:
        head = so.recv(4096)
    except socket.timeout:
        head = b""
    so.close()
    check(head.startswith(b"HTTP/1.1 429"), "Expect: 100-continue gets 429, not 100: %r" % head[:60])
    for st in streams:
        st.close()
    t_end = time.time() + 10
    while time.time() < t_end and s.metrics().get("strata_slots_busy") != 0:
        time.sleep(0.05)


# ---- prefix cache across slots ---------------------------------------------------------------------
SYSTEM = ("You are a careful assistant for a public library. You answer questions about opening hours, borrowing "
          "rules, late fees and the reading rooms. Keep answers short and friendly.")
TURN1 = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "When does the library open on Saturdays?"}]
TURN2 = TURN1 + [{"role": "assistant", "content": "On Saturdays the library opens at ten in the morning."},
                 {"role": "user", "content": "And how long may I keep a book?"}]
OTHER = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Tell me a long story about the reading rooms."}]


def chat(s, msgs):
    return s.post("/v1/chat/completions", {"messages": msgs, "temperature": 0, "max_tokens": 12, "logprobs": True, "top_logprobs": 3})


def test_prefix(s, cold):
    st, r1 = chat(s, TURN1)
    check(st == 200, "turn 1: %r" % st)
    # a long stream with the same system prompt takes turn 1's slot (the longest prefix) ...
    other = Stream(s, OTHER, 2000, path="/v1/chat/completions")
    other.first.wait(120)
    copied0 = s.metrics().get("strata_prompt_tokens_copied_total", 0)
    # ... so turn 2 lands on the other slot, and finds the shared prefix in the busy one
    st, r2 = chat(s, TURN2)
    other.close()
    check(st == 200, "turn 2: %r" % st)
    cached = r2["usage"]["prompt_tokens_details"]["cached_tokens"]
    check(cached > 30, "turn 2 on another slot reuses the busy slot's prefix: cached_tokens %d of %d" % (cached, r2["usage"]["prompt_tokens"]))
    copied = s.metrics().get("strata_prompt_tokens_copied_total", 0) - copied0
    check(copied == cached, "the cached tokens were copied from the other slot: %r vs %r" % (copied, cached))
    st, rc = chat(cold, TURN2)
    check(st == 200 and rc["usage"]["prompt_tokens_details"]["cached_tokens"] == 0, "cold server: nothing cached")
    check(st == 200 and rc["choices"][0]["message"] == r2["choices"][0]["message"], "same text as a cold prefill: %r vs %r"
          % (r2["choices"][0]["message"], rc["choices"][0]["message"] if st == 200 else None))
    check(st == 200 and json.dumps(rc["choices"][0]["logprobs"]) == json.dumps(r2["choices"][0]["logprobs"]),
          "the same tokens and logprobs, byte for byte, as a cold prefill")
    # an unrelated completion prompt finds nothing
    st, r3 = s.post("/v1/completions", {"prompt": "Zebras graze on the savanna at dawn", "max_tokens": 2, "temperature": 0})
    check(st == 200 and r3["usage"]["prompt_tokens_details"]["cached_tokens"] == 0, "a different prompt: 0 cached: %r" % (r3.get("usage") if st == 200 else st))


# ---- a long prompt inside the decode passes ----------------------------------------------------------
STEP_RE = re.compile(r"strata: step [0-9.]+ decoding (\d+) prompts (\d+) \((\d+) tokens, (\d+) end\) ([0-9.]+) ms")


def prefill_attempt(s, ids):
    """The stream's pace alone, then its next 16 tokens after a 2,000-token prompt arrives (the
    prompt is then cancelled: reading all of it is not what is measured, and costs minutes on a
    loaded machine): the pace alone, the gaps during, the prompt tokens of each step that read the
    prompt beside the stream, the busy slots then, the seconds it took. No checks here: the caller
    checks the first attempt, so the suite's count does not follow how many attempts ran."""
    alone = Stream(s, STREAM_PROMPT, 24)
    alone.join()
    tpot_alone = statistics.median(alone.gaps())
    a = Stream(s, STREAM_PROMPT, 400)
    a.first.wait(120)
    off = len(s.stderr())
    t0 = time.perf_counter()
    b = Stream(s, ids, 1)
    n0 = len(a.arrivals)
    while len(a.arrivals) < n0 + 17 and a.t.is_alive() and time.perf_counter() - t0 < 300:
        time.sleep(0.02)
    t1 = time.perf_counter()
    mt = s.metrics()
    b.close()
    a.close()
    steps = [int(m.group(3)) for m in STEP_RE.finditer(s.stderr()[off:]) if m.group(1) == "1" and m.group(2) == "1"]
    return dict(tpot_alone=tpot_alone, gaps=a.gaps(t0, t1), steps=steps, busy=mt.get("strata_slots_busy"), secs=t1 - t0)


def test_prefill_budget(s, cold, figures):
    st, tk = s.post("/tokenize", {"content": "The library keeps its old maps in a cool room on the second floor. " * 200})
    ids = tk["tokens"][:2000] if st == 200 else []
    check(len(ids) == 2000, "a 2,000-token prompt: %d" % len(ids))
    # the step's make-up from the server's own trace (STRATA_SERVER_TRACE=1): deterministic, unlike
    # the paces below; the pace ratio is a ratio of two paces measured seconds apart on a shared
    # machine (1.2-2.0x at load 9 on 2026-12-01, 4-14x in CI beside a nice-19 ASan build on
    # 2026-12-06), so it gets up to three attempts: the failure it guards against (16 passes per
    # stream token) is slow in every attempt, and its structure fails the trace check at once
    paced = False
    for attempt in range(3):
        r = prefill_attempt(s, ids)
        g, steps = r["gaps"], r["steps"]
        fig = dict(tpot_alone_ms=round(r["tpot_alone"] * 1e3, 1), stream_tokens=len(g), mixed_steps=len(steps),
                   prompt_tokens_per_step=sorted(set(steps)))
        if g:
            fig.update(tpot_during_ms=round(statistics.median(g) * 1e3, 1), max_gap_ms=round(max(g) * 1e3, 1))
        figures.setdefault("prefill", []).append(fig)
        if attempt == 0:
            check(r["busy"] == 2, "the prompt was being read beside the stream")
            check(len(g) >= 15, "the stream advanced while the prompt was read: %d tokens in %.1f s" % (len(g), r["secs"]))
            # every step that read the prompt beside the stream read at most the budget's 7 tokens
            # (--step-tokens 8 less the stream's column) and at least half of them (4)
            check(len(steps) >= 15 and all(4 <= n <= 7 for n in steps),
                  "the prompt rides in the stream's passes, 4-7 prompt tokens a step: %r" % fig)
        if g and statistics.median(g) <= 12 * r["tpot_alone"]:
            paced = True
            break
    check(paced, "the stream's time per token while a 2,000-token prompt is read stays within 12x its time alone "
          "(in one of up to three attempts): %r" % figures["prefill"])
    # a shorter prompt read beside a stream answers what it answers on a cold server
    a = Stream(s, STREAM_PROMPT, 400)
    a.first.wait(120)
    st, r = s.post("/v1/completions", {"prompt": ids[:150], "max_tokens": 6, "temperature": 0, "logprobs": 2})
    a.close()
    st2, rc = cold.post("/v1/completions", {"prompt": ids[:150], "max_tokens": 6, "temperature": 0, "logprobs": 2})
    check(st == 200 and st2 == 200 and json.dumps(r["choices"][0]) == json.dumps(rc["choices"][0]),
          "a prompt read beside a stream answers (text and logprobs) what a cold server answers")


def test_multi_prefill(binary, model, cold):
    """Several prompts read together inside a stream's decode passes (--step-tokens 64: the
    stream's column, the rest shared by the waiting prompts, oldest first): each answers (text and
    logprobs) what a cold server answers."""
    m = Server(binary, model, "--parallel", "5", "--ctx", "2560", "--step-tokens", "64")
    try:
        st, tk = m.post("/tokenize", {"content": "The library keeps its old maps in a cool room on the second floor. " * 20})
        ids = tk["tokens"] if st == 200 else []
        check(len(ids) >= 150, "a prompt of 150 tokens: %d" % len(ids))
        a = Stream(m, STREAM_PROMPT, 400)
        a.first.wait(120)
        # the 150-token prompt needs three steps of 63 columns: the short ones, sent with it, end
        # in the same passes as it and as each other (several logits rows of prompts in one pass)
        lens = (150, 20, 21, 22)
        res = [None] * len(lens)

        def one(i, n):
            res[i] = m.post("/v1/completions", {"prompt": ids[:n], "max_tokens": 5, "temperature": 0, "logprobs": 2})
        ts = [threading.Thread(target=one, args=(i, n)) for i, n in enumerate(lens)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        busy = m.metrics().get("strata_slots_busy")
        a.close()
        colds = []
        for i, n in enumerate(lens):
            st2, rc = cold.post("/v1/completions", {"prompt": ids[:n], "max_tokens": 5, "temperature": 0, "logprobs": 2})
            colds.append(rc if st2 == 200 else None)
            st, r = res[i] if res[i] else (0, None)
            check(st == 200 and st2 == 200 and json.dumps(r["choices"][0]) == json.dumps(rc["choices"][0]),
                  "prompt of %d tokens read beside a stream and other prompts answers what a cold server answers" % n)
        check(busy is not None and busy >= 1, "the stream was still running: %r slots busy" % busy)
        # nobody decoding: the same prompts arriving at once share the passes of a step's budget
        # (64 columns, the oldest first) instead of a pass per slot
        t_end = time.time() + 60
        while time.time() < t_end and (m.metrics().get("strata_slots_busy") or 0) > 0:
            time.sleep(0.05)
        res = [None] * len(lens)
        ts = [threading.Thread(target=one, args=(i, n)) for i, n in enumerate(lens)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        for i, n in enumerate(lens):
            st, r = res[i] if res[i] else (0, None)
            check(st == 200 and colds[i] is not None and json.dumps(r["choices"][0]) == json.dumps(colds[i]["choices"][0]),
                  "prompt of %d tokens read in a burst of prompts (no stream) answers what a cold server answers" % n)
    finally:
        check(m.stop() == 0, "the --step-tokens 64 server exits 0")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.environ.get("STRATA_BIN", os.path.join(os.environ.get("BUILD", "build"), "strata")))
    ap.add_argument("--model", default=os.environ.get("STRATA_MODEL", os.path.expanduser("~/.cache/strata/SmolLM2-135M-Instruct.Q4_1.gguf")))
    ap.add_argument("--only", default="")
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    if not os.path.exists(a.model):
        print("SKIP model: no model at %s" % a.model)
        print("0 passed, 0 failed, 1 skipped")
        return 0
    tmp = None
    if a.quick:
        global FLOOD_TOKENS
        FLOOD_TOKENS = QUICK_FLOOD_TOKENS
        tmp = tempfile.mkdtemp(prefix="strata-sched-")
        a.model = small_model(a.bin, a.model, os.path.join(tmp, "small.gguf"))
    only = set(a.only.split(",")) if a.only else None
    figures = {}
    t00 = time.time()

    def run(name, fn, *args):
        run_part(only, name, fn, *args)

    # the step trace feeds the prefill part's structure check
    s = Server(a.bin, a.model, "--parallel", "2", "--queue", "2", "--ctx", "2560", env=dict(os.environ, STRATA_SERVER_TRACE="1"))
    cold = Server(a.bin, a.model, "--parallel", "1", "--ctx", "2560")
    try:
        run("prefix", test_prefix, s, cold)
        run("prefill", test_prefill_budget, s, cold, figures)
        run("multi_prefill", test_multi_prefill, a.bin, a.model, cold)
        run("flood", test_flood, s, figures)
        run("full_headers", test_full_headers, s)
    finally:
        check(s.stop() == 0, "server exits 0")
        check(cold.stop() == 0, "cold server exits 0")
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    print("figures: %r" % figures, file=sys.stderr)
    print("total %.1f s" % (time.time() - t00), file=sys.stderr)
    return done()


if __name__ == "__main__":
    sys.exit(main())
