#!/bin/bash
# `ddplab bench collectives` end to end: every allreduce schedule prints its table with #wrong 0 and its rows
# reach the results store; a corrupted result is counted, named, and makes the command fail.
# usage: bench_checks.sh DDPLAB NP CHECK   (CHECK: correct | wrong)
set -u
ddplab=$1 np=$2 check=$3
work=$(mktemp -d /tmp/ddplab-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
db=$work/results.db
fail() { echo "FAIL: $*"; echo "--- output"; cat "$work/out" "$work/err" 2>/dev/null; exit 1; }
bench=("$ddplab" bench collectives --np "$np" --sizes 4KiB:256KiB --iters 3 --warmup 1 --db "$db")
nsizes=7  # 4, 8, ..., 256 KiB

# The default schedule list, from --help: "(default: native,ring,...)".
schedules=$("$ddplab" bench collectives --help | sed -n 's/.*(default: \(native[^)]*\)).*/\1/p' | tr ',' ' ')
[[ -n $schedules ]] || { echo "FAIL: no default schedule list in --help"; exit 1; }

case $check in
correct)
  "${bench[@]}" >"$work/out" 2>"$work/err" || fail "bench exited $?"
  for s in $schedules; do
    grep -q "^# allreduce  schedule $s " "$work/out" || fail "no table for $s"
    # The table's rows: from its header to the next comment line.
    rows=$(awk -v s="$s" '/^# allreduce  schedule /{on=($4==s); next} /^#/{next} on' "$work/out")
    [[ $(wc -l <<<"$rows") -eq $nsizes ]] || fail "$s: expected $nsizes rows, got: $rows"
    awk '$7 != "0" {exit 1}' <<<"$rows" || fail "$s: #wrong not all 0"
    # time > 0, and algbw = size / time as printed (3 decimals; a slow size on a loaded machine prints 0.000).
    awk '$4 <= 0 {exit 1} { a = $1 / ($4 * 1e3); d = a - $5; if (d < 0) d = -d; if (d > 0.0006 + 0.002 * a) exit 1 }' \
      <<<"$rows" || fail "$s: non-positive time, or algbw that is not size / time"
  done
  "$ddplab" bench results --db "$db" --csv >"$work/csv" || fail "bench results failed"
  nsched=$(wc -w <<<"$schedules")
  [[ $(tail -n +2 "$work/csv" | wc -l) -eq $((nsched * nsizes)) ]] || fail "expected $((nsched * nsizes)) stored rows"
  tail -n +2 "$work/csv" | awk -F, -v np="$np" '$2 != "completed" || $4 != np || $15 != "0" {exit 1}' ||
    fail "stored rows not completed / world $np / #wrong 0"
  ;;
wrong)
  "${bench[@]}" --schedules native,ring --inject-fault wrong:ring:16384 >"$work/out" 2>"$work/err" && fail "bench succeeded"
  grep -q "schedule ring gives 1 wrong elements at size 16384 B" "$work/err" || fail "bad schedule and size not named"
  "$ddplab" bench results --db "$db" --csv >"$work/csv" || fail "bench results failed"
  grep -q ",failed,.*,ring,allreduce,float,16384,4096,.*,1,mpi$" "$work/csv" || fail "wrong row not stored as 1"
  [[ $(grep -c ",0,mpi$" "$work/csv") -eq $((2 * nsizes - 1)) ]] || fail "other rows not 0"
  ;;
*) echo "unknown check $check"; exit 2 ;;
esac
echo "PASS: $check with $np ranks"
