"""What the Python tests (tests/cli, tests/server) share: the check counters and closing line of
tests/test.h, and `strata serve` on a free port.

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    from harness import check, skip, done, Server

check(cond, what) counts a check and prints "FAIL: what" on stderr when cond is false;
skip(key, why) prints "SKIP key: why" on stdout (tests/run.sh checks it against
tests/skips.allowed); done() prints "N passed, N failed, N skipped" and returns the exit status.
HARNESS_TRACE=FILE appends each check's caller (file:line ok|FAIL) to FILE: two runs' traces, counted
with `sort | uniq -c` and compared, show which check's count moves between runs.
Importing this module removes proxy variables from the environment: the tests talk to
127.0.0.1 directly.
"""
import http.client, json, os, re, signal, subprocess, sys, tempfile, time

for _k in list(os.environ):
    if _k.lower() in ("http_proxy", "https_proxy", "all_proxy"):
        del os.environ[_k]
os.environ["NO_PROXY"] = "127.0.0.1,localhost"

passed = failed = skipped = 0


_trace = os.environ.get("HARNESS_TRACE")   # a file: every check's caller (file:line) appended, one a line


def check(cond, what):
    global passed, failed
    if _trace:   # which checks ran: two runs' traces compared show where a suite's count moves
        f = sys._getframe(1)
        with open(_trace, "a") as t:
            t.write("%s:%d %s\n" % (os.path.basename(f.f_code.co_filename), f.f_lineno, "ok" if cond else "FAIL"))
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what, file=sys.stderr, flush=True)
    return cond


def skip(key, why):
    """A part that does not run: "SKIP key: why" on stdout, counted."""
    global skipped
    skipped += 1
    print("SKIP %s: %s" % (key, why), flush=True)


def done():
    """The closing line tests/run.sh reads; the exit status (1 when a check failed)."""
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped), flush=True)
    return 1 if failed else 0


_live = set()   # the Server processes not yet reaped (their CPU time is read from /proc)


def cpu_seconds():
    """CPU seconds (user + system) of this process, its reaped children and the live servers: what
    the suite has cost so far, the servers' model work included (docs/RELIABILITY.md, "CI time")."""
    t = os.times()
    total = t.user + t.system + t.children_user + t.children_system
    tick = os.sysconf("SC_CLK_TCK")
    for p in list(_live):
        try:
            with open("/proc/%d/stat" % p.pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick   # utime, stime
        except (OSError, IndexError, ValueError):
            pass
    return total


def part_time(name, t0, c0):
    """The part's line on stderr: "  time NAME: W s, cpu C s" (tests/test.h's form)."""
    print("  time %s: %.2f s, cpu %.2f s" % (name, time.time() - t0, cpu_seconds() - c0), file=sys.stderr, flush=True)


def run_part(only, name, fn, *args):
    """fn(*args) unless `only` (a set of names, or None) leaves name out; an exception is a failed
    check, and the part's wall and CPU time (the servers' included) go to stderr."""
    if only and name not in only:
        return
    t0, c0 = time.time(), cpu_seconds()
    try:
        fn(*args)
    except Exception as e:
        check(False, "%s raised %r" % (name, e))
    part_time(name, t0, c0)


def sanitizer_report(text):
    """True when text holds an AddressSanitizer / UBSan report (make test-asan's builds)."""
    return "Sanitizer" in text or "runtime error" in text


def small_model(binary, tokenizer_from, path):
    """Write tests/small_model.h's synthetic llama to path with `strata synth` (quick mode's model
    for the suites whose checks compare the server with itself): 2 layers of width 192, ffn 512,
    3 query heads and 1 KV head of 64, Q4_1 layers, a Q8_0 output and embedding, the tokenizer and
    chat template copied from tokenizer_from (SmolLM2: the same ids for the same text), its context
    SmolLM2's 8,192. About a thirteenth of SmolLM2's work per token; the same kernels. Returns path."""
    subprocess.run([binary, "synth", path, "--arch", "llama", "--layers", "2", "--dim", "192", "--ffn", "512",
                    "--heads", "3", "--kv-heads", "1", "--head-dim", "64", "--type-attn", "Q4_1", "--type-ffn", "Q4_1",
                    "--type-output", "Q8_0", "--type-embd", "Q8_0", "--tokenizer", tokenizer_from],
                   check=True, stdout=subprocess.DEVNULL, timeout=600)
    return path


class Server:
    """`BINARY serve -m MODEL --port 0 ARGS...`; the port is read from its first stdout line.
    stderr goes to a file: an undrained pipe could block the server, and stop() searches the
    file for sanitizer reports (one check, unless check_reports=False)."""

    def __init__(self, binary, model, *args, env=None, timeout=60):
        self.timeout = timeout   # raw()'s default, seconds
        self.errf = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen([binary, "serve", "-m", model, "--port", "0", *args],
                                     stdout=subprocess.PIPE, stderr=self.errf, text=True, env=env)
        line = self.proc.stdout.readline()
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        if not m:
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            raise RuntimeError("server did not start: %r %s" % (line, self.stderr()))
        self.port = int(m.group(1))
        _live.add(self.proc)
        self.base = "http://127.0.0.1:%d" % self.port

    def client(self, key="none", **kw):
        """The official openai client on this server (no retries)."""
        import openai
        return openai.OpenAI(base_url=self.base + "/v1", api_key=key, max_retries=0, timeout=120, **kw)

    def raw(self, method, path, body=None, headers=None, timeout=None, source=None):
        """(status, headers dict with lower-case names, body bytes); a dict or list body is sent as JSON."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout or self.timeout,
                                       source_address=(source, 0) if source else None)
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        data = r.read()
        hd = {k.lower(): v for k, v in r.getheaders()}
        c.close()
        return r.status, hd, data

    def metrics(self, headers=None, source=None):
        """GET /metrics as {name: value}."""
        _, _, body = self.raw("GET", "/metrics", headers=headers, source=source)
        out = {}
        for line in body.decode().splitlines():
            if line and not line.startswith("#"):
                name, val = line.rsplit(" ", 1)
                out[name] = float(val)
        return out

    def stderr(self):
        self.errf.seek(0)
        return self.errf.read()

    def alive(self):
        return self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM, check_reports=True, wait=20):
        """Send sig (if still running), wait (kill after `wait` s); the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(wait)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        rc = self.proc.returncode
        _live.discard(self.proc)
        if check_reports:
            err = self.stderr()
            check(not sanitizer_report(err), "no sanitizer reports: %s" % err[-3000:])
        return rc
