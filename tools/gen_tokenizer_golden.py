#!/usr/bin/env python3
"""Golden token ids for tests/test_tokenizer.c, from the Hugging Face tokenizer that
`transformers` builds from the same GGUF file (AutoTokenizer.from_pretrained(dir, gguf_file=)).

Usage:
  python3 tools/gen_tokenizer_golden.py smollm2 [MODEL.gguf]   -> tests/data/tok_smollm2*.tsv
  python3 tools/gen_tokenizer_golden.py gemma3  [MODEL.gguf]   -> tests/data/tok_gemma3.tsv

File format (tab-separated, one case per line; '#' lines are comments):
  PARSE_SPECIAL <TAB> TEXT <TAB> IDS
TEXT is the UTF-8 bytes with \\\\, \\t, \\n, \\r and \\xNN escapes (every byte outside
printable ASCII is \\xNN); IDS are space-separated (no BOS: add_special_tokens=False).
PARSE_SPECIAL 1: control tokens written in the text are parsed (split_special_tokens=False);
0: they are plain text (split_special_tokens=True).

SmolLM2 ("smollm" pre-tokenizer): transformers 5.x's GGUF converter has no entry for
"smollm" and falls back to the plain GPT-2 ByteLevel regex. The model's own tokenizer.json
(HuggingFaceTB/SmolLM2-135M-Instruct) pre-tokenizes with
  Sequence[Digits(individual_digits=True), ByteLevel(add_prefix_space=False, use_regex=True)]
i.e. every digit is its own piece first. We follow the model: the golden ids come from the
converter's tokenizer with that pre-tokenizer put back, and every case where the plain
converter disagrees is listed in a comment line. The plain converter's ids are exactly the
"gpt2" variant and are written to tok_smollm2_gpt2.tsv; tok_smollm2_llama3.tsv and
tok_smollm2_qwen2.tsv hold the ids for the same vocabulary under the llama3 and qwen2
pre-tokenizers (the converter's own regexes, from vocabulary-only GGUF copies whose
tokenizer.ggml.pre says so). The C test writes the same copies with the gguf writer.
"""
import os
import random
import sys
import tempfile

import gguf
from tokenizers import pre_tokenizers
from transformers import AutoTokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "tests", "data")


def escape(s: str) -> str:
    out = []
    for b in s.encode("utf-8"):
        c = chr(b)
        if c == "\\":
            out.append("\\\\")
        elif c == "\t":
            out.append("\\t")
        elif c == "\n":
            out.append("\\n")
        elif c == "\r":
            out.append("\\r")
        elif 0x20 <= b < 0x7F:
            out.append(c)
        else:
            out.append("\\x%02x" % b)
    return "".join(out)


