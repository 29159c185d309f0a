#!/usr/bin/env python3
"""Reference logits and greedy continuations of SmolLM2-135M-Instruct (Q4_1 GGUF) for tests/test_forward.c.

The oracle is transformers + torch on the CPU in float32: AutoModelForCausalLM.from_pretrained(dir,
gguf_file=...) dequantizes every GGUF tensor (with gguf.dequantize) and runs the plain PyTorch llama.
Before trusting it, this script checks the dequantized weights the model holds against an independent
numpy decoding of the raw Q4_1 / Q8_0 blocks written here from the block layouts (see
check_dequantization). The token ids are stored in the files, so the C test feeds exactly these ids and
does not depend on any tokenizer. Prompts contain no digits: SmolLM2's pre-tokenizer ("smollm") splits
every digit on its own, and we do not want the ids to hinge on whether an oracle reproduces that.

Usage:  python3 tools/gen_logits_golden.py [MODEL.gguf] [OUT_DIR]
        (defaults: ~/.cache/strata/SmolLM2-135M-Instruct.Q4_1.gguf, tests/data). Needs transformers,
        torch, accelerate (transformers requires it to load GGUF), gguf, numpy. About a minute on 2 cores.

---- tests/data/smollm2_logits.bin (little-endian) -------------------------------------------------------
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
  Reference log-probabilities are top_logits - logsumexp. Top-k alone lets a test compute the KL between
  the coarsened distributions {top-k tokens, one bucket for the rest}; by the data-processing inequality
  that is a lower bound of the true KL(ref || ours), and it is close to it when the tail mass is small
  (the script prints the tail masses). The full records give the exact full-vocabulary KL at a few
  positions (the last of every prompt), to confirm the approximation.

---- tests/data/smollm2_greedy.txt (text) -----------------------------------------------------------------
  Lines starting with '#' are comments. Then, per prompt, three lines:
    prompt N id id ...          the prompt ids
    gen N id id ...             N greedily generated ids
    margin N x x ...            per generated step: top-1 minus top-2 logit of the reference (%.6g)
  Greedy rule (the C side must use the same): at each step take the argmax of the full logit vector
  (lowest id on ties), append it, continue. End-of-generation tokens are NOT special: generation always
  runs N steps (the positions of EOS/<|im_end|> in the output, if any, are listed in a comment).
  The reference recomputes the whole sequence at every step (no KV cache) in float32.
"""
import math
import os
import struct
import sys
import time

import numpy as np

MODEL = os.path.expanduser(sys.argv[1] if len(sys.argv) > 1 else "~/.cache/strata/SmolLM2-135M-Instruct.Q4_1.gguf")
OUT_DIR = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data")
TOP_K = 256
N_GREEDY = 64

# ---- prompts (no digits anywhere: see the docstring) ----------------------------------------------------
LONG_TEXT = (
    "The lighthouse keeper climbed the narrow stairs every evening, carrying a lamp and a small notebook. "
    "He wrote down the color of the sky, the direction of the wind, and the names of the ships that passed "
    "the rocky point. Over many years the notebook became a quiet history of the coast: storms that arrived "
    "without warning, calm weeks when the sea looked like glass, and the night a fishing boat lost its way "
    "in the fog and followed his light back to the harbor. When the lighthouse was finally automated, the "
    "keeper gave his notebooks to the village library, where children still read them on rainy afternoons."
)
# (kind, text): "chat" renders one user message with the model's ChatML template (default system prompt,
# add_generation_prompt), exactly what the model sees in chat mode; "plain" is raw text.
LOGIT_PROMPTS = [
    ("chat", "What is the capital of France?"),
    ("plain", "The quick brown fox jumps over the lazy dog. Once upon a time, in a small village by the sea,"),
    ("chat", "Read the following story and summarize it in two sentences.\n\n" + LONG_TEXT),
]
# Greedy prompts: chosen among 14 candidates for the largest smallest top-1/top-2 margin over the 64 steps,
# so that the default path (int8 activations) is tested on real decisions, not on coin flips. Rejected
# examples (smallest margin in the reference): "Once upon a time, in a small village by the sea," 0.0030,
# "Explain how photosynthesis works in simple terms." 0.0038, "The history of the Roman Empire" 0.0014,
# "Write a short story about a robot who learns to paint." 0.0135. Chosen: 0.081, 0.069, 0.063.
GREEDY_PROMPTS = [
    ("chat", "Describe the water cycle."),
    ("plain", "def fibonacci(n):\n"),
    ("plain", "Paris is the capital of France. It is known for"),
]


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# ---- independent dequantization of the raw GGUF blocks (layouts are facts of the format) ----------------
def f16_to_f32(u8pair):
    return u8pair.copy().view(np.float16).astype(np.float32)


