#!/usr/bin/env python3
"""Write a vocabulary-only GGUF: every key/value of MODEL.gguf (tokenizer, chat template,
hyperparameters) and no tensors. `strata synth --tokenizer` and `strata tokenize` read it; it
carries a real model's tokenizer where the model itself is too big to travel (bench/server_gpu.sh).

usage: python3 tools/vocab_only.py MODEL.gguf OUT.gguf
"""
import sys
import gguf


def main():
    src, dst = sys.argv[1], sys.argv[2]
    r = gguf.GGUFReader(src)
    arch = r.fields["general.architecture"].contents()
    w = gguf.GGUFWriter(dst, arch)
    for name, f in r.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue   # the writer writes these itself
        if f.types[0] == gguf.GGUFValueType.ARRAY:
            w.add_array(name, f.contents())
        else:
            w.add_key_value(name, f.contents(), f.types[0])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