def hand_cases():
    """(parse_special, text) pairs: the classes the issue names, written by hand."""
    plain = [
        # ASCII words, punctuation, casing
        "Hello world", "Hello, world!", "hello", " hello", "  hello", "HELLO WORLD", "The quick brown fox jumps over the lazy dog.",
        "a", "A", "?", "!!!", "...", "a.b.c", "e.g.", "U.S.A.", "Mr. Smith's car", "x=y+z", "foo_bar-baz",
        "What is the capital of France? Answer in one sentence.", "tokenization", "antidisestablishmentarianism",
        "Supercalifragilisticexpialidocious!", "CamelCaseIdentifierName", "snake_case_identifier_name",
        # contractions, both cases (the llama3/qwen2 patterns fold case, GPT-2's does not)
        "don't", "DON'T", "I'M", "I'm", "i'm", "we'll", "WE'LL", "they're", "THEY'RE", "you've", "YOU'VE", "she'd",
        "it's", "IT'S", "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "o'clock", "rock 'n' roll", "'quoted'",
        "\u017f", "it'\u017f", "don\u2019t", "''", "' s", "'S'",
        # accents and mixed scripts
        "caf\u00e9", "cafe\u0301", "na\u00efve r\u00e9sum\u00e9", "\u00c0 la carte", "Stra\u00dfe", "\u00e6\u00f8\u00e5 \u00c6\u00d8\u00c5",
        "\u0141\u00f3d\u017a", "Ελληνικά γράμματα", "Привет, мир!", "Здравствуйте", "שלום עולם", "مرحبا بالعالم",
        "नमस्ते दुनिया", "สวัสดีชาวโลก", "안녕하세요 세계", "こんにちは世界", "カタカナ", "你好，世界！", "中文字符测试",
        "日本語のテキストです。", "English 和 中文 mixed", "Tiếng Việt có dấu", "Türkçe İstanbul ığ", "ქართული",
        "Ꭰ Ꮳ", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "𝟙𝟚𝟛", "ﬁ ligature", "Ａｂｃ fullwidth",
        # emoji
        "\U0001F44B", "hi \U0001F44B", "\U0001F44B\U0001F3FD", "\U0001F468\u200d\U0001F469\u200d\U0001F467",
        "\U0001F1EB\U0001F1F7", "\u2764\ufe0f", "\U0001F600\U0001F601\U0001F602", "I \u2764 NY", "\u2603 snow",
        # code
        "def f(x):\n    return x * 2\n", "for (int i = 0; i < n; i++) {\n\tsum += a[i];\n}",
        "#include <stdio.h>\nint main(void) { printf(\"%d\\n\", 42); }", "{\"key\": [1, 2, 3], \"b\": null}",
        "<div class=\"x\">text</div>", "SELECT * FROM t WHERE id = 10;", "x->y = &z;", "a != b && c >= d || !e",
        "    indented", "\tindented with tab", "if x:\n\tpass\n\n", "// comment\n/* block */", "https://example.com/path?q=1&r=2",
        "user@example.com", "C:\\Windows\\System32", "$HOME/.cache", "0x1F 0b1010 0o17", "1e-5 3.0e+10",
        # whitespace runs
        " ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\n\n\n", "\r\n", "\r\n\r\n", " \n", "\n ", " \t\n ",
        "a b", "a  b", "a   b", "a\tb", "a\t\tb", "a\nb", "a\n\nb", "a \nb", "a\n b", "a \n b", "a\r\nb",
        "trailing   ", "   leading", "  both  ", "x\n\n\ny", "tab\t\tand  spaces \t mixed", "\u00a0", "a\u00a0b",
        "\u3000", "a\u3000b", "x\u2003y", "\u1680", "\x1c\x1d", "\x04", "a\x13b", "a\x85b", "a\u180eb", "\x0b\x0c", "\u2028\u2029",
        # digits and numbers
        "0", "7", "42", "123", "1234", "12345", "1234567890", "3.14159", "1,000,000", "2024-01-31", "12:34:56",
        "+1 (555) 123-4567", "Room 101", "abc123def", "x2", "v1.2.3", " 1", "  12", "a 1 b 22 c 333",
        "99 bottles", "\u0663\u0664\u0665", "\u00b2\u00b3", "\u2167", "\u00bd", "\u0e51\u0e52", "１２３",
        "123456789012345678901234567890", "3,141,592,653,589,793",
        # special-token text in plain mode
        "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|im_start|>user\nHi<|im_end|>\n",
        "<repo_name>", "<file_sep>", "<|im_start", "im_start|>", "<<|im_end|>>",
        # long-ish
        "The history of natural language processing generally started in the 1950s, although work can be found "
        "from earlier periods. In 1950, Alan Turing published an article titled \"Computing Machinery and "
        "Intelligence\" which proposed what is now called the Turing test as a criterion of intelligence.",
        "-" * 80, "=" * 33, "*" * 17 + " " + "#" * 9, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "ab" * 50, "\u00e9" * 20, "\U0001F600" * 8, "  " * 20 + "x",
        # byte-token look-alikes and markup
        "<0x41>", "<0xFF>", "<unk>", "<s>", "</s>", "<pad>", "[INST]", "<start_of_turn>", "<end_of_turn>",
        "\u2581", "\u2581hello", "a\u2581b",
    ]
    special = [
        "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|im_start|>user\nHi<|im_end|>\n",
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
        "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
        "<|im_start|><|im_end|>", "a<|im_end|>b", " <|im_end|> ", "<|im_start", "<<|im_end|>>", "<|im_end|>>",
        "<repo_name>x<file_sep>y", "<filename>main.c\n<gh_stars>10", "text<|endoftext|>", "<|endoftext|><|endoftext|>",
        "<start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\n", "<bos><eos>", "<pad>x", "<unk>",
        "\n\n<start_of_turn>", "<unused0><unused12>",
    ]
    return [(0, s) for s in plain] + [(1, s) for s in special]


