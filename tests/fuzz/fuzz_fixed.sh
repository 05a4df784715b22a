#!/bin/bash
# The deterministic fuzzing pass that gates CI: a fixed seed and a fixed number of inputs, from a fresh
# working corpus, so that the same tree always runs the same inputs. Open-ended fuzzing is the study label's.
# usage: fuzz_fixed.sh HARNESS WORK_DIR RUNS ARTIFACT_PREFIX CORPUS_DIR...
set -eu
harness=$1 work=$2 runs=$3 prefix=$4
shift 4
rm -rf "$work"
mkdir -p "$work" "$(dirname "$prefix")"
exec "$harness" -seed=1 -runs="$runs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$prefix" "$work" "$@"
