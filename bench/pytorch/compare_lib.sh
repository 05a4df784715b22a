# shellcheck shell=bash
# Sourced by bench/compare_pytorch.sh (the MLP) and bench/compare_pytorch_gpt.sh (the GPT): what their
# side-by-side runs of a ddplab scenario against a PyTorch DDP script (bench/pytorch/ddp_*.py) share. The
# caller reads its settings, checks its data and writes its scenario; these functions check the settings,
# find ddplab, make sure its python3 imports torch, run both sides ROUNDS times and print a line per side and
# round and the RESULT line, the best of each side. ddplab's side is read from its per-step records, timed
# as the PyTorch scripts time theirs (bench/pytorch/ddp_harness.py): per step the slowest rank, the first
# WARMUP steps skipped, samples of all ranks over the sum of the remaining step times.
# Call compare_setup, then compare_need_torch, then compare_rounds (compare_epochs, after compare_setup, sizes
# the scenario); errors end the script with a line "NAME: error: ..." on stderr, NAME the script's file name
# without .sh.

cmp_name=$(basename "$0" .sh)

# die MESSAGE...: ends the script with MESSAGE as an error.
die() { echo "$cmp_name: error: $*" >&2; exit 1; }

# compare_setup BUILD_DIR STEPS WARMUP ROUNDS NP BATCH: checks the numbers (from the caller's usage: STEPS,
# WARMUP, ROUNDS, NP, BATCH) and that BUILD_DIR/cli/ddplab runs; the later calls use them.
compare_setup() {
  cmp_steps=$2 cmp_warmup=$3 cmp_rounds=$4 cmp_np=$5 cmp_batch=$6
  [[ $cmp_steps =~ ^[1-9][0-9]*$ ]] || die "STEPS must be a positive integer, got '$cmp_steps'"
  [[ $cmp_warmup =~ ^[0-9]+$ ]] || die "WARMUP must be a non-negative integer, got '$cmp_warmup'"
  [[ $cmp_rounds =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive integer, got '$cmp_rounds'"
  [[ $cmp_np =~ ^[1-9][0-9]*$ ]] || die "NP must be a positive integer, got '$cmp_np'"
  [[ $cmp_batch =~ ^[1-9][0-9]*$ ]] || die "BATCH must be a positive integer, got '$cmp_batch'"
  cmp_ddplab=$1/cli/ddplab
  [[ $cmp_ddplab = /* ]] || cmp_ddplab=$PWD/$cmp_ddplab
  [[ -x $cmp_ddplab ]] || die "$cmp_ddplab: not found or not executable (build the project, or pass BUILD_DIR)"
}

# compare_need_torch PYTHON SCRIPT: checks that the PyTorch SCRIPT is there and that PYTHON imports torch and
# numpy, installing Debian's python3-torch with apt-get when it does not (Debian's lives in /usr/bin/python3,
# not in a pyenv/venv python3 on PATH). compare_rounds runs SCRIPT with PYTHON.
compare_need_torch() {
  cmp_py=$1 cmp_script=$2
  [[ -f $cmp_script ]] || die "$cmp_script: missing"
  [[ -x $cmp_py ]] || die "$cmp_py: no such interpreter (apt-get install python3, or set PYTHON)"
  "$cmp_py" -c 'import torch, numpy' >/dev/null 2>&1 && return 0
  echo "$cmp_name: $cmp_py cannot import torch; installing Debian's python3-torch with apt-get" \
    "(large: several hundred MB of packages, this can take a while)" >&2
  local sudo=
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || die "not root and no sudo: install python3-torch yourself (apt-get install python3-torch)"
    sudo=sudo
  fi
  command -v apt-get >/dev/null || die "no apt-get: install PyTorch 1.13 for $cmp_py yourself"
  if ! $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-torch >&2; then
    $sudo apt-get update >&2 || true
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-torch >&2 ||
      die "apt-get install python3-torch failed"
  fi
  "$cmp_py" -c 'import torch, numpy' || die "$cmp_py still cannot import torch after installing python3-torch"
}

# compare_epochs SAMPLES: the epochs that cover WARMUP + STEPS steps of BATCH per rank on NP ranks when the
# training set holds SAMPLES; fails (status 1, nothing printed) when SAMPLES is too few for one step.
compare_epochs() {
  local per_epoch=$((($1 / cmp_np + cmp_batch - 1) / cmp_batch))
  ((per_epoch > 0)) || return 1
  echo $(((cmp_warmup + cmp_steps + per_epoch - 1) / per_epoch))
}

# ddplab_stats JSON SEQ: steady-state figures of the one run in a `ddplab report --json` file, from its
# per-step records (slowest rank per step, the first WARMUP steps skipped), as a JSON line. SEQ > 0: samples
# are sequences of SEQ tokens, tokens_per_s is added.
ddplab_stats() {
  "$cmp_py" - "$1" "$cmp_warmup" "$2" <<'PY'
import json, sys
runs = json.load(open(sys.argv[1]))
warmup, seq = int(sys.argv[2]), int(sys.argv[3])
if len(runs) != 1 or runs[0]["status"] != "completed":
    sys.exit(f"expected one completed run, got {[(r.get('id'), r.get('status')) for r in runs]}")
r = runs[0]
steps = [s for s in r["steps"] if s["step"] >= warmup]
if not steps:
    sys.exit("no steps after warmup")
t = sum(s["step_s"] for s in steps)
n = sum(s["samples"] for s in steps)
s = r["summary"]
evals = r.get("evaluations") or []
stats = {"samples_per_s": n / t}
if seq > 0:
    stats["tokens_per_s"] = n * seq / t
stats.update({"steps": len(steps), "step_ms_mean": 1e3 * t / len(steps),
              "all_steps_samples_per_s": s["samples_per_s"], "compute_ms": 1e3 * s["compute_s"],
              "comm_ms": 1e3 * s["comm_s"], "exposed_ms": 1e3 * s["exposed_comm_s"],
              "optimizer_ms": 1e3 * s["optimizer_s"], "test_accuracy": s.get("final_accuracy"),
              "final_loss": s.get("final_loss"), "val_loss": evals[-1].get("test_loss") if evals else None})
print(json.dumps(stats))
PY
}

# run_ddplab WORK SCENARIO ROUND SEQ: runs SCENARIO on NP ranks into a store in WORK; prints ddplab_stats'
# line.
run_ddplab() {
  local db=$1/ddplab-$3.db out=$1/ddplab-$3
  if ! "$cmp_ddplab" run "$2" --np "$cmp_np" --db "$db" >"$out.out" 2>&1; then
    cat "$out.out" >&2
    die "ddplab run failed (round $3)"
  fi
  "$cmp_ddplab" report --db "$db" --json -o "$out.json" 2>/dev/null || die "ddplab report failed (round $3)"
  ddplab_stats "$out.json" "$4" || die "cannot read ddplab's per-step records (round $3)"
}

# run_torch WORK ROUND [ARG...]: runs the PyTorch script with --np, --steps, --warmup, --batch and ARGs, its
# output in WORK; prints its PYTORCH_RESULT JSON.
run_torch() {
  local out=$1/torch-$2.out round=$2
  shift 2
  if ! "$cmp_py" "$cmp_script" --np "$cmp_np" --steps "$cmp_steps" --warmup "$cmp_warmup" --batch "$cmp_batch" \
    "$@" >"$out" 2>&1; then
    cat "$out" >&2
    die "PyTorch DDP run failed (round $round)"
  fi
  sed -n 's/^PYTORCH_RESULT //p' "$out" | tail -n 1 | grep . || die "PyTorch printed no result (round $round)"
}

# field JSON KEY: KEY's value in the JSON line, "-" when null or missing, floats with 2 decimals (4 below 1).
field() { "$cmp_py" -c 'import json,sys; v=json.loads(sys.argv[1]).get(sys.argv[2]); print("-" if v is None else (f"{v:.4f}" if isinstance(v, float) and v < 1 else f"{v:.2f}" if isinstance(v, float) else v))' "$1" "$2"; }

# compare_rounds WORK SCENARIO TITLE LABEL DIGITS QUALITY SEQ [TORCH_ARG...]: ROUNDS rounds of ddplab, then
# PyTorch; a line per side and round, then the RESULT line.
#   WORK       the caller's scratch folder (removed at its exit): the runs' stores and outputs go there
#   SCENARIO   ddplab's scenario, one strategy
#   TITLE      ddplab's side in the first line, e.g. "ddplab overlap"
#   LABEL      ddplab's side in the round lines and the RESULT line, e.g. ddplab_overlap
#   DIGITS     decimals of the RESULT line's samples/s
#   QUALITY    the figure that ends a round line: test_accuracy ("test acc") or val_loss ("val loss")
#   SEQ        tokens per sample, for tokens/s; 0 where samples are not sequences
#   TORCH_ARG  the PyTorch script's arguments after compare_setup's --np, --steps, --warmup and --batch
compare_rounds() {
  local work=$1 scenario=$2 title=$3 label=$4 digits=$5 quality=$6 seq=$7 quality_text batch_text r d t
  shift 7
  case $quality in
  test_accuracy) quality_text="test acc" ;;
  val_loss) quality_text="val loss" ;;
  *) die "compare_rounds: QUALITY is test_accuracy or val_loss, got '$quality'" ;;
  esac
  batch_text="$cmp_batch/rank"
  if ((seq > 0)); then batch_text="$cmp_batch x $seq tokens/rank"; fi
  echo "$title vs PyTorch $("$cmp_py" -c 'import torch; print(torch.__version__)') DDP gloo: np=$cmp_np," \
    "batch $batch_text, 1 thread/rank, $cmp_warmup warmup + $cmp_steps timed steps, $cmp_rounds rounds, best of each"
  local padded best_d=0 best_t=0
  padded=$(printf '%-17s' "$label:")
  for ((r = 1; r <= cmp_rounds; r++)); do
    d=$(run_ddplab "$work" "$scenario" "$r" "$seq")
    echo "round $r $padded $(field "$d" samples_per_s) samples/s$(cmp_tokens "$d" "$seq")" \
      " step $(field "$d" step_ms_mean) ms  (run means: compute $(field "$d" compute_ms) ms," \
      "comm $(field "$d" comm_ms) ms, exposed $(field "$d" exposed_ms) ms, optimizer $(field "$d" optimizer_ms) ms)" \
      " $quality_text $(field "$d" "$quality")"
    t=$(run_torch "$work" "$r" "$@")
    echo "round $r pytorch_ddp_gloo: $(field "$t" samples_per_s) samples/s$(cmp_tokens "$t" "$seq")" \
      " step $(field "$t" step_ms_mean) ms  (wall $(field "$t" wall_samples_per_s) samples/s)" \
      " $quality_text $(field "$t" "$quality")"
    best_d=$(cmp_best "$best_d" "$d")
    best_t=$(cmp_best "$best_t" "$t")
  done
  "$cmp_py" -c '
import sys
d, t = float(sys.argv[1]), float(sys.argv[2])
np, label, digits, name = sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6]
if t <= 0: sys.exit(f"{name}: error: PyTorch throughput is zero")
print(f"RESULT {label} np={np} {d:.{digits}f} samples/s | pytorch_ddp_gloo np={np} {t:.{digits}f} samples/s"
      f" | ratio {d / t:.2f}")
' "$best_d" "$best_t" "$cmp_np" "$label" "$digits" "$cmp_name"
}

# cmp_best BEST JSON: the larger of BEST and the JSON line's samples_per_s.
cmp_best() {
  "$cmp_py" -c 'import json,sys; print(max(float(sys.argv[1]), json.loads(sys.argv[2])["samples_per_s"]))' "$1" "$2"
}

# cmp_tokens JSON SEQ: "  X tokens/s" from the JSON line where SEQ > 0, else nothing.
cmp_tokens() { if (($2 > 0)); then echo "  $(field "$1" tokens_per_s) tokens/s"; fi; }