def dequant_q4_1(raw):
    """Q4_1 block, 20 bytes per 32 weights: f16 d | f16 m | u8 qs[16]; weight j (0..15) = (qs[j] & 15)*d + m,
    weight j+16 = (qs[j] >> 4)*d + m. raw: uint8 (rows, bytes_per_row) -> float32 (rows, cols)."""
    rows = raw.shape[0]
    b = raw.reshape(rows, -1, 20)
    d = f16_to_f32(b[:, :, 0:2]).reshape(rows, -1, 1)
    m = f16_to_f32(b[:, :, 2:4]).reshape(rows, -1, 1)
    qs = b[:, :, 4:20]
    q = np.concatenate([qs & 15, qs >> 4], axis=2).astype(np.float32)
    return (q * d + m).reshape(rows, -1)


def dequant_q8_0(raw):
    """Q8_0 block, 34 bytes per 32 weights: f16 d | i8 qs[32]; weight j = qs[j]*d."""
    rows = raw.shape[0]
    b = raw.reshape(rows, -1, 34)
    d = f16_to_f32(b[:, :, 0:2]).reshape(rows, -1, 1)
    q = b[:, :, 2:34].copy().view(np.int8).astype(np.float32)
    return (q * d).reshape(rows, -1)


def unpermute_qk(w, n_head):
    """The GGUF converter reorders each head's rows of attn_q / attn_k so that rotary pairs are adjacent
    (rows 2i, 2i+1 of a head = HF rows i, i + head_dim/2). HF's llama uses the rotate-half layout, so
    the loader undoes it: rows of a head, viewed (head_dim/2, 2), become (2, head_dim/2)."""
    hd = w.shape[0] // n_head
    return w.reshape(n_head, hd // 2, 2, w.shape[1]).swapaxes(1, 2).reshape(w.shape)


def check_dequantization(model, reader, n_head, n_kv_head):
    import gguf
    sd = model.state_dict()
    cases = [
        ("token_embd.weight", "model.embed_tokens.weight", None),
        ("blk.0.attn_q.weight", "model.layers.0.self_attn.q_proj.weight", n_head),
        ("blk.0.attn_k.weight", "model.layers.0.self_attn.k_proj.weight", n_kv_head),
        ("blk.0.attn_v.weight", "model.layers.0.self_attn.v_proj.weight", None),
        ("blk.17.ffn_down.weight", "model.layers.17.mlp.down_proj.weight", None),
        ("blk.29.ffn_gate.weight", "model.layers.29.mlp.gate_proj.weight", None),
        ("blk.29.attn_norm.weight", "model.layers.29.input_layernorm.weight", None),
        ("output_norm.weight", "model.norm.weight", None),
    ]
    tensors = {t.name: t for t in reader.tensors}
    lines = []
    for gname, hname, permute_heads in cases:
        t = tensors[gname]
        kind = t.tensor_type.name
        if kind == "Q4_1":
            mine = dequant_q4_1(np.asarray(t.data))
        elif kind == "Q8_0":
            mine = dequant_q8_0(np.asarray(t.data))
        else:
            mine = np.asarray(t.data, dtype=np.float32).reshape(np.asarray(t.data).shape)
        theirs_gguf = gguf.dequantize(t.data, t.tensor_type).reshape(mine.shape)
        hf = sd[hname].detach().cpu().numpy().reshape(mine.shape)
        d_gguf = float(np.max(np.abs(mine - theirs_gguf)))
        note = ""
        if permute_heads:
            d_raw = float(np.max(np.abs(mine - hf)))
            mine_hf = unpermute_qk(mine, permute_heads)
            d_hf = float(np.max(np.abs(mine_hf - hf)))
            note = f" (before undoing the q/k row permutation: max|d| = {d_raw:.3g})"
        else:
            d_hf = float(np.max(np.abs(mine - hf)))
        lines.append(f"  {gname:26s} {kind:5s} {str(mine.shape):14s} mine vs gguf.dequantize max|d| = {d_gguf:.3g}; "
                     f"mine vs transformers weight max|d| = {d_hf:.3g}{note}")
        if d_gguf != 0.0 or d_hf != 0.0:
            raise SystemExit(f"dequantization mismatch in {gname}:\n" + "\n".join(lines))
    # tied output head: no output.weight in the file, lm_head shares token_embd
    assert "output.weight" not in tensors
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    lines.append("  output head: tied to token_embd (no output.weight in the file; lm_head shares the tensor)")
    return lines


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
    log(f"loaded {MODEL} in {time.time() - t0:.1f}s: layers {cfg.num_hidden_layers}, hidden {cfg.hidden_size}, "
        f"heads {cfg.num_attention_heads}/{cfg.num_key_value_heads}, vocab {n_vocab}, rope base "
        f"{cfg.rope_parameters['rope_theta']}, eps {cfg.rms_norm_eps}")

    reader = gguf.GGUFReader(MODEL)
    log("dequantization check (mine = numpy decoding of the raw blocks written in this script):")
    for line in check_dequantization(model, reader, cfg.num_attention_heads, cfg.num_key_value_heads):
        log(line)

    def render(kind, text):
        if kind == "chat":
            s = tok.apply_chat_template([{"role": "user", "content": text}], tokenize=False,
                                        add_generation_prompt=True)
        else:
            s = text
        assert not any(c.isdigit() for c in s), "prompts must not contain digits"
        ids = tok(s, add_special_tokens=False)["input_ids"]
        # the rendering must round-trip, and chat prompts start with <|im_start|> = id 1
        assert tok.decode(ids) == s, (s, ids)
        return s, ids

    eos_ids = {tok.convert_tokens_to_ids(t) for t in ("<|im_end|>", "<|endoftext|>")}

    # ---- logits at every position --------------------------------------------------------------------
    out_bin = bytearray()
    prompts_blob = bytearray()
    full_records = []
    tail_masses = []
    for pi, (kind, text) in enumerate(LOGIT_PROMPTS):
        s, ids = render(kind, text)
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0].to(torch.float32).numpy()  # (n_tokens, n_vocab)
        assert logits.shape == (len(ids), n_vocab)
        prompts_blob += struct.pack("<I", len(ids)) + struct.pack(f"<{len(ids)}i", *ids)
        n_argmax_ok = 0
        for t in range(len(ids)):
            row = logits[t]
            row64 = row.astype(np.float64)
            mx = float(row64.max())
            lse = mx + math.log(float(np.exp(row64 - mx).sum()))
            # descending by logit, ties by lower id (stable sort on -logit)
            order = np.argsort(-row, kind="stable")[:TOP_K]
            am = int(np.argmax(row))
            assert am == int(order[0])
            if t + 1 < len(ids) and am == ids[t + 1]:
                n_argmax_ok += 1
            tail_masses.append(1.0 - float(np.exp(row64[order] - lse).sum()))
            prompts_blob += struct.pack("<fffi", lse, float(row.max()), float(row.min()), am)
            prompts_blob += order.astype("<i4").tobytes() + row[order].astype("<f4").tobytes()
        full_records.append((pi, len(ids) - 1, logits[-1].astype("<f4")))
        log(f"prompt {pi} ({kind}, {len(ids)} tokens): logit range at last position "
            f"[{logits[-1].min():.3f}, {logits[-1].max():.3f}], next-token argmax matches the text at "
            f"{n_argmax_ok}/{len(ids) - 1} positions; last argmax {int(logits[-1].argmax())} "
            f"{tok.decode([int(logits[-1].argmax())])!r}")
    tm = np.array(tail_masses)
    log(f"probability mass outside the top-{TOP_K}: median {np.median(tm):.4f}, mean {tm.mean():.4f}, max {tm.max():.4f}")

    out_bin += b"SLGT" + struct.pack("<5I", 1, n_vocab, TOP_K, len(LOGIT_PROMPTS), len(full_records))
    out_bin += prompts_blob
    for pi, pos, row in full_records:
        out_bin += struct.pack("<II", pi, pos) + row.tobytes()
    path = os.path.join(OUT_DIR, "smollm2_logits.bin")
    with open(path, "wb") as f:
        f.write(out_bin)
    log(f"wrote {path} ({len(out_bin)} bytes)")

    # ---- greedy continuations ------------------------------------------------------------------------
    lines = [
        "# Greedy continuations of SmolLM2-135M-Instruct.Q4_1 by transformers+torch float32 (CPU),",
        "# written by tools/gen_logits_golden.py; the format is described at the top of that script.",
        f"# rule: argmax of the full logit vector (lowest id on ties), {N_GREEDY} steps, EOS not special.",
    ]
    for gi, (kind, text) in enumerate(GREEDY_PROMPTS):
        s, ids = render(kind, text)
        seq = list(ids)
        gen, margins = [], []
        with torch.no_grad():
            for _ in range(N_GREEDY):
                row = model(torch.tensor([seq])).logits[0, -1].to(torch.float32).numpy()
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
    path = os.path.join(OUT_DIR, "smollm2_greedy.txt")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    log(f"wrote {path}; total {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
