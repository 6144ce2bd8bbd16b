#!/bin/sh
# Compiles every .wat module here to its .wasm with wat2wasm (Debian: wabt).
set -e
cd "$(dirname "$0")"
for f in *.wat; do
	wat2wasm "$f" -o "${f%.wat}.wasm"
done
