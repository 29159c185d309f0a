#!/bin/sh
# The server benchmark on a GPU machine that cannot build strata (no libmicrohttpd/jansson
# headers, no apt): the CUDA-enabled binary and the shared libraries it needs are built and
# gathered here, carried in an ignored folder, and run with LD_LIBRARY_PATH.
#
#   here:   sh bench/server_gpu.sh pack [BUILD]      -> .srvbin/ (strata, lib/, smollm2-vocab.gguf)
#   there:  sh bench/server_gpu.sh run [OUTDIR]      (carry .srvbin)
#
# The model is synthetic, made on the spot: the SmolLM2-135M shape and weight types (Q4_1
# matrices, Q8_0 embedding and output: the bytes per token of the real file) with SmolLM2's own
# tokenizer (a vocabulary-only GGUF cut from the real file here, 1.7 MB). Random weights give
# meaningless text, which is all TTFT/TPOT need; they also fall into loops that the suffix
# drafter predicts well, so the speculation figures of this model say nothing about real text.
set -eu
cmd=${1:-}
case "$cmd" in
pack)
  build=${2:-build}
  model=${STRATA_MODEL:-$HOME/.cache/strata/SmolLM2-135M-Instruct.Q4_1.gguf}
  rm -rf .srvbin && mkdir -p .srvbin/lib
  cp "$build/strata" .srvbin/strata.bin && strip .srvbin/strata.bin
  # the shared-library closure, glibc and the loader left out (the GPU machine has its own)
  ldd "$build/strata" | awk '/=> \//{print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libstdc++.so*|libgcc_s.so*) ;;
      *) cp -L "$lib" .srvbin/lib/ ;;
    esac
  done
  # the binary runs through a wrapper, so only strata sees the carried libraries (not python3)
  printf '#!/bin/sh\nd=$(dirname "$0")\nLD_LIBRARY_PATH="$d/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$d/strata.bin" "$@"\n' > .srvbin/strata
  chmod +x .srvbin/strata
  python3 tools/vocab_only.py "$model" .srvbin/smollm2-vocab.gguf
  ex=$(git rev-parse --git-path info/exclude); mkdir -p "$(dirname "$ex")"; grep -qx '/.srvbin/' "$ex" 2>/dev/null || echo '/.srvbin/' >> "$ex"
  du -sh .srvbin; ls .srvbin/lib
  ;;
run)
  out=${2:-/tmp}
  dev=${DEVICE:-cuda}        # DEVICE=cpu: a dry run of this script on a machine without a GPU
  clients=${CLIENTS:-1,4,16}
  bin=$PWD/.srvbin/strata
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  m=/tmp/synth-smollm2.gguf
  "$bin" synth "$m" --arch llama --tokenizer .srvbin/smollm2-vocab.gguf --type-all Q4_1 --type-embd Q8_0 \
    --type-output Q8_0 -t 8 2>&1 | tail -n 1
  "$bin" info "$m" | sed -n '1p;5p;/^CUDA/p'
  "$bin" run -m "$m" --device "$dev" -p "Once upon a time" -n 128 --temp 0 2>&1 | grep -E '^\[(cpu|cuda)'
  echo "== the same greedy completions from servers on the CPU, on $dev, and on $dev with --spec 4"
  python3 - "$bin" "$m" "$dev" <<'PY'
import http.client, json, re, subprocess, sys
binary, model, dev = sys.argv[1:4]
def serve(*a):
    p = subprocess.Popen([binary, "serve", "-m", model, "--port", "0", "--parallel", "4", "--ctx", "1024", *a],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return p, int(re.search(r":(\d+) \(", p.stdout.readline()).group(1))
def post(port, prompt, **kw):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    c.request("POST", "/v1/completions", json.dumps({"prompt": prompt, "max_tokens": 48, "temperature": 0, **kw}),
              {"Content-Type": "application/json"})
    return json.loads(c.getresponse().read())
prompts = ["Once upon a time", "The history of the printing press begins", "def add(a, b):"]
texts = {}
for name, args in (("cpu", ["--device", "cpu"]), (dev, ["--device", dev]), (dev + " --spec 4", ["--device", dev, "--spec", "4"])):
    p, port = serve(*args)
    rs = [post(port, q) for q in prompts]
    texts[name] = [r["choices"][0]["text"] for r in rs]
    # logprobs keep the logits on the host (no graph pick): the same text, one entry per token
    lp = post(port, prompts[0], logprobs=2)
    ok = (lp["choices"][0]["text"] == texts[name][0] and
          len(lp["choices"][0]["logprobs"]["tokens"]) == lp["usage"]["completion_tokens"])
    print("%-16s logprobs request: same text and one entry per token: %s" % (name, ok))
    t = rs[0]["timings"]
    print("%-16s %s" % (name, {k: t[k] for k in t if k in ("predicted_n", "predicted_per_second", "draft_n", "draft_n_accepted", "tokens_per_pass")}))
    p.terminate(); p.wait()
vals = list(texts.values())
print("greedy texts identical across the three servers:", all(v == vals[0] for v in vals))
PY
  echo "== server, --device $dev, bench_server.py (64 tokens per client, temperature 0)"
  python3 tests/server/bench_server.py --bin "$bin" --model "$m" --clients "$clients" --extra "--device $dev" \
    | tee "$out/server_gpu.md"
  echo "== speculation inside the server (1 client; random weights loop: acceptance says nothing about real text)"
  python3 bench/server_spec.py --bin "$bin" --model "$m" --spec 4 --rounds 3 -n 128 --extra "--device $dev" \
    | tee "$out/server_spec_gpu.md"
  echo "== server, --device $dev --spec 4, bench_server.py"
  python3 tests/server/bench_server.py --bin "$bin" --model "$m" --clients "$clients" --extra "--device $dev --spec 4" \
    | tee "$out/server_gpu_spec4.md"
  ;;
*) echo "usage: sh bench/server_gpu.sh pack [BUILD] | run [OUTDIR]" >&2; exit 2 ;;
esac
