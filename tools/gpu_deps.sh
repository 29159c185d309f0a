#!/bin/sh
# Fill .gpudeps (ignored; carried to the GPU machine) with what `make test-gpu` needs there and
# the machine lacks: jansson's headers and static library, unpacked from Debian's libjansson-dev
# (apt-get download: no root, nothing installed). The Makefile uses the prefix when the system
# has no /usr/include/jansson.h (variable DEPS). The GPU tests link the library without the
# HTTP server, so libmicrohttpd is not needed there.
#   sh tools/gpu_deps.sh [DIR]     (default .gpudeps)
set -e
dir=${1:-.gpudeps}
tmp=$(mktemp -d)
chmod 755 "$tmp"   # apt-get download runs as _apt where it can
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get download libjansson-dev >/dev/null 2>"$tmp/log") || { cat "$tmp/log" >&2; exit 1; }
rm -rf "$dir"
mkdir -p "$dir"
for f in "$tmp"/*.deb; do dpkg -x "$f" "$dir"; done
# the .so link points at libjansson.so.4 of another package: drop it so -ljansson takes the .a
rm -f "$dir"/usr/lib/x86_64-linux-gnu/libjansson.so
rm -rf "$dir"/usr/share
test -f "$dir"/usr/include/jansson.h && test -f "$dir"/usr/lib/x86_64-linux-gnu/libjansson.a
echo "$dir: jansson $(grep -o 'JANSSON_VERSION  *"[^"]*"' "$dir"/usr/include/jansson.h | tr -s ' ' | cut -d' ' -f2) (headers, libjansson.a)"
