#!/usr/bin/env python3
"""Independent oracles for the tokenizer: small vocabularies trained here, written into
vocabulary-only GGUF files with the gguf package, and the ids the reference libraries give for
a few thousand strings (whitespace runs, code, emoji, CJK, mixtures).

  python3 tools/gen_tokenizer_oracle.py      (needs: sentencepiece, tokenizers, gguf)
  python3 tools/gen_tokenizer_oracle.py --unigram DIR   (needs: sentencepiece, gguf; run by
      tests/test_tokenizer.c in `make test`: the unigram oracle is made afresh on every run)

writes tests/data/oracle/:
  spm.gguf / spm.tsv
      SentencePiece BPE (byte fallback, identity normalization, add_dummy_prefix, one
      user-defined symbol) trained on a generated corpus. The normal pieces are then shuffled
      to other ids with their scores kept, and a few runs of spaces are put at low ids with
      very low scores, as in Llama 2's vocabulary (where ' Hello' is [29871, 15043], not the
      [259, 10994] that merging by token id gives): SentencePiece merges by score, so ids and
      scores disagree on purpose. The GGUF has NO tokenizer.ggml.add_space_prefix key: the
      default for SentencePiece vocabularies is true (llama.cpp's reading of the key).
      Ids from sentencepiece.SentencePieceProcessor on the shuffled model.
  spm_noprefix.gguf / spm_noprefix.tsv
      the same vocabulary with add_space_prefix = false in the GGUF and add_dummy_prefix off
      in the model.
  llama3.gguf / llama3.tsv
      byte-level BPE trained with the `tokenizers` package under Llama 3's pre-tokenizer
      regex, plus whole words added to the vocabulary without merges; ids from
      tokenizers.models.BPE(..., ignore_merges=True) (Llama 3's tokenizer.json setting): a
      piece that is itself a vocabulary entry is that token before any merge. The GGUF says
      tokenizer.ggml.pre = "llama-bpe".

--unigram DIR writes DIR/unigram.gguf / unigram.tsv and DIR/unigram_noprefix.gguf / .tsv:
      a SentencePiece unigram model (byte fallback, identity normalization, whitespace kept,
      one user-defined symbol, whitespace-only pieces allowed) trained on the generated corpus,
      written as tokenizer.ggml.model "t5" with its scores and piece types; ids from
      sentencepiece.SentencePieceProcessor for 3,000 strings (the hand cases, then generated
      text: whitespace runs, code, emoji, CJK, mixtures). The second pair turns
      add_dummy_prefix off (GGUF add_space_prefix = false).

TSV format as tools/gen_tokenizer_golden.py (PARSE_SPECIAL <TAB> TEXT <TAB> IDS, no BOS).
The corpus and the test strings come from a seeded generator, so a rerun gives the same files
with the same package versions (recorded in each TSV's header).
"""
import io
import json
import os
import random
import sys

import gguf
import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as sp_pb2

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "data", "oracle")


