#!/bin/bash
# `ddplab` exits by the kind of error that ended it (core/error.hpp): 2 for bad input (a scenario's field, with
# file:line:col; an option's value), 1 for a fault of the run (a rank that died, replicas that disagree), through
# the mpirun launcher as well: bad input a rank finds (a missing data file) comes back as 2 too. Two ranks, a few
# steps of synthetic data.
# usage: exit_codes.sh DDPLAB SCENARIO_DIR
set -u
ddplab=$1 scenarios=$2
work=$(mktemp -d /tmp/ddplab-exit-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; echo "--- output"; cat "$work/out" "$work/err" 2>/dev/null; exit 1; }
# expect CODE WHAT -- COMMAND...: runs COMMAND (output in $work/out, $work/err) and checks its exit code.
expect() {
  local want=$1 what=$2
  shift 3
  "$@" >"$work/out" 2>"$work/err"
  local rc=$?
  [[ $rc -eq $want ]] || fail "$what: exited $rc, expected $want"
}
export OPENBLAS_NUM_THREADS=1
small=$scenarios/ci-small.toml

# Bad input: a scenario's field, refused with its position before mpirun starts.
sed 's/^schedule = .*/schedule = "tree"/' "$small" >"$work/bad.toml"
line=$(grep -n '^schedule = "tree"' "$work/bad.toml" | head -1 | cut -d: -f1)
[[ -n $line ]] || fail "ci-small.toml has no schedule line to break"
expect 2 "a scenario with a bad field" -- "$ddplab" run "$work/bad.toml" --np 2 --db "$work/a.db"
grep -q "^error: .*bad.toml:$line:12: strategy\[0\].schedule must be one of" "$work/err" || fail "no file:line:col"
grep -q mpirun "$work/err" && fail "mpirun started for a bad scenario"
expect 2 "a bad scenario under simulate" -- "$ddplab" simulate "$work/bad.toml" --world 2 --db "$work/a.db"

# Bad input: option values, refused by the command line (CLI11) and by ddplab's own checks.
expect 2 "--max-steps -1" -- "$ddplab" run "$small" --max-steps -1 --db "$work/a.db"
grep -q -- '--max-steps: must be >= 0, got -1' "$work/err" || fail "--max-steps -1 not explained"
expect 2 "--world 2,4,...,1000" -- "$ddplab" simulate "$small" --world 2,4,...,1000 --db "$work/a.db"
grep -q -- '^error: --world: world sizes' "$work/err" || fail "--world not explained"
expect 2 "--resume of a run not in the store" -- "$ddplab" run "$small" --np 2 --resume 9999 --db "$work/a.db"
expect 2 "--inject-fault exit:one:3" -- "$ddplab" run "$small" --np 2 --inject-fault exit:one:3 --db "$work/a.db"
grep -q -- '^error: --inject-fault: expected exit:RANK:STEP, perturb:RANK or bitflip:RANK:STEP' "$work/err" ||
  fail "a malformed --inject-fault not explained"
grep -q mpirun "$work/err" && fail "mpirun started for a malformed --inject-fault"
expect 2 "--inject-fault on a rank the job lacks" -- "$ddplab" run "$small" --np 2 --inject-fault perturb:2 --db "$work/a.db"
grep -q -- '--inject-fault perturb:2: rank 2 is not one of the job.s 2 ranks' "$work/err" || fail "a rank outside the job not named"

# A run fault: a rank exits mid-run; the launcher exits 1, the run is stored failed.
expect 1 "a rank that died" -- timeout 120 "$ddplab" run "$small" --np 2 --max-steps 6 --db "$work/f.db" --inject-fault exit:1:3
grep -q "ddplab: run 1 (baseline) marked failed" "$work/err" || fail "the run was not marked failed"
# A run fault: replicas that end apart fail the final check.
expect 1 "replicas that disagree" -- timeout 120 "$ddplab" run "$small" --np 2 --max-steps 3 --db "$work/p.db" --inject-fault perturb:1
grep -q "differ" "$work/err" "$work/out" || fail "the final check's failure not named"

# Bad input found by the ranks themselves (the launcher cannot see a data file is missing): 2 through mpirun.
sed 's|^dataset = "synthetic".*|dataset = "fashion-mnist"\npath = "'"$work"'/no-such-folder"|' "$small" >"$work/nodata.toml"
expect 2 "a missing data file" -- timeout 120 "$ddplab" run "$work/nodata.toml" --np 2 --max-steps 2 --db "$work/n.db"
grep -q "error: rank [01]: $work/no-such-folder/.*: cannot open" "$work/err" || fail "the missing file not named"
echo "exit codes: bad input 2, run faults 1, through the launcher too"
