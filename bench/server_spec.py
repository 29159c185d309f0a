#!/usr/bin/env python3
"""Speculative decoding inside `strata serve`: decode tok/s of greedy requests with --spec 0 and
--spec K, on a passage to quote (input-grounded), code to continue and open chat; the servers run
side by side and the requests alternate between them (the same moment's machine load for both),
the replies must be identical. Figures: medians over rounds of timings.predicted_per_second, and
the speculative statistics of the --spec server (timings, /metrics).

usage: python3 bench/server_spec.py [--bin build/strata] [--model M] [--spec 7] [--rounds 5] [-n 128]
       [--clients 1]   (clients > 1: that many copies of each request at once, --parallel = clients)
"""
import argparse, http.client, json, os, re, statistics, subprocess, sys, threading

PROMPTS = {
    "quote": [{"role": "user", "content": 'Here is a passage: "The Industrial Revolution began in Great Britain in the late '
               'eighteenth century and spread to Europe and North America. It changed how goods were made, moving '
               'production from homes and small workshops to factories with machines powered by water and steam." '
               'Repeat the passage word for word.'}],
    "code": [{"role": "user", "content": "Rename the function add to plus in this code and show the whole code:\n\n"
              "def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a - b\n\ndef mul(a, b):\n    return a * b\n"}],
    "chat": [{"role": "user", "content": "Give me three tips for staying focused while studying."}],
}


def start(binary, model, spec, parallel, extra):
    p = subprocess.Popen([binary, "serve", "-m", model, "--port", "0", "--parallel", str(parallel), "--ctx", "2048",
                          "--spec", str(spec), *extra], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = p.stdout.readline()
    m = re.search(r":(\d+) \(", line)
    if not m:
        raise SystemExit("server did not start: %r" % line)
    return p, int(m.group(1))


def post(port, body, path="/v1/chat/completions"):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    r = json.loads(c.getresponse().read())
    c.close()
    return r


def metrics(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request("GET", "/metrics")
    out = {}
    for line in c.getresponse().read().decode().splitlines():
        if line and not line.startswith("#"):
            k, v = line.rsplit(" ", 1)
            out[k] = float(v)
    c.close()
    return out


def run_round(port, body, clients):
    res = [None] * clients
    def one(i):
        res[i] = post(port, body)
    ts = [threading.Thread(target=one, args=(i,)) for i in range(clients)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/strata")
    ap.add_argument("--model", default=os.path.expanduser("~/.cache/strata/SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--spec", type=int, default=7)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("-n", type=int, default=128)
    ap.add_argument("--clients", type=int, default=1)
    ap.add_argument("--extra", default="", help="more serve options, space separated (e.g. --device cuda)")
    a = ap.parse_args()
    servers = {k: start(a.bin, a.model, k, a.clients, a.extra.split()) for k in (0, a.spec)}
    try:
        print("| prompt | clients | tokens | --spec 0 tok/s | --spec %d tok/s | speed-up | drafted | accepted | acceptance | tokens per pass | replies |" % a.spec)
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for name, msgs in PROMPTS.items():
            body = {"messages": msgs, "temperature": 0, "max_tokens": a.n}
            for k in servers:   # warm-up (and the prefix cache: every round then evaluates the same tail)
                post(servers[k][1], body)
            tps = {0: [], a.spec: []}
            same, stats = True, None
            for _ in range(a.rounds):
                replies = {}
                for k in servers:
                    rs = run_round(servers[k][1], body, a.clients)
                    tps[k].append(statistics.median(r["timings"]["predicted_per_second"] for r in rs) * a.clients
                                  if a.clients > 1 else rs[0]["timings"]["predicted_per_second"])
                    replies[k] = [r["choices"][0]["message"]["content"] for r in rs]
                    if k == a.spec:
                        stats = rs[0]["timings"]
                same = same and replies[0] == replies[a.spec]
            t0, t1 = statistics.median(tps[0]), statistics.median(tps[a.spec])
            print("| %s | %d | %d | %.1f | %.1f | %.2f× | %d | %d | %.0f %% | %.2f | %s |" % (
                name, a.clients, stats["predicted_n"], t0, t1, t1 / t0, stats["draft_n"], stats["draft_n_accepted"],
                100 * stats["draft_acceptance_rate"], stats["tokens_per_pass"], "identical" if same else "DIFFERENT"), flush=True)
        m = metrics(servers[a.spec][1])
        print("\n/metrics of the --spec %d server: drafted %d, accepted %d, acceptance %.3f, tokens per pass %.3f" % (
            a.spec, m["strata_spec_drafted_tokens_total"], m["strata_spec_accepted_tokens_total"],
            m["strata_spec_acceptance_rate"], m["strata_tokens_per_pass"]))
    finally:
        for p, _ in servers.values():
            p.terminate()
            p.wait()


if __name__ == "__main__":
    sys.exit(main())
