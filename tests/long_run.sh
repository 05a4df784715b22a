# Sourced by the whole-job checks (tests/mpi/train_checks.sh, tests/slurm/slurm_checks.sh): runs that would
# not end by themselves, to interrupt.

# long_scenario SRC DST [sed options...]: SRC with 1000 epochs and no step limit, written to DST.
long_scenario() {
  local src=$1 dst=$2
  shift 2
  sed -e 's/^epochs = .*/epochs = 1000/' -e 's/^max_steps = .*/max_steps = 0/' "$@" "$src" >"$dst"
}

# wait_for_steps DB: returns 0 once DB holds a step, 1 when none came within 60 s.
wait_for_steps() {
  local steps
  for _ in $(seq 1 600); do
    steps=$(sqlite3 "$1" "select count(*) from steps" 2>/dev/null || echo 0)
    [[ ${steps:-0} -gt 0 ]] && return 0
    sleep 0.1
  done
  return 1
}

# mono_ms: milliseconds on the monotonic clock (/proc/uptime, 10 ms steps). Durations use it, not `date`:
# a VM's wall clock can be stepped while a check runs (CI saw a 5 s jump inside one 7 s test).
mono_ms() {
  local up
  read -r up _ </proc/uptime
  echo $(( ${up%.*} * 1000 + 10#${up#*.} * 10 ))
}
