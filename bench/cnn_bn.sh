#!/bin/bash
# Batch normalisation in the CNN (scenarios/cnn.toml, 4 ranks): what bn = "none" | "local" | "sync" costs
# in step time and gives in test accuracy, at the scenario's per-rank batch, at a small per-rank batch, and
# on label-skewed data (Dirichlet alpha 0.1). Each variant is a whole `ddplab run`, one after another.
# usage: bench/cnn_bn.sh [BUILD_DIR] [DB]   (about 20 minutes on 2 cores)
set -euo pipefail
build=${1:-build/release}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/ddplab-cnn-bn-XXXXXX)
trap 'rm -rf "$work"' EXIT
db=${2:-$work/bn.db}
variant() {  # variant NAME BN BATCH PARTITION
  local f="$work/$1.toml"
  sed -e "s/^name = \"cnn\"/name = \"$1\"/" -e "s/^bn = \"none\"/bn = \"$2\"/" -e "s/^batch_size = 32/batch_size = $3/" \
    "$here/scenarios/cnn.toml" >"$f"
  if [ "$4" = dirichlet ]; then
    sed -i -e 's/^dataset = "fashion-mnist"/dataset = "fashion-mnist"\npartition = "dirichlet"\nalpha = 0.1/' "$f"
  fi
  echo "== $1" >&2
  "$build/cli/ddplab" run "$f" --db "$db" >"$work/$1.out" 2>&1 || { cat "$work/$1.out"; exit 1; }
  tail -1 "$work/$1.out" >&2
}
for bn in none local sync; do variant "b32-$bn" $bn 32 iid; done
for bn in none local sync; do variant "b8-$bn" $bn 8 iid; done
for bn in none local sync; do variant "dirichlet-$bn" $bn 32 dirichlet; done
"$build/cli/ddplab" report --db "$db" --csv | awk -F, '
  NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
  { printf "RESULT %-16s batch %3d  step %6.2f ms  compute %6.2f  comm %5.2f  exposed %5.2f  test acc %.4f\n",
      $col["scenario"], $col["batch_size"], $col["step_s"] * 1e3, $col["compute_s"] * 1e3, $col["comm_s"] * 1e3,
      $col["exposed_comm_s"] * 1e3, $col["final_accuracy"] }'
