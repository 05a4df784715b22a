#!/bin/bash
# Every tracked C++ source is as clang-format (.clang-format) writes it. Skipped outside a git checkout.
cd "$(dirname "$0")/../.."
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || { echo "not a git checkout: skipped"; exit 77; }
exec scripts/format.sh --check
