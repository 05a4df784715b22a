#!/bin/bash
# Applies .clang-format to every tracked C++ and CUDA source (clang-format 14, as Debian 12 ships it).
# --check: change nothing, list the files that differ and exit 1 if any does.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=-i
[[ "${1:-}" == "--check" ]] && mode="--dry-run --Werror"
command -v clang-format >/dev/null || { echo "clang-format is not installed (scripts/setup.sh installs it)" >&2; exit 2; }
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.cu' '*.h')
# shellcheck disable=SC2086
clang-format $mode "${files[@]}"
