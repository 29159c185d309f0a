#!/usr/bin/env python3
"""Server benchmark: TTFT, TPOT and aggregate tok/s for C concurrent streaming clients.

  TTFT  = request sent -> first content byte (the first non-empty content delta)
  TPOT  = (last content arrival - first content arrival) / (tokens - 1)
  tok/s = all generated tokens (usage.completion_tokens) / wall time of the round

For each C the server runs with --parallel C (so every client has a slot), each client sends one
streaming completion (temperature 0, a different prompt each, max_tokens N) at the same moment;
the figures are medians over clients, after one warm-up request.

--prompt-while P: one more slot, and once every client has its first token, one more client
sends a P-token prompt (max_tokens 1); the table then adds the streams' TPOT while that prompt
is read (median of the gaps between chunks that arrive before its answer) and its TTFT.

--prompt-tokens P: every client's prompt is P token ids (a different first sentence each, so the
prefix cache shares nothing): TTFT then includes reading P tokens beside the other streams.

usage: python3 tests/server/bench_server.py [--bin build/strata] [--model M] [--clients 1,2,4] [-n 64]
                                            [--prompt-while 2000] [--prompt-tokens 512]
"""
import argparse, http.client, json, os, re, statistics, subprocess, sys, threading, time

PROMPTS = ["Once upon a time, in a small village by the sea,", "The history of the printing press begins",
           "Here is a recipe for a simple tomato soup:", "The three laws of thermodynamics are",
           "A short story about a robot who learns to paint:", "The best way to learn a new language is",
           "In the year 2050, cities will", "The mitochondria is the powerhouse of the cell because"]


def start(binary, model, parallel, extra, log=None):
    p = subprocess.Popen([binary, "serve", "-m", model, "--port", "0", "--parallel", str(parallel), "--ctx", "1024", *extra],
                         stdout=subprocess.PIPE, stderr=log if log else subprocess.DEVNULL, text=True)
    m = re.search(r":(\d+) \(", p.stdout.readline())
    return p, int(m.group(1))


