#!/bin/sh
# Builds the Python ranking guest into a wasm component (world `ranker`).
# Usage: ./build.sh [OUTPUT.wasm]   (default /tmp/python-ranker.wasm)
# Needs: pip install componentize-py==0.25.1
set -eu
cd "$(dirname "$0")"
out="${1:-/tmp/python-ranker.wasm}"
componentize-py -d ../../wit/since_v0.1.0 -w ranker componentize -p . app -o "$out"
echo "built $out"
