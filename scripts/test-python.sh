#!/usr/bin/env bash
# The Python half of the test command (README "Run it": `cargo test --workspace && bash
# scripts/test-python.sh`, which .ci/run runs): the package built from this checkout into a
# virtual environment under target/, with its tests against the CLI (built by cargo test) and
# on a local Dask cluster of two worker processes.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/py-venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
pip=("$venv/bin/pip" install -q --disable-pip-version-check)
"${pip[@]}" "maturin>=1.5,<2" "pandas>=2,<4" "pyarrow>=14" "dask[distributed]>=2024.1" "pytest>=7"
# The dev profile has the test profile's settings, so the extension reuses what cargo test
# built (maturin runs from the virtual environment's bin/).
PATH="$PWD/$venv/bin:$PATH" MATURIN_PEP517_ARGS="--profile dev" \
  "${pip[@]}" --no-build-isolation --no-deps --force-reinstall ./crates/schedkit-py
SCHEDKIT_BIN=target/debug/schedkit "$venv/bin/python" -m pytest -q -p no:cacheprovider crates/schedkit-py/tests