def generated_cases(n, seed):
    """Random mixtures of the classes above (deterministic): catches interactions."""
    rng = random.Random(seed)
    parts = ["the", " The", " cat", "Hello", " world", "don't", " I'M", "caf\u00e9", " na\u00efve", "\u4e2d\u6587",
             "\u65e5\u672c", " \u043f\u0440\u0438\u0432\u0435\u0442", "\U0001F600", "\U0001F44B\U0001F3FD", "42",
             " 2024", "3.14", "1,000", " ", "  ", "\t", "\n", "\n\n", " \n", ".", ",", "!", "?", "(", ")", "{",
             "}", "->", "==", "#", "//", "'s", "'", "\"", "x_1", "foo()", "<|im_end|>", "<|im_start|>", "a",
             "Z", "\u00a0", "\u0645\u0631\u062d\u0628\u0627", "\u0928\u092e\u0938\u094d\u0924\u0947", "\u00bd"]
    out = []
    for i in range(n):
        k = rng.randint(2, 12)
        s = "".join(rng.choice(parts) for _ in range(k))
        out.append((i % 3 == 0 and 1 or 0, s))
    return out


def encode(tok, s, parse_special):
    return tok.encode(s, add_special_tokens=False, split_special_tokens=not parse_special)


def write_tsv(path, header, rows):
    with open(path, "w", encoding="ascii", newline="\n") as f:
        for line in header:
            f.write("# " + line + "\n")
        for ps, s, ids in rows:
            f.write("%d\t%s\t%s\n" % (ps, escape(s), " ".join(str(i) for i in ids)))
    print("wrote", path, len(rows), "cases")


def load(path):
    return AutoTokenizer.from_pretrained(os.path.dirname(os.path.abspath(path)), gguf_file=os.path.basename(path))


def vocab_only_copy(src, dst, pre):
    """A GGUF with only general.architecture and the tokenizer.ggml.* keys, pre replaced."""
    r = gguf.GGUFReader(src)
    w = gguf.GGUFWriter(dst, "llama")
    for name, field in r.fields.items():
        if not name.startswith("tokenizer.ggml."):
            continue
        if name == "tokenizer.ggml.pre":
            w.add_string(name, pre)
            continue
        vtype = field.types[0]
        if vtype == gguf.GGUFValueType.ARRAY:
            w.add_array(name, field.contents())
            continue
        val = field.contents()
        if vtype == gguf.GGUFValueType.STRING:
            w.add_string(name, val)
        elif vtype == gguf.GGUFValueType.BOOL:
            w.add_bool(name, val)
        elif vtype == gguf.GGUFValueType.UINT32:
            w.add_uint32(name, val)
        elif vtype == gguf.GGUFValueType.INT32:
            w.add_int32(name, val)
        else:
            raise SystemExit("unexpected type of %s" % name)
    # keep the element types the C side checks: token_type int32, merges/tokens strings
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def smollm2(model):
    cases = hand_cases() + generated_cases(80, 1234)
    conv = load(model)
    # the model's documented pre-tokenizer (tokenizer.json of SmolLM2): digits first
    real = load(model)
    real.backend_tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    rows, diffs, conv_rows = [], [], []
    for ps, s in cases:
        ids = encode(real, s, ps)
        cids = encode(conv, s, ps)
        rows.append((ps, s, ids))
        conv_rows.append((ps, s, cids))
        if ids != cids:
            diffs.append("converter differs: %s -> %s (model: %s)" % (escape(s), cids, ids))
        if real.decode(ids) != s:   # a byte with no token (0x1d in SmolLM2) is dropped
            diffs.append("no round trip: %s decodes to %s" % (escape(s), escape(real.decode(ids))))
    header = [
        "SmolLM2-135M-Instruct (tokenizer.ggml.pre = smollm): ids from transformers' GGUF tokenizer with the",
        "model's own pre-tokenizer Sequence[Digits(individual_digits=True), ByteLevel] restored;",
        "transformers' converter alone lacks the Digits split (see tok_smollm2_gpt2.tsv for its ids).",
        "Generated by tools/gen_tokenizer_golden.py smollm2; %d of %d cases differ from the plain converter:"
        % (sum(d.startswith("converter") for d in diffs), len(rows)),
    ] + diffs
    write_tsv(os.path.join(DATA, "tok_smollm2.tsv"), header, rows)
    write_tsv(os.path.join(DATA, "tok_smollm2_gpt2.tsv"),
              ["SmolLM2 vocabulary, GPT-2 ByteLevel regex only (tokenizer.ggml.pre = gpt2): transformers' converter",
               "Generated by tools/gen_tokenizer_golden.py smollm2"], conv_rows)
    with tempfile.TemporaryDirectory() as d:
        for pre in ("llama3", "qwen2"):
            p = os.path.join(d, "vocab-%s.gguf" % pre)
            vocab_only_copy(model, p, pre)
            tok = load(p)
            rows = [(ps, s, encode(tok, s, ps)) for ps, s in cases]
            write_tsv(os.path.join(DATA, "tok_smollm2_%s.tsv" % pre),
                      ["SmolLM2 vocabulary with tokenizer.ggml.pre = %s (vocabulary-only GGUF copy):" % pre,
                       "transformers' converter ids. Generated by tools/gen_tokenizer_golden.py smollm2"], rows)