def escape(s):
    """TEXT field: printable ASCII as is, backslash, tab, LF, CR escaped, every other byte as \\xNN."""
    out = []
    for b in s.encode("utf-8"):
        c = chr(b)
        if c in "\\\t\n\r":
            out.append({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"}[c])
        elif 0x20 <= b < 0x7F:
            out.append(c)
        else:
            out.append("\\x%02x" % b)
    return "".join(out)

WORDS = ("the of and to in is you that it he was for on are as with his they at be this have from or one had by "
         "word but not what all were we when your can said there use an each which she do how their if will up other "
         "about out many then them these so some her would make like him into time has look two more write go see "
         "number no way could people my than first water been call who oil its now find long down day did get come "
         "made may part Hello world Python function return value string token model server request response "
         "indented encoding decoder attention layer quantized schema grammar tool call weather Paris London").split()
CJK = "中文字符测试你好世界日本語のテキストですこんにちはカタカナ안녕하세요세계한국어"
EMOJI = ["\U0001F600", "\U0001F44B", "\U0001F44B\U0001F3FD", "\u2764\ufe0f", "\U0001F1EB\U0001F1F7",
         "\U0001F468\u200d\U0001F469\u200d\U0001F467", "\u2603", "\U0001F680", "\u2705"]
OTHER = ["caf\u00e9", "na\u00efve", "Stra\u00dfe", "\u041f\u0440\u0438\u0432\u0435\u0442", "\u0645\u0631\u062d\u0628\u0627",
         "\u0928\u092e\u0938\u094d\u0924\u0947", "\u0395\u03bb\u03bb\u03ac\u03b4\u03b1", "\u00bd", "\u00a0", "\u2581"]
CODE = ["def f(x):\n    return x * 2\n", "for (int i = 0; i < n; i++) {\n\tsum += a[i];\n}\n",
        "if (x) {\n        y = 1;\n    }\n", "#include <stdio.h>\n", "{\"key\": [1, 2, 3], \"b\": null}",
        "    indented = True\n", "\t\tdeep\n", "x->y = &z;", "a != b && c >= d", "// comment\n", "SELECT * FROM t;"]
SPACES = [" ", "  ", "   ", "    ", "        ", "\t", "\t\t", "\n", "\n\n", " \n", "\n    ", "\r\n", "  \t "]


def gen_text(rng, k):
    out = []
    for _ in range(k):
        r = rng.random()
        if r < 0.45:
            w = rng.choice(WORDS)
            out.append((" " if rng.random() < 0.7 else "") + (w.capitalize() if rng.random() < 0.1 else w))
        elif r < 0.55:
            out.append(rng.choice(SPACES))
        elif r < 0.65:
            out.append(rng.choice(CODE))
        elif r < 0.72:
            i = rng.randrange(len(CJK) - 4)
            out.append(CJK[i:i + rng.randint(1, 4)])
        elif r < 0.78:
            out.append(rng.choice(EMOJI))
        elif r < 0.84:
            out.append(rng.choice(OTHER))
        elif r < 0.92:
            out.append(str(rng.randint(0, 10 ** rng.randint(1, 7))))
        else:
            out.append(rng.choice(".,;:!?()[]{}'\"-_=+*/<>@#$%&|"))
    return "".join(out)


def corpus(n, seed):
    rng = random.Random(seed)
    return [gen_text(rng, rng.randint(5, 40)) for _ in range(n)]


def hand_cases():
    return ["Hello", " Hello", "  Hello", "Hello world", "hello  world", "a b", "a  b", "a   b", "a    b",
            " ", "  ", "   ", "    ", "\t", "\t\t", "\n", "\n\n", " \n ", "trailing   ", "   leading", "  both  ",
            "def f(x):\n    return x * 2\n", "    indented", "        if x:\n            pass\n",
            "\U0001F600", "hi \U0001F44B\U0001F3FD!", "\U0001F468\u200d\U0001F469\u200d\U0001F467", "中文字符测试",
            "日本語のテキストです。", "안녕하세요 세계", "\U00010348 gothic", "\U000F0000 private", "\u2581", "\u2581hi", "a\u2581b",
            "<tool>", "<tool>x", "x<tool>", " <tool> ", "a<tool><tool>b", "<s>", "</s>", "<unk>", "<0x41>",
            "1234567890", "3.14159", "x" * 64, "  " * 20 + "x", "\u00e9" * 10, "abc\u00a0def"]


def write_tsv(path, header, rows):
    with open(path, "w", encoding="ascii", newline="\n") as f:
        for line in header:
            f.write("# " + line + "\n")
        for s, ids in rows:
            f.write("0\t%s\t%s\n" % (escape(s), " ".join(str(i) for i in ids)))
    print("wrote", os.path.relpath(path), len(rows), "cases")


def versions():
    try:
        import tokenizers
        return "sentencepiece %s, tokenizers %s" % (spm.__version__, tokenizers.__version__)
    except ImportError:
        return "sentencepiece %s" % spm.__version__


# ---- SentencePiece ---------------------------------------------------------------------

def train_spm():
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus(6000, 1)), model_writer=buf, model_type="bpe", vocab_size=1200,
        character_coverage=0.9995, byte_fallback=True, normalization_rule_name="identity",
        remove_extra_whitespaces=False, add_dummy_prefix=True, split_digits=True,
        allow_whitespace_only_pieces=True, user_defined_symbols=["<tool>"], num_threads=1,
        minloglevel=2)
    m = sp_pb2.ModelProto()
    m.ParseFromString(buf.getvalue())
    return m