def one(port, prompt, n, out, i, t_start, first=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    body = {"prompt": prompt, "max_tokens": n, "temperature": 0, "stream": True, "stream_options": {"include_usage": True}}
    t_start.wait()
    t0 = time.perf_counter()
    c.request("POST", "/v1/completions", body=json.dumps(body), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    arrivals, tokens = [], 0
    while True:
        line = r.readline()
        if not line:
            break
        if not line.startswith(b"data: ") or line.startswith(b"data: [DONE]"):
            continue
        j = json.loads(line[6:])
        if j.get("usage"):
            tokens = j["usage"]["completion_tokens"]
        if j["choices"] and j["choices"][0]["text"]:
            arrivals.append(time.perf_counter())
            if first is not None and len(arrivals) == 2:
                first.release()
    t1 = time.perf_counter()
    c.close()
    out[i] = dict(ttft=arrivals[0] - t0 if arrivals else float("nan"),
                  tpot=(arrivals[-1] - arrivals[0]) / (tokens - 1) if tokens > 1 and arrivals else float("nan"),
                  tokens=tokens, t0=t0, t1=t1, arrivals=arrivals)


def cpu_seconds(pid):
    """utime + stime of a process (all its threads), from /proc: time the scheduler actually gave
    it, which other load on a shared machine does not inflate."""
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def engine_baseline(binary, model, n):
    """Decode tok/s of `strata run` on the same prompt right before a round (same machine load)."""
    p = subprocess.run([binary, "run", "-m", model, "-p", PROMPTS[0], "-n", str(n), "--temp", "0"],
                       capture_output=True, text=True)
    m = re.search(r"decode \d+ tok, ([0-9.]+) tok/s", p.stderr)
    return float(m.group(1)) if m else float("nan")


def long_prompt(port, ids, res):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=3600)
    t0 = time.perf_counter()
    c.request("POST", "/v1/completions", body=json.dumps({"prompt": ids, "max_tokens": 1, "temperature": 0}),
              headers={"Content-Type": "application/json"})
    c.getresponse().read()
    res["t0"], res["t1"] = t0, time.perf_counter()
    c.close()


def round_(port, clients, n, long_ids=None, prompts=None):
    out = [None] * clients
    go = threading.Event()
    first = threading.Semaphore(0)
    prompts = prompts or PROMPTS
    ts = [threading.Thread(target=one, args=(port, prompts[i % len(prompts)], n, out, i, go, first)) for i in range(clients)]
    for t in ts:
        t.start()
    go.set()
    lp = {}
    if long_ids:
        for _ in range(clients):
            first.acquire()
        lt = threading.Thread(target=long_prompt, args=(port, long_ids, lp))
        lt.start()
        lt.join()
    for t in ts:
        t.join()
    wall = max(o["t1"] for o in out) - min(o["t0"] for o in out)
    return out, wall, lp


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/strata")
    ap.add_argument("--model", default=os.path.expanduser("~/.cache/strata/SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--clients", default="1,2,4")
    ap.add_argument("-n", type=int, default=64)
    ap.add_argument("--extra", default="", help="more serve options, space separated")
    ap.add_argument("--prompt-while", type=int, default=0, help="a prompt of this many tokens arrives mid-round")
    ap.add_argument("--prompt-tokens", type=int, default=0,
                    help="every client's prompt is this many tokens (ids; a different first sentence each, so no prefix is shared)")
    ap.add_argument("--server-log", default="", help="append the servers' stderr to this file (e.g. with STRATA_SERVER_TRACE=1)")
    ap.add_argument("--ttft-all", action="store_true", help="after each row, every client's TTFT in ms, sorted")
    a = ap.parse_args()
    log = open(a.server_log, "a") if a.server_log else None
    extra_cols = " TPOT while the long prompt is read (ms) | long prompt's TTFT (s) |" if a.prompt_while else ""
    print("| clients | slots | TTFT median (ms) | TPOT median (ms) | tokens | aggregate tok/s | tok per server CPU-s | `strata run` tok/s just before |" + extra_cols)
    print("|---|---|---|---|---|---|---|---|" + ("---|---|" if a.prompt_while else ""))
    for c in [int(x) for x in a.clients.split(",")]:
        if log:
            print("== %d clients" % c, file=log, flush=True)
        p, port = start(a.bin, a.model, c + (1 if a.prompt_while else 0), a.extra.split(), log)
        try:
            round_(port, 1, 8)   # warm-up
            long_ids = None
            if a.prompt_while:
                tc = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
                tc.request("POST", "/tokenize", body=json.dumps({"content": "The old maps of the harbour are kept in a cool room. " * (a.prompt_while // 8 + 8)}))
                long_ids = json.loads(tc.getresponse().read())["tokens"][:a.prompt_while]
                tc.close()
            prompts = None
            if a.prompt_tokens:
                prompts = []
                for i in range(c):
                    tc = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
                    text = "Client %d asks about parcel %d. " % (i, 7 * i + 3) + \
                        "The old maps of the harbour are kept in a cool room. " * (a.prompt_tokens // 8 + 8)
                    tc.request("POST", "/tokenize", body=json.dumps({"content": text}))
                    prompts.append(json.loads(tc.getresponse().read())["tokens"][:a.prompt_tokens])
                    tc.close()
            base = engine_baseline(a.bin, a.model, a.n)
            cpu0 = cpu_seconds(p.pid)
            out, wall, lp = round_(port, c, a.n, long_ids, prompts)
            cpu = cpu_seconds(p.pid) - cpu0
            tok = sum(o["tokens"] for o in out)
            extra = ""
            if a.prompt_while:
                gaps = [y - x for o in out for x, y in zip(o["arrivals"], o["arrivals"][1:]) if lp["t0"] <= x and y <= lp["t1"]]
                extra = " %s | %.1f |" % ("%.1f" % (statistics.median(gaps) * 1e3) if gaps else "-", lp["t1"] - lp["t0"])
            print("| %d | %d | %.0f | %.1f | %d | %.1f | %.1f | %.1f |%s" % (c, c + (1 if a.prompt_while else 0), statistics.median(o["ttft"] for o in out) * 1e3,
                  statistics.median(o["tpot"] for o in out) * 1e3, tok, tok / wall, tok / cpu if cpu else 0, base, extra), flush=True)
            if a.ttft_all:
                print("TTFT per client (ms, sorted): " + " ".join("%.0f" % (o["ttft"] * 1e3) for o in sorted(out, key=lambda o: o["ttft"])),
                      flush=True)
        finally:
            p.terminate()
            p.wait()


if __name__ == "__main__":
    sys.exit(main())