def main():
    which = sys.argv[1] if len(sys.argv) > 1 else "smollm2"
    cache = os.environ.get("STRATA_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "strata")
    if which == "smollm2":
        smollm2(sys.argv[2] if len(sys.argv) > 2 else os.path.join(cache, "SmolLM2-135M-Instruct.Q4_1.gguf"))
    elif which == "gemma3":
        gemma3(sys.argv[2] if len(sys.argv) > 2 else os.path.join(cache, "gemma-3-270m-q4_k_m.gguf"))
    else:
        raise SystemExit("usage: gen_tokenizer_golden.py smollm2|gemma3 [MODEL.gguf]")


# 31 spaces is token 167, 9 spaces 145, 2 spaces 138 (all USER_DEFINED)
GEMMA_OVERRIDES = {" " * 40 + "x": [167, 145, 236781], " " * 33 + "x": [167, 138, 236781]}


def gemma3(model):
    """Gemma 3 (tokenizer.ggml.model "llama"): transformers' gemma_tokenizer rebuilds the merges
    from the vocabulary in file order (the file has none, and its scores do not follow the merge
    order), normalizes " " to U+2581 and has no pre-tokenizer split that survives the
    normalizer, byte fallback on. We take its ids as they are, except where it splits a run of
    spaces longer than Gemma's longest USER_DEFINED space piece (31) by merges: SentencePiece
    (and llama.cpp, and the added-token matching of Gemma's own tokenizer.json) takes the
    longest user-defined piece first (GEMMA_OVERRIDES)."""
    extra = [
        (0, "\n\n\n\n"), (0, "\t\t\t"), (0, " " * 33 + "x"), (0, "\t" * 40), (0, "\u2581\u2581"), (0, "<0xFF>"),
        (0, "[multimodal]"), (0, "<start_of_image>"), (0, "x\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\ny"),
        (0, "    def f(self):\n        return 1\n"), (1, "<start_of_image><end_of_image>"), (1, "<mask>"), (1, "<unused6241>x"),
        (1, "<bos>hello"), (1, "<start_of_turn>user\nWrite a haiku.<end_of_turn>\n<start_of_turn>model\n"),
        (0, "\U0001F44B" * 3), (0, "\U0010FFFD"), (0, "\ue000 private use"), (0, "\U000E0041 tag char"),
    ]
    cases = hand_cases() + extra + generated_cases(80, 4321)
    tok = load(model)
    rows, notes = [], []
    for ps, s in cases:
        ids = encode(tok, s, ps)
        if ps == 0 and s in GEMMA_OVERRIDES:
            notes.append("sentencepiece rule, not the converter's: %s -> %s (converter: %s)"
                         % (escape(s), GEMMA_OVERRIDES[s], ids))
            ids = GEMMA_OVERRIDES[s]
        rows.append((ps, s, ids))
        if tok.decode(ids) != s:
            notes.append("no round trip: %s decodes to %s" % (escape(s), escape(tok.decode(ids))))
    header = [
        "Gemma 3 270M (tokenizer.ggml.model = llama): transformers' GGUF tokenizer (merges rebuilt from the",
        "vocabulary in file order; scores unused). Generated by tools/gen_tokenizer_golden.py gemma3",
    ] + notes
    write_tsv(os.path.join(DATA, "tok_gemma3.tsv"), header, rows)


if __name__ == "__main__":
    main()
