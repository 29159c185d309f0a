/* The one registry of STRATA_* switches (X-macro list).
 * Each line: X(ID, "STRATA_NAME", TYPE, default, "one-line doc")
 *   TYPE is ENV_BOOL, ENV_INT or ENV_STR. Defaults are strings, parsed like the variable.
 * Read once at first use and cached (src/core/env.c). `strata env` lists them.
 * Add a line here; never call getenv() anywhere else. */
X(ENV_EXACT,        "STRATA_EXACT",        ENV_BOOL, "0",    "reference mode: dequantize weights, keep activations in f32 (same as --exact)")
X(ENV_KERNEL,       "STRATA_KERNEL",       ENV_STR,  "auto", "CPU matvec kernel: auto (AVX2 when the CPU has it), avx2, ref")
X(ENV_THREADS,      "STRATA_THREADS",      ENV_INT,  "0",    "default worker threads (0: all cores); -t overrides")
X(ENV_CACHE_DIR,    "STRATA_CACHE_DIR",    ENV_STR,  "",     "where fetched models live (default: $XDG_CACHE_HOME/strata or ~/.cache/strata)")
X(ENV_HF_ENDPOINT,  "STRATA_HF_ENDPOINT",  ENV_STR,  "https://huggingface.co", "the Hugging Face hub `strata pull` and `-m org/repo:QUANT` download from")
X(ENV_HF_TOKEN,     "STRATA_HF_TOKEN",     ENV_STR,  "",     "bearer token sent to the hub (gated or private repositories)")
X(ENV_LOGITS_HASH,  "STRATA_LOGITS_HASH",  ENV_BOOL, "0",    "print an FNV-1a hash of every step's logits to stderr (nondeterminism check)")
X(ENV_CUDA_GRAPH,    "STRATA_CUDA_GRAPH",    ENV_BOOL, "1",    "CUDA greedy decode: replay the step as one CUDA graph (0: launch kernels one by one)")
X(ENV_CUDA_FUSE,     "STRATA_CUDA_FUSE",     ENV_BOOL, "1",    "CUDA backend: fuse ops that share inputs (norm+quantize, q/k/v, gate/up+SwiGLU, matvec+residual); 0: one kernel per op")
X(ENV_MOE,          "STRATA_MOE",          ENV_STR,  "grouped", "CPU MoE expert kernels: grouped (each expert read once for its tokens) or per-token (reference); same bits")
X(ENV_CUDA_ATTN,     "STRATA_CUDA_ATTN",     ENV_STR,  "auto", "CUDA attention: auto (the device table: exact everywhere), exact (the CPU order, bit-identical) or split (KV range split over blocks, faster at long context; other bits)")
X(ENV_POOL_SPIN,     "STRATA_POOL_SPIN",    ENV_INT,  "2000", "thread pool: pause iterations a waiting thread spins before yielding, then sleeping (0: sleep at once: use on an oversubscribed machine)")
X(ENV_CPU_ATTN,      "STRATA_CPU_ATTN",      ENV_STR,  "auto", "CPU attention scores: auto (AVX2, eight positions side by side) or scalar (one position at a time); same bits")
X(ENV_CPU_KV_PASS,   "STRATA_CPU_KV_PASS",   ENV_BOOL, "1",    "CPU attention: convert the layer's K/V cache rows to f32 once per pass (1) or once per (token, head) task (0); same bits")
X(ENV_CUDA_PDL,      "STRATA_CUDA_PDL",      ENV_STR,  "auto", "CUDA programmatic dependent launch (sm_90+): a kernel starts while its predecessor drains and waits for its results (griddepcontrol.wait); auto (the device table: on from Hopper), on, off; same bits")
X(ENV_CUDA_MATVEC,   "STRATA_CUDA_MATVEC",   ENV_STR,  "auto", "CUDA matvec of the 256-weight formats (K-quants, IQ): auto (the device table), coop (8 lanes per super-block), lane (one lane per block); same bits")
X(ENV_CUDA_SAMPLE,   "STRATA_CUDA_SAMPLE",   ENV_BOOL, "1",    "CUDA decode with a non-greedy sampler (or a repetition penalty): draw the token on the GPU in the step's graph (0: logits to the host, CPU sampler)")
X(ENV_MMAP,          "STRATA_MMAP",          ENV_BOOL, "0",    "load GGUF files by mapping them (1) instead of reading them into memory (0): a mapped file changed in place kills the process with SIGBUS (docs/RELIABILITY.md)")
X(ENV_GRAMMAR_OVERLAP, "STRATA_GRAMMAR_OVERLAP", ENV_STR, "auto", "server: compute grammar masks on a helper thread while the decode step runs: auto (on with CUDA), 1, 0")