def shuffle_pieces(m, seed):
    """Normal pieces to other ids (scores kept), and Llama 2-style space runs: low ids, very
    low scores. Control, byte and user-defined pieces keep their places."""
    N = sp_pb2.ModelProto.SentencePiece
    pieces = list(m.pieces)
    normal_pos = [i for i, p in enumerate(pieces) if p.type == N.NORMAL]
    normal = [pieces[i] for i in normal_pos]
    rng = random.Random(seed)
    rng.shuffle(normal)
    have = {p.piece for p in pieces}
    runs = [p for p in ("\u2581\u2581", "\u2581\u2581\u2581", "\u2581\u2581\u2581\u2581") if p not in have]
    new = []
    k = 0
    for i, p in enumerate(pieces):
        if p.type == N.NORMAL:
            new.append(normal[k]); k += 1
        else:
            new.append(p)
        if p.type == N.BYTE and (i + 1 == len(pieces) or pieces[i + 1].type != N.BYTE):
            for j, r in enumerate(runs):       # right after the byte pieces, as Llama 2 has "▁▁" at 259
                q = N(piece=r, score=-1e9 + j, type=N.NORMAL)
                new.append(q)
    out = sp_pb2.ModelProto()
    out.CopyFrom(m)
    del out.pieces[:]
    for p in new:
        out.pieces.add().CopyFrom(p)
    return out


def spm_gguf(path, m, space_prefix_key, model="llama", add_bos=None):
    """The vocabulary of SentencePiece model m in a vocabulary-only GGUF: tokenizer.ggml.model
    `model` ("llama": BPE, "t5": unigram), pieces, scores, types, special ids; the
    add_space_prefix / add_bos_token keys only when given."""
    N = sp_pb2.ModelProto.SentencePiece
    assert all(p.type in (N.NORMAL, N.UNKNOWN, N.CONTROL, N.USER_DEFINED, N.BYTE) for p in m.pieces)
    w = gguf.GGUFWriter(path, "llama")
    w.add_tokenizer_model(model)
    w.add_token_list([p.piece for p in m.pieces])
    w.add_token_scores([p.score for p in m.pieces])
    w.add_token_types([int(p.type) for p in m.pieces])
    ids = {p.piece: i for i, p in enumerate(m.pieces)}
    w.add_unk_token_id(ids["<unk>"])
    w.add_bos_token_id(ids["<s>"])
    w.add_eos_token_id(ids["</s>"])
    if add_bos is not None:
        w.add_add_bos_token(add_bos)
    if space_prefix_key is not None:
        w.add_add_space_prefix(space_prefix_key)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print("wrote", os.path.relpath(path))


def spm_cases(m, name, tests, note):
    sp = spm.SentencePieceProcessor(model_proto=m.SerializeToString())
    rows = [(s, sp.encode(s)) for s in tests]
    bad = [s for s, ids in rows if sp.decode(ids) != s.replace("\u2581", " ")
           and not (m.normalizer_spec.add_dummy_prefix and sp.decode(ids) == s.replace("\u2581", " ").lstrip(" "))]
    write_tsv(os.path.join(OUT, name + ".tsv"),
              ["SentencePiece oracle (%s): %s" % (versions(), note),
               "Generated by tools/gen_tokenizer_oracle.py; %d strings, %d without an exact round trip"
               % (len(rows), len(bad))], rows)


# ---- Llama 3 byte-level BPE with ignore_merges ----------------------------------------

