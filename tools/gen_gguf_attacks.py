#!/usr/bin/env python3
"""Regression corpus of hostile GGUF files: tests/data/gguf_attacks/.

One small file per attack class of issue 9 (and the reader's checklist), each a minimal
change to a tiny but complete llama model (base.gguf, which loads and runs), plus
expected.tsv: "file<TAB>substring the rejection message must contain". tests/test_attacks.c
loads every file through strata_model_load and checks the message.

The writer below is our own byte-level serializer (not the gguf package) because most of
these files must break the rules the package enforces: counts, lengths, types and offsets
are written exactly as given.

GGUF layout: "GGUF" u32 version, u64 n_tensors, u64 n_kv, kvs {str key, u32 vtype, value},
tensor infos {str name, u32 n_dims, u64 ne[n_dims], u32 type, u64 offset}, pad to alignment,
data. Strings: u64 length + bytes. Arrays: u32 elem type, u64 n, elements.

Usage: python3 tools/gen_gguf_attacks.py [outdir]   (default tests/data/gguf_attacks)
"""
import os
import struct
import sys

# GGUF value types
U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
SCALAR_FMT = {U8: '<B', I8: '<b', U16: '<H', I16: '<h', U32: '<I', I32: '<i', F32: '<f', BOOL: '<B',
              U64: '<Q', I64: '<q', F64: '<d'}
# ggml type ids used here
T_F32, T_F16, T_Q4_0, T_Q8_0, T_I64 = 0, 1, 2, 8, 27
TYPE_BYTES = {T_F32: (1, 4), T_F16: (1, 2), T_Q4_0: (32, 18), T_Q8_0: (32, 34), T_I64: (1, 8)}
MASK64 = (1 << 64) - 1


def gstr(b):
    if isinstance(b, str):
        b = b.encode()
    return struct.pack('<Q', len(b)) + b


def value(vtype, v):
    if vtype == STR:
        return gstr(v)
    if vtype == ARR:
        et, items = v
        out = struct.pack('<IQ', et, len(items))
        for it in items:
            out += value(et, it)
        return out
    return struct.pack(SCALAR_FMT[vtype], v)


