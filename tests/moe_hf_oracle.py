#!/usr/bin/env python3
"""Reference logits of a qwen3moe GGUF from transformers' Qwen3MoeForCausalLM (float32).

usage: moe_hf_oracle.py MODEL.gguf STRATA_LOGITS.bin ID,ID,...   compare with strata's logits
       moe_hf_oracle.py MODEL.gguf --write GOLDEN.bin ID,ID,...  write the golden file

Builds the HF model from the GGUF's metadata, loads its weights (dequantized with gguf's numpy
dequantizers, GGUF names mapped to HF's; GGUF stores q/k of qwen3 in HF order, unpermuted),
runs the ids as one sequence. Compare mode reads strata's logits (float32, [n_ids][n_vocab],
one row per position) and prints "max_abs_diff D range R" (R: max - min of the reference).

--write makes the golden file test_moe compares with (tests/data/moe_hf_logits.bin), so the
comparison runs in every `make test` without torch (little-endian):
  "MOEH", u32 n_ids, u32 n_vocab, u64 FNV-1a 64 of MODEL.gguf's bytes, i32 ids[n_ids],
  f32 logits[n_ids][n_vocab]
The model hash lets the test tell "strata changed" from "the synthetic model changed". The
model is `strata synth` with the shape of test_moe's test_hf_reference (its comment has the
command); needs torch, transformers and gguf (pip).
"""
import struct
import sys

import numpy as np
import torch
from gguf import GGUFReader
from gguf.quants import dequantize
from transformers import Qwen3MoeConfig, Qwen3MoeForCausalLM


def field(r, key):
    f = r.fields[key]
    v = f.parts[f.data[0]]
    return v.tolist()[0] if hasattr(v, "tolist") else v


def fnv1a64(path):
    h = 0xcbf29ce484222325
    with open(path, "rb") as f:
        for b in f.read():
            h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def main():
    write = len(sys.argv) == 5 and sys.argv[2] == "--write"
    args = [sys.argv[1]] + sys.argv[3:] if write else sys.argv[1:]
    path, lpath, ids = args[0], args[1], [int(x) for x in args[2].split(",")]
    r = GGUFReader(path)
    a = "qwen3moe"
    t = {x.name: x for x in r.tensors}

    def w(name):
        x = t[name]
        arr = dequantize(x.data, x.tensor_type)
        shape = tuple(int(n) for n in reversed(x.shape.tolist()))
        return torch.from_numpy(np.ascontiguousarray(arr.reshape(shape), dtype=np.float32))

    n_layers = field(r, f"{a}.block_count")
    E = field(r, f"{a}.embedding_length")
    emb = w("token_embd.weight")
    cfg = dict(
        vocab_size=emb.shape[0], hidden_size=E,
        intermediate_size=field(r, f"{a}.feed_forward_length"),
        moe_intermediate_size=field(r, f"{a}.expert_feed_forward_length"),
        num_hidden_layers=n_layers,
        num_attention_heads=field(r, f"{a}.attention.head_count"),
        num_key_value_heads=field(r, f"{a}.attention.head_count_kv"),
        head_dim=field(r, f"{a}.attention.key_length"),
        num_experts=field(r, f"{a}.expert_count"),
        num_experts_per_tok=field(r, f"{a}.expert_used_count"),
        norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[],
        rms_norm_eps=field(r, f"{a}.attention.layer_norm_rms_epsilon"),
        max_position_embeddings=field(r, f"{a}.context_length"),
        tie_word_embeddings=False, attention_bias=False, hidden_act="silu",
    )
    theta = field(r, f"{a}.rope.freq_base")
    try:
        config = Qwen3MoeConfig(**cfg, rope_parameters={"rope_type": "default", "rope_theta": theta})
    except TypeError:
        config = Qwen3MoeConfig(**cfg, rope_theta=theta)
    config._attn_implementation = "eager"
    model = Qwen3MoeForCausalLM(config).float().eval()

    sd = {"model.embed_tokens.weight": emb, "model.norm.weight": w("output_norm.weight"),
          "lm_head.weight": w("output.weight")}
    for l in range(n_layers):
        p, b = f"model.layers.{l}.", f"blk.{l}."
        sd[p + "input_layernorm.weight"] = w(b + "attn_norm.weight")
        sd[p + "post_attention_layernorm.weight"] = w(b + "ffn_norm.weight")
        for hf, gg in (("q_proj", "attn_q"), ("k_proj", "attn_k"), ("v_proj", "attn_v"), ("o_proj", "attn_output")):
            sd[p + f"self_attn.{hf}.weight"] = w(b + gg + ".weight")
        sd[p + "self_attn.q_norm.weight"] = w(b + "attn_q_norm.weight")
        sd[p + "self_attn.k_norm.weight"] = w(b + "attn_k_norm.weight")
        sd[p + "mlp.gate.weight"] = w(b + "ffn_gate_inp.weight")
        gate, up, down = w(b + "ffn_gate_exps.weight"), w(b + "ffn_up_exps.weight"), w(b + "ffn_down_exps.weight")
        sd[p + "mlp.experts.gate_up_proj"] = torch.cat([gate, up], dim=1)   # [X, 2F, E]
        sd[p + "mlp.experts.down_proj"] = down                              # [X, E, F]
    missing, unexpected = model.load_state_dict(sd, strict=False)
    missing = [m for m in missing if "rotary" not in m]
    if missing or unexpected:
        print("state dict mismatch: missing", missing, "unexpected", unexpected)
        sys.exit(1)
    with torch.no_grad():
        ref = model(torch.tensor([ids])).logits[0].float().numpy()
    if write:
        with open(lpath, "wb") as f:
            f.write(b"MOEH" + struct.pack("<IIQ", len(ids), ref.shape[1], fnv1a64(path)))
            f.write(np.asarray(ids, dtype="<i4").tobytes())
            f.write(np.ascontiguousarray(ref, dtype="<f4").tobytes())
        print(f"wrote {lpath}: {len(ids)} x {ref.shape[1]} logits, range {float(ref.max() - ref.min()):.6g}, "
              f"torch {torch.__version__}, transformers {__import__('transformers').__version__}")
        return
    got = np.fromfile(lpath, dtype=np.float32).reshape(len(ids), -1)[:, :ref.shape[1]]
    d = float(np.abs(ref - got).max())
    print(f"max_abs_diff {d:.6g} range {float(ref.max() - ref.min()):.6g}")


if __name__ == "__main__":
    main()