LLAMA3_RE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
             r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def llama3(tests):
    import tokenizers
    from tokenizers import Regex, decoders, models, pre_tokenizers, trainers
    pre = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_RE), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok = tokenizers.Tokenizer(models.BPE())
    tok.pre_tokenizer = pre
    tok.decoder = decoders.ByteLevel()
    tr = trainers.BpeTrainer(vocab_size=700, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                             show_progress=False, special_tokens=["<|begin_of_text|>", "<|eot_id|>"])
    tok.train_from_iterator(corpus(6000, 2), trainer=tr)
    vocab = tok.get_vocab()
    merges = [tuple(x) for x in json.loads(tok.to_str())["model"]["merges"]]
    # whole words that the merges do not build: with ignore_merges they are taken whole
    bl = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    extra = []
    for w in [" " + w for w in WORDS[::2]] + ["中文", " \u043f\u0440\u0438\u0432\u0435\u0442", "caf\u00e9"]:
        spelled = bl.pre_tokenize_str(w)[0][0]
        if spelled not in vocab:
            extra.append(spelled)
    ids_sorted = sorted(vocab.items(), key=lambda kv: kv[1])
    tokens = [t for t, _ in ids_sorted]
    specials = {"<|begin_of_text|>", "<|eot_id|>"}
    # the added words go after the learned tokens, before nothing else (ids are dense)
    tokens += extra
    vmap = {t: i for i, t in enumerate(tokens)}
    model = models.BPE(vocab=vmap, merges=merges, ignore_merges=True)
    ref = tokenizers.Tokenizer(model)
    ref.pre_tokenizer = pre
    ref.decoder = decoders.ByteLevel()
    ref.add_special_tokens(sorted(specials))
    # the same model without ignore_merges, to count the strings where the rule matters
    plain = tokenizers.Tokenizer(models.BPE(vocab=vmap, merges=merges, ignore_merges=False))
    plain.pre_tokenizer = pre
    plain.add_special_tokens(sorted(specials))
    rows, differ = [], 0
    for s in tests:
        ids = ref.encode(s, add_special_tokens=False).ids
        differ += ids != plain.encode(s, add_special_tokens=False).ids
        rows.append((s, ids))
    path = os.path.join(OUT, "llama3.gguf")
    w = gguf.GGUFWriter(path, "llama")
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("llama-bpe")
    w.add_token_list(tokens)
    w.add_token_types([3 if t in specials else 1 for t in tokens])
    w.add_token_merges(["%s %s" % m for m in merges])
    w.add_bos_token_id(vmap["<|begin_of_text|>"])
    w.add_eos_token_id(vmap["<|eot_id|>"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print("wrote", os.path.relpath(path), "(%d tokens, %d merges, %d whole words without merges)"
          % (len(tokens), len(merges), len(extra)))
    write_tsv(os.path.join(OUT, "llama3.tsv"),
              ["Llama 3 byte-level BPE oracle (%s): models.BPE(ignore_merges=True), Llama 3's regex" % versions(),
               "Generated by tools/gen_tokenizer_oracle.py; %d strings, %d of them tokenized differently"
               % (len(rows), differ),
               "without ignore_merges"], rows)


# ---- SentencePiece unigram -----------------------------------------------------------------

def train_unigram():
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus(4000, 5)), model_writer=buf, model_type="unigram", vocab_size=1000,
        character_coverage=0.9995, byte_fallback=True, normalization_rule_name="identity",
        remove_extra_whitespaces=False, add_dummy_prefix=True, split_digits=True,
        allow_whitespace_only_pieces=True, user_defined_symbols=["<tool>"], num_threads=1,
        minloglevel=2)
    m = sp_pb2.ModelProto()
    m.ParseFromString(buf.getvalue())
    return m


def unigram(out_dir):
    rng = random.Random(11)
    tests = hand_cases() + [gen_text(rng, rng.randint(1, 12)) for _ in range(3000 - len(hand_cases()))]
    m = train_unigram()
    assert m.trainer_spec.model_type == sp_pb2.TrainerSpec.UNIGRAM
    for name, prefix in (("unigram", True), ("unigram_noprefix", False)):
        mm = sp_pb2.ModelProto()
        mm.CopyFrom(m)
        mm.normalizer_spec.add_dummy_prefix = prefix
        spm_gguf(os.path.join(out_dir, name + ".gguf"), mm, prefix, model="t5", add_bos=False)
        sp = spm.SentencePieceProcessor(model_proto=mm.SerializeToString())
        rows = [(s, sp.encode(s)) for s in tests]
        write_tsv(os.path.join(out_dir, name + ".tsv"),
                  ["SentencePiece unigram oracle (%s): %d pieces, add_dummy_prefix %s" % (versions(), len(mm.pieces), prefix),
                   "Generated by tools/gen_tokenizer_oracle.py --unigram"], rows)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--unigram":
        unigram(sys.argv[2])
        return
    os.makedirs(OUT, exist_ok=True)
    rng = random.Random(7)
    tests = hand_cases() + [gen_text(rng, rng.randint(1, 12)) for _ in range(2000)]
    m = shuffle_pieces(train_spm(), 3)
    spm_gguf(os.path.join(OUT, "spm.gguf"), m, None)
    spm_cases(m, "spm", tests, "BPE model, normal pieces shuffled (ids do not follow scores), "
              "add_dummy_prefix; the GGUF has no add_space_prefix key")
    m2 = sp_pb2.ModelProto()
    m2.CopyFrom(m)
    m2.normalizer_spec.add_dummy_prefix = False
    spm_gguf(os.path.join(OUT, "spm_noprefix.gguf"), m2, False)
    spm_cases(m2, "spm_noprefix", tests, "the same vocabulary, add_dummy_prefix off (GGUF add_space_prefix = false)")
    llama3(tests)


if __name__ == "__main__":
    main()