class Model:
    """A tiny llama: n_embd 8, 2 heads of 4 (1 KV head), n_ff 8, 1 layer, F32 weights, a
    byte-level BPE vocabulary of 12 tokens. Every field can be replaced before write()."""

    def __init__(self, spm=False):
        self.version = 3
        self.alignment = 32            # padding actually used for the data section
        self.tokens = ['a', 'b', 'c', 'ab', 'abc', '\u0120', '\u0120a', '<|endoftext|>', '<|im_start|>',
                       '<|im_end|>', 'x', 'y']
        self.token_type = [1] * 7 + [3, 3, 3, 1, 1]
        self.kv = [
            ('general.architecture', STR, 'llama'),
            ('general.name', STR, 'attack-base'),
            ('llama.block_count', U32, 1),
            ('llama.context_length', U32, 64),
            ('llama.embedding_length', U32, 8),
            ('llama.feed_forward_length', U32, 8),
            ('llama.attention.head_count', U32, 2),
            ('llama.attention.head_count_kv', U32, 1),
            ('llama.rope.freq_base', F32, 10000.0),
            ('llama.attention.layer_norm_rms_epsilon', F32, 1e-5),
            ('tokenizer.ggml.model', STR, 'gpt2'),
            ('tokenizer.ggml.pre', STR, 'smollm'),
            ('tokenizer.ggml.tokens', ARR, (STR, self.tokens)),
            ('tokenizer.ggml.token_type', ARR, (I32, self.token_type)),
            ('tokenizer.ggml.merges', ARR, (STR, ['a b', 'ab c', '\u0120 a'])),
            ('tokenizer.ggml.bos_token_id', U32, 7),
            ('tokenizer.ggml.eos_token_id', U32, 9),
        ]
        if spm:   # SentencePiece-style vocabulary (Gemma): byte tokens <0xNN>, scores
            toks = ['<pad>', '<eos>', '<bos>', '<unk>', '<0x00>', '<0x41>', '<0xFF>', '\u2581a', 'a', 'b', 'ab', 'x']
            types = [3, 3, 3, 2, 6, 6, 6, 1, 1, 1, 1, 1]
            self.tokens, self.token_type = toks, types
            self.set('tokenizer.ggml.model', STR, 'llama')
            self.drop('tokenizer.ggml.pre')
            self.drop('tokenizer.ggml.merges')
            self.set('tokenizer.ggml.tokens', ARR, (STR, toks))
            self.set('tokenizer.ggml.token_type', ARR, (I32, types))
            self.set('tokenizer.ggml.scores', ARR, (F32, [0.0] * len(toks)))
            self.set('tokenizer.ggml.bos_token_id', U32, 2)
            self.set('tokenizer.ggml.eos_token_id', U32, 1)
        n_vocab = len(self.tokens)
        E, Q, KV, FF = 8, 8, 4, 8
        # (name, dims, type); data generated deterministically
        self.tensors = [
            ['token_embd.weight', [E, n_vocab], T_F32],
            ['output_norm.weight', [E], T_F32],
            ['blk.0.attn_norm.weight', [E], T_F32],
            ['blk.0.attn_q.weight', [E, Q], T_F32],
            ['blk.0.attn_k.weight', [E, KV], T_F32],
            ['blk.0.attn_v.weight', [E, KV], T_F32],
            ['blk.0.attn_output.weight', [Q, E], T_F32],
            ['blk.0.ffn_norm.weight', [E], T_F32],
            ['blk.0.ffn_gate.weight', [E, FF], T_F32],
            ['blk.0.ffn_up.weight', [E, FF], T_F32],
            ['blk.0.ffn_down.weight', [FF, E], T_F32],
        ]
        self.offsets = None            # list of explicit offsets, or None: packed and aligned
        self.n_kv = None               # header counts (None: the true counts)
        self.n_tensors = None
        self.data_bytes = None         # data section bytes written (None: what the tensors need)

    def set(self, key, vtype, v):
        for i, (k, _, _) in enumerate(self.kv):
            if k == key:
                self.kv[i] = (key, vtype, v)
                return self
        self.kv.append((key, vtype, v))
        return self

    def drop(self, key):
        self.kv = [e for e in self.kv if e[0] != key]
        return self

    def tensor(self, name):
        return next(t for t in self.tensors if t[0] == name)

    def write(self):
        out = b'GGUF' + struct.pack('<I', self.version)
        out += struct.pack('<QQ', len(self.tensors) if self.n_tensors is None else self.n_tensors,
                           len(self.kv) if self.n_kv is None else self.n_kv)
        for k, t, v in self.kv:
            out += gstr(k) + struct.pack('<I', t) + value(t, v)
        sizes, offs, pos = [], [], 0
        for name, dims, ty in self.tensors:
            blck, bs = TYPE_BYTES.get(ty, (1, 4))
            n = 1
            for d in dims:
                n = (n * (d & MASK64)) & MASK64
            nb = (n // blck) * bs if n < (1 << 40) else 0   # hostile shapes: no real data
            sizes.append(nb)
            pos = (pos + self.alignment - 1) // self.alignment * self.alignment
            offs.append(pos)
            pos += nb
        if self.offsets is not None:
            offs = self.offsets
        for (name, dims, ty), off in zip(self.tensors, offs):
            out += gstr(name) + struct.pack('<I', len(dims))
            for d in dims:
                out += struct.pack('<Q', d & MASK64)
            out += struct.pack('<IQ', ty & 0xffffffff, off & MASK64)
        out += b'\0' * ((-len(out)) % self.alignment)
        data = bytearray(pos if self.data_bytes is None else self.data_bytes)
        # weights: small deterministic values (norms 1.0) so the base model runs
        for (name, dims, ty), off, nb in zip(self.tensors, offs, sizes):
            if ty != T_F32 or off + nb > len(data):
                continue
            for i in range(nb // 4):
                x = 1.0 if 'norm' in name else ((i * 37 + len(name) * 11) % 17 - 8) / 64.0
                data[off + 4 * i: off + 4 * i + 4] = struct.pack('<f', x)
        return bytes(out + data)


def attacks():
    """(file, bytes, expected substring of the rejection message)."""
    A = []

    def add(name, m_or_bytes, want):
        b = m_or_bytes.write() if isinstance(m_or_bytes, Model) else m_or_bytes
        A.append((name, b, want))

    def m():
        return Model()

    base = m().write()
    hdr = lambda nt, nkv, v=3: b'GGUF' + struct.pack('<IQQ', v, nt, nkv)

    # ---- not a GGUF file / header ----
    add('empty.gguf', b'', 'empty file (0 bytes)')
    add('html.gguf', b'<!DOCTYPE html><html><body>404 Not Found</body></html>\n', 'looks like a web page')
    add('bad-magic.gguf', b'GGML' + base[4:64], 'not a GGUF file: expected "GGUF"')
    add('version-1.gguf', base[:4] + struct.pack('<I', 1) + base[8:], 'version 1 (the first draft of GGUF) is not supported')
    add('version-big-endian.gguf', base[:4] + struct.pack('>I', 3) + base[8:], 'looks byte-swapped')
    add('version-99.gguf', base[:4] + struct.pack('<I', 99) + base[8:], 'unsupported version 99')
    add('truncated-header.gguf', base[:17], 'truncated: expected 24 bytes, file has 17')
    # ---- counts beyond the file ----
    x = m(); x.n_kv = 1000000
    add('n-kv-beyond-file.gguf', x, '1000000 key/values need at least 14000000 bytes')
    x = m(); x.n_tensors = 100000
    add('n-tensors-beyond-file.gguf', x, '100000 tensor infos need at least 3300000 bytes')
    add('n-kv-huge.gguf', hdr(0, 1 << 63) + b'\0' * 40, 'count 9223372036854775808 of key/values is impossible')
    add('n-tensors-huge.gguf', hdr(1 << 62, 0) + b'\0' * 40, 'count 4611686018427387904 of tensor infos is impossible')
    # ---- string and array lengths ----
    add('key-length-huge.gguf', hdr(0, 1) + struct.pack('<Q', 1 << 63) + b'abc' + b'\0' * 20,
        'length 9223372036854775808 at byte 32 is impossible')
    add('string-length-beyond-file.gguf', hdr(0, 1) + gstr('k') + struct.pack('<IQ', STR, 1 << 30) + b'xyz',
        "key 'k': truncated: expected 1073741869 bytes, file has 48")
    add('array-length-huge.gguf', hdr(0, 1) + gstr('k') + struct.pack('<IIQ', ARR, U32, 1 << 62) + b'\0' * 16,
        "key 'k': array of 4611686018427387904 uint32 is impossible")
    add('string-array-huge.gguf', hdr(0, 1) + gstr('tokenizer.ggml.tokens') + struct.pack('<IIQ', ARR, STR, 1 << 61) + b'\0' * 16,
        "count 2305843009213693952 of array strings is impossible")
    add('string-array-beyond-file.gguf', hdr(0, 1) + gstr('k') + struct.pack('<IIQ', ARR, STR, 3) + gstr('a') + struct.pack('<Q', 1 << 40),
        'truncated: expected')
    add('nested-array.gguf', hdr(0, 1) + gstr('k') + struct.pack('<IIQ', ARR, ARR, 1) + struct.pack('<IQ', U8, 1) + b'\0',
        'nested arrays are not supported')
    add('value-type-unknown.gguf', hdr(0, 1) + gstr('k') + struct.pack('<I', 13) + b'\0' * 16, "key 'k': value type 13 is unknown")
    add('bool-value-2.gguf', hdr(0, 1) + gstr('k') + struct.pack('<IB', BOOL, 2) + b'\0' * 8, 'bool has value 2')
    add('key-empty.gguf', hdr(0, 1) + gstr('') + struct.pack('<II', U32, 0) + b'\0' * 8, 'key is empty')
    # ---- tensor infos ----
    x = m(); x.tensor('blk.0.attn_q.weight')[1] = [8, 8, 1, 1, 1]
    add('n-dims-5.gguf', x, "tensor 'blk.0.attn_q.weight': n_dims = 5, must be 1..4")
    x = m(); x.tensor('blk.0.attn_q.weight')[1] = [8, -8]
    add('dim-negative.gguf', x, "tensor 'blk.0.attn_q.weight': dimension 1 = -8 is negative")
    x = m(); x.tensor('blk.0.attn_q.weight')[1] = [1 << 32, 1 << 32]
    add('element-count-overflow.gguf', x, 'element count overflows (dimension 1 = 4294967296)')
    x = m(); x.tensor('blk.0.attn_q.weight')[1] = [1 << 62]
    add('byte-size-wraps-to-zero.gguf', x, 'byte size overflows (4611686018427387904 elements of F32)')
    # an exabyte tensor (2^60 bytes, no wrap) backed by a few bytes of file
    x = m(); x.tensor('blk.0.attn_q.weight')[1] = [1 << 58]
    add('exabyte-tensor.gguf', x, "data offset 448 + size 1152921504606846976 is impossible")
    x = m(); x.tensor('blk.0.attn_q.weight')[2] = 9999
    add('type-id-unknown.gguf', x, "tensor 'blk.0.attn_q.weight': type id 9999 is unknown")
    x = m(); x.tensor('blk.0.attn_q.weight')[2] = 4      # Q4_2: removed from ggml, a hole in the ids
    add('type-id-removed.gguf', x, 'type id 4 is unknown')
    x = m(); x.tensor('blk.0.attn_q.weight')[1] = [33, 8]; x.tensor('blk.0.attn_q.weight')[2] = T_Q4_0
    add('row-not-block-multiple.gguf', x, 'row length 33 is not a multiple of the Q4_0 block size 32')
    x = m(); x.tensor('output_norm.weight')[0] = 'blk.0.attn_norm.weight'
    add('duplicate-tensor-name.gguf', x, "duplicate tensor name 'blk.0.attn_norm.weight'")
    x = m(); x.tensor('blk.0.attn_q.weight')[0] = ''
    add('tensor-name-empty.gguf', x, 'name is empty')
    # ---- data offsets ----
    def offs_of(x):
        pos, o = 0, []
        for name, dims, ty in x.tensors:
            n = 1
            for d in dims:
                n *= d
            pos = (pos + 31) // 32 * 32
            o.append(pos)
            pos += n * 4
        return o
    x = m(); x.offsets = offs_of(x); x.offsets[3] += 4
    add('offset-misaligned.gguf', x, "tensor 'blk.0.attn_q.weight': data offset 452 is not a multiple of the alignment 32")
    x = m(); x.offsets = offs_of(x); x.offsets[4] = x.offsets[3] + 32
    add('offset-overlap.gguf', x, "tensors 'blk.0.attn_q.weight' (bytes 448..704 of the data section) and 'blk.0.attn_k.weight' (from 480) overlap")
    x = m(); x.offsets = offs_of(x); x.offsets[-1] = 1 << 30
    add('offset-out-of-file.gguf', x, "(data of tensor 'blk.0.ffn_down.weight' ends there)")
    x = m(); x.offsets = offs_of(x); x.offsets[-1] = (1 << 64) - 64
    add('offset-wraps.gguf', x, "tensor 'blk.0.ffn_down.weight': data offset 18446744073709551552 + size 256 is impossible")
    x = m(); x.data_bytes = 1000
    add('data-truncated.gguf', x, 'truncated: expected')
    # ---- alignment ----
    add('alignment-0.gguf', m().set('general.alignment', U32, 0), 'alignment is 0 (must be a nonzero power of two)')
    add('alignment-48.gguf', m().set('general.alignment', U32, 48), 'alignment 48 is not a power of two')
    add('alignment-huge.gguf', m().set('general.alignment', U32, 1 << 31), 'alignment 2147483648 is larger than 1 MiB')
    # ---- keys ----
    x = m(); x.kv.append(('llama.block_count', U32, 1))
    add('duplicate-key.gguf', x, "duplicate key 'llama.block_count'")
    add('alignment-wrong-type.gguf', m().set('general.alignment', U64, 32), "key 'general.alignment': must be uint32, found uint64")
    add('architecture-wrong-type.gguf', m().set('general.architecture', U32, 1), "key 'general.architecture': must be string, found uint32")
    add('block-count-wrong-type.gguf', m().set('llama.block_count', STR, '1'), 'key llama.block_count has the wrong type')
    add('block-count-negative.gguf', m().set('llama.block_count', I32, -1), 'key llama.block_count has the wrong type')
    add('rope-freq-nan.gguf', m().set('llama.rope.freq_base', F32, float('nan')), 'llama.rope.freq_base must be a finite float')
    add('head-count-zero.gguf', m().set('llama.attention.head_count', U32, 0), 'llama.attention.head_count = 0 is out of range')
    add('head-count-kv-not-divisor.gguf', m().set('llama.attention.head_count_kv', U32, 3), 'head_count 2 is not a multiple of head_count_kv 3')
    add('architecture-unknown.gguf', m().set('general.architecture', STR, 'gptj'), "architecture 'gptj' is not supported")
    # ---- model binding ----
    add('block-count-above-layers.gguf', m().set('llama.block_count', U32, 2), 'block_count is 2 but tensor blk.1.attn_norm.weight is missing')
    add('block-count-huge.gguf', m().set('llama.block_count', U32, 1 << 30), 'llama.block_count = 1073741824 is out of range')
    x = m(); x.tensor('blk.0.attn_k.weight')[1] = [8, 8]; x.offsets = None
    add('tensor-shape-mismatch.gguf', x, 'tensor blk.0.attn_k.weight has shape [8, 8, 1], expected [8, 4, 1]')
    x = m(); x.tensors = [t for t in x.tensors if t[0] != 'blk.0.ffn_up.weight']
    add('tensor-missing.gguf', x, 'missing tensor blk.0.ffn_up.weight')
    x = m(); x.tensor('blk.0.attn_q.weight')[2] = T_I64
    add('tensor-type-not-computable.gguf', x, 'tensor blk.0.attn_q.weight has type I64 (id 27), which strata cannot compute with')
    x = m(); x.tensor('token_embd.weight')[1] = [8, 4]
    add('vocab-larger-than-embeddings.gguf', x, 'the tokenizer has 12 tokens but token_embd.weight has 4 rows')
    # ---- vocabulary ----
    add('bos-id-outside-vocab.gguf', m().set('tokenizer.ggml.bos_token_id', U32, 12), 'tokenizer.ggml.bos_token_id = 12 is outside the vocabulary (12 tokens)')
    add('eos-id-huge.gguf', m().set('tokenizer.ggml.eos_token_id', U32, 0xffffffff), 'tokenizer.ggml.eos_token_id = 4294967295 is outside the vocabulary')
    add('eot-id-negative.gguf', m().set('tokenizer.ggml.eot_token_id', I32, -1), 'tokenizer.ggml.eot_token_id = -1 is outside the vocabulary')
    add('padding-id-float.gguf', m().set('tokenizer.ggml.padding_token_id', F32, 1.0), 'tokenizer.ggml.padding_token_id is not an integer')
    add('tokens-int32-array.gguf', m().set('tokenizer.ggml.tokens', ARR, (I32, list(range(12)))),
        "key 'tokenizer.ggml.tokens': must be an array of string, found an array of int32")
    add('tokens-not-array.gguf', m().set('tokenizer.ggml.tokens', STR, 'abc'), "key 'tokenizer.ggml.tokens': must be an array of string, found string")
    add('token-type-float-array.gguf', m().set('tokenizer.ggml.token_type', ARR, (F32, [1.0] * 12)),
        "key 'tokenizer.ggml.token_type': must be an array of int32, found an array of float32")
    add('merges-int32-array.gguf', m().set('tokenizer.ggml.merges', ARR, (I32, [1, 2])),
        "key 'tokenizer.ggml.merges': must be an array of string, found an array of int32")
    add('scores-string.gguf', m().set('tokenizer.ggml.scores', STR, 'x'), "key 'tokenizer.ggml.scores': must be an array of float32, found string")
    add('token-type-count-mismatch.gguf', m().set('tokenizer.ggml.token_type', ARR, (I32, [1] * 11)),
        'tokenizer.ggml.token_type has 11 entries but tokenizer.ggml.tokens has 12')
    add('token-type-out-of-range.gguf', m().set('tokenizer.ggml.token_type', ARR, (I32, [1] * 5 + [99] + [1] * 6)),
        'tokenizer.ggml.token_type[5] = 99 is not a token type (0..6)')
    add('tokens-empty.gguf', m().set('tokenizer.ggml.tokens', ARR, (STR, [])), 'tokenizer.ggml.tokens is empty')
    add('tokenizer-model-unknown.gguf', m().set('tokenizer.ggml.model', STR, 'wordpiece'), "tokenizer.ggml.model 'wordpiece' is not supported")
    add('tokenizer-missing.gguf', m().drop('tokenizer.ggml.model'), 'tokenizer.ggml.model is missing')
    add('add-bos-not-bool.gguf', m().set('tokenizer.ggml.add_bos_token', U32, 1), 'tokenizer.ggml.add_bos_token is not a bool')
    # byte tokens that decode to invalid values (SentencePiece <0xNN> spelling)
    x = Model(spm=True); t = list(x.tokens); t[5] = '<0xZZ>'; x.set('tokenizer.ggml.tokens', ARR, (STR, t))
    add('byte-token-not-hex.gguf', x, "byte token 5 is spelled '<0xZZ>', not <0xNN>")
    x = Model(spm=True); t = list(x.tokens); t[6] = '<0x100>'; x.set('tokenizer.ggml.tokens', ARR, (STR, t))
    add('byte-token-above-255.gguf', x, "byte token 6 is spelled '<0x100>', not <0xNN>")
    x = Model(spm=True); x.set('tokenizer.ggml.scores', ARR, (F32, [0.0] * 3 + [float('nan')] + [0.0] * 8))
    add('score-nan.gguf', x, 'tokenizer.ggml.scores[3] is NaN')
    return base, Model(spm=True).write(), A


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..', 'tests', 'data', 'gguf_attacks')
    os.makedirs(out, exist_ok=True)
    base, base_spm, A = attacks()
    names = [a[0] for a in A]
    assert len(names) == len(set(names)), 'duplicate attack file names'
    with open(os.path.join(out, 'base.gguf'), 'wb') as f:
        f.write(base)
    with open(os.path.join(out, 'base-spm.gguf'), 'wb') as f:
        f.write(base_spm)
    with open(os.path.join(out, 'expected.tsv'), 'w') as tsv:
        tsv.write('# file\texpected substring of the rejection message (generated by tools/gen_gguf_attacks.py)\n')
        for name, b, want in A:
            with open(os.path.join(out, name), 'wb') as f:
                f.write(b)
            assert '\t' not in want and '\n' not in want
            tsv.write(f'{name}\t{want}\n')
    total = sum(len(b) for _, b, _ in A) + len(base) + len(base_spm)
    print(f'{len(A)} attack files + base.gguf ({len(base)} bytes) + base-spm.gguf in {os.path.normpath(out)}, {total} bytes')


if __name__ == '__main__':
    main()
