#!/bin/bash
# Whole-job checks through the ddplab command: training leaves bit-identical parameters on every rank, a
# perturbed rank is caught and named, and a rank that dies ends the job instead of hanging it.
# usage: train_checks.sh DDPLAB SCENARIO NP CHECK
#   (CHECK: identical | resume | interrupt-resume | elastic | perturb | rank-dies | rank-signal | interrupt-TERM | interrupt-INT | interrupt-twice | abandoned | hang | desync | partitioned | straggler | single-rank)
set -u
ddplab=$1 scenario=$2 np=$3 check=$4
work=$(mktemp -d /tmp/ddplab-train-XXXXXX)
trap 'rm -rf "$work"' EXIT
db=$work/results.db
fail() { echo "FAIL: $*"; echo "--- output"; cat "$work/out"; exit 1; }
source "$(dirname "$0")/../long_run.sh"
# Starts the scenario as a run that would not end by itself ($work/long.toml; extra sed expressions may adjust
# it), in the background as $launcher, and returns once it has stored a step.
# The pid of rank $1 of the job running $work/long.toml (empty when none).
rank_pid() {
  local p
  for p in $(pgrep -f "$work/long.toml"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1" && echo "$p"
  done
}
start_long_run() {
  long_scenario "$scenario" "$work/long.toml" "$@"
  "$ddplab" run "$work/long.toml" --np "$np" --db "$db" >"$work/out" 2>&1 &
  launcher=$!
  wait_for_steps "$db" && return
  kill -9 $launcher
  fail "no steps stored within 60 s"
}

case $check in
identical)
  "$ddplab" run "$scenario" --np "$np" --db "$db" >"$work/out" 2>&1 || fail "run exited $?"
  grep -q "params identical on all ranks" "$work/out" || fail "no identity confirmation"
  "$ddplab" report --db "$db" --csv >"$work/csv" || fail "report failed"
  grep -q ",completed," "$work/csv" || fail "run not completed in the store"
  ;;
resume)
  # A rank killed at step 23 of the first strategy (checkpoints every 10 steps), then `--resume`: the run
  # continues from its newest readable checkpoint and the scenario goes on; every stored loss and evaluation, and every rank's final
  # parameters, are bit for bit those of a run that never stopped, with no step stored twice or missing.
  victim=$((np - 1))
  mkdir "$work/straight"
  straight=$work/straight/results.db  # its checkpoints apart from the other run's
  timeout 150 "$ddplab" run "$scenario" --np "$np" --db "$straight" >"$work/out" 2>&1 || fail "the straight run failed"
  timeout 150 "$ddplab" run "$scenario" --np "$np" --db "$db" --inject-fault "exit:$victim:23" >>"$work/out" 2>&1 &&
    fail "the run with a dying rank succeeded"
  [[ $(sqlite3 "$db" "select group_concat(step) from checkpoints") == "10,20" ]] || fail "checkpoints at 10 and 20 not stored"
  # The last rank's file at step 20 damaged (its last byte): that resume fails leaving the run as it was, and
  # the checkpoint is dropped, so the next one continues from step 10.
  f=$(sqlite3 "$db" "select path from checkpoints where step = 20")/rank-$victim.ckpt
  steps_before=$(sqlite3 "$db" "select count(*) from steps")
  printf '\xa5' | dd of="$f" bs=1 seek=$(($(stat -c %s "$f") - 1)) conv=notrunc status=none
  timeout 150 "$ddplab" run "$scenario" --np "$np" --db "$db" --resume >>"$work/out" 2>&1 && fail "a damaged checkpoint was resumed"
  grep -q "checkpoint at step 20 could not be loaded on rank $victim" "$work/out" || fail "the damaged file's rank not named"
  [[ $(sqlite3 "$db" "select status || ' ' || (select count(*) from steps) || ' ' || (select group_concat(step) from checkpoints) from runs where id = 1") == "failed $steps_before 10" ]] ||
    fail "the run was touched, or the damaged checkpoint kept"
  start=$(mono_ms)
  timeout 150 "$ddplab" run "$scenario" --np "$np" --db "$db" --resume >>"$work/out" 2>&1 || fail "the resumed run failed"
  ms=$(( $(mono_ms) - start ))
  grep -q "^ddplab: resuming run 1 (.*, failed) from its checkpoint at step 10" "$work/out" || fail "resume not announced"
  for q in "select id, strategy, status from runs order by id" \
           "select r.strategy, s.step, s.rank, printf('%.17g', s.loss), s.samples from steps s join runs r on r.id = s.run_id order by 1, 2, 3" \
           "select r.strategy, e.step, printf('%.17g %.17g', e.test_loss, e.test_accuracy) from evaluations e join runs r on r.id = e.run_id order by 1, 2"; do
    [[ "$(sqlite3 "$straight" "$q")" == "$(sqlite3 "$db" "$q")" ]] || { sqlite3 "$db" "$q" >>"$work/out"; fail "differs from the straight run: $q"; }
  done
  dup=$(sqlite3 "$db" "select count(*) from (select run_id, step, rank from steps group by 1, 2, 3 having count(*) > 1)")
  [[ $dup -eq 0 ]] || fail "$dup steps stored twice"
  # The final checkpoints' tensors (a file's tail, after its 24-byte header and its JSON index), rank by rank.
  tensors() { local n; n=$(od -An -t u8 -j 16 -N 8 "$1" | tr -d ' '); tail -c +$((24 + n + 1)) "$1"; }
  for run in $(sqlite3 "$straight" "select id from runs"); do
    for ((r = 0; r < np; r++)); do
      a=$(sqlite3 "$straight" "select path from checkpoints where run_id = $run and final")/rank-$r.ckpt
      b=$(sqlite3 "$db" "select path from checkpoints where run_id = $run and final")/rank-$r.ckpt
      [[ -f $a && -f $b && $a != "$b" ]] || fail "no final checkpoints of run $run rank $r apart ($a, $b)"
      cmp -s <(tensors "$a") <(tensors "$b") || fail "run $run rank $r: final parameters differ from the straight run's"
    done
  done
  # What --resume refuses, before starting mpirun: a completed run, and settings that change what is trained.
  "$ddplab" run "$scenario" --np "$np" --db "$db" --resume 1 >"$work/err" 2>&1 && fail "a completed run was resumed"
  grep -q "run 1 is completed" "$work/err" || { cat "$work/err" >>"$work/out"; fail "no reason for refusing a completed run"; }
  echo "a damaged checkpoint at step 20 dropped; resumed at step 10 in $ms ms; losses, evaluations and final parameters identical to the straight run's"
  ;;
elastic)
  # A rank killed at step 33 (checkpoints every 10 steps), then `--resume` on another number of ranks: a new run
  # continues from the step where the new world has seen as many samples, its loss going on from where the
  # old one stopped, and ends with identical parameters on every rank. Its final accuracy is printed beside a
  # straight run's on the new world.
  victim=$((np - 1)) to=$((np == 2 ? 3 : 2))
  mkdir "$work/straight"
  timeout 150 "$ddplab" run "$scenario" --np "$to" --db "$work/straight/results.db" >"$work/out" 2>&1 || fail "the straight run failed"
  timeout 150 "$ddplab" run "$scenario" --np "$np" --db "$db" --inject-fault "exit:$victim:33" >>"$work/out" 2>&1 &&
    fail "the run with a dying rank succeeded"
  timeout 150 "$ddplab" run "$scenario" --np "$to" --db "$db" --resume >>"$work/out" 2>&1 || fail "the elastic resume failed"
  grep -q "^ddplab: resuming run 1 .* at step 30 .* on $to ranks, not its $np: a new run continues it" "$work/out" ||
    fail "elastic resume not announced"
  grep -q "params identical on all ranks" <(tail -n 3 "$work/out") || fail "no identity confirmation after the resume"
  [[ $(sqlite3 "$db" "select world_size || ' ' || status from runs where id = 2") == "$to completed" ]] || fail "no completed run on $to ranks"
  sqlite3 "$db" "select config from runs where id = 2" | grep -q '"resumed_from":{"run":1,"step":30,"world_size":'"$np"'}' ||
    fail "the new run does not record what it continues"
  first=$(sqlite3 "$db" "select min(step) from steps where run_id = 2")
  [[ $first -eq $((30 * np / to)) ]] || fail "the new run starts at step $first, not $((30 * np / to))"
  # Its loss goes on from the old run's: below the midpoint of the old run's first and last.
  read -r l0 l29 l2 < <(sqlite3 -separator ' ' "$db" "select (select avg(loss) from steps where run_id = 1 and step = 0),
    (select avg(loss) from steps where run_id = 1 and step = 29), (select avg(loss) from steps where run_id = 2 and step = $first)")
  awk -v a="$l0" -v b="$l29" -v c="$l2" 'BEGIN { exit !(c < (a + b) / 2) }' ||
    fail "the resumed loss $l2 does not go on from $l29 (it began at $l0)"
  acc=$(sqlite3 "$db" "select test_accuracy from evaluations where run_id = 2 order by step desc limit 1")
  ref=$(sqlite3 "$work/straight/results.db" "select test_accuracy from evaluations order by step desc limit 1")
  echo "$np -> $to ranks at step 30 -> $first: loss $l29 -> $l2; final accuracy $acc (a straight run on $to ranks: $ref)"
  ;;
interrupt-resume)
  # SIGINT mid-run with checkpoints on: the ranks stop after a step, store every step and a checkpoint there,
  # and `--resume` finishes the run from it, every step stored once.
  start_long_run -e 's/^max_steps = .*/max_steps = 600/' -e 's/^checkpoint_every = .*/checkpoint_every = 300/'
  kill -INT $launcher
  wait $launcher
  rc=$?
  [[ $rc -eq 130 ]] || fail "launcher exited $rc after SIGINT, expected 130"
  stopped=$(sqlite3 "$db" "select count(distinct step) from steps where run_id = 1")
  [[ $(sqlite3 "$db" "select max(step) from checkpoints where run_id = 1") == "$stopped" ]] ||
    fail "no checkpoint where the run stopped (step $stopped)"
  timeout 150 "$ddplab" run "$work/long.toml" --np "$np" --db "$db" --resume >>"$work/out" 2>&1 || fail "the resumed run failed"
  [[ $(sqlite3 "$db" "select status from runs where id = 1") == completed ]] || fail "the resumed run did not complete"
  [[ $(sqlite3 "$db" "select count(*) || ' ' || count(distinct step) from steps where run_id = 1") == "$((600 * np)) 600" ]] ||
    fail "not every step stored once"
  echo "stopped after step $stopped with a checkpoint there; resumed to step 600"
  ;;
perturb)
  victim=$((np - 1))
  "$ddplab" run "$scenario" --np "$np" --db "$db" --inject-fault "perturb:$victim" >"$work/out" 2>&1 && fail "run succeeded"
  grep -q "parameters of rank $victim differ from rank 0" "$work/out" || fail "rank $victim not named"
  "$ddplab" report --db "$db" --csv | grep -q ",failed," || fail "run not marked failed"
  ;;
rank-dies)
  victim=$((np - 1))
  start=$(mono_ms)
  timeout 120 "$ddplab" run "$scenario" --np "$np" --db "$db" --inject-fault "exit:$victim:5" >"$work/out" 2>&1
  rc=$?
  [[ $rc -ne 0 ]] || fail "run succeeded"
  [[ $rc -ne 124 ]] || fail "job hung after rank $victim died"
  grep -q "rank $victim step 5" "$work/out" || fail "dying rank not named"
  "$ddplab" report --db "$db" --csv | grep -q ",failed," || fail "run not marked failed"
  echo "job ended $(( ($(mono_ms) - start) / 1000 ))s after start, exit $rc"
  ;;
interrupt-*)
  # SIGTERM or SIGINT to the launcher mid-run (or two SIGINTs): every rank stops within 5 s, the launcher exits
  # 128 + the signal, the run is stored as interrupted, and no process is left. One signal: the ranks stop
  # together after a step and store every step; a second kills the job, keeping the steps flushed so far.
  sig=${check#interrupt-}
  start_long_run
  start=$(mono_ms)
  case $sig in
  twice) kill -INT $launcher; sleep 0.05; kill -INT $launcher; want=130 ;;
  INT) kill -INT $launcher; want=130 ;;
  TERM) kill -TERM $launcher; want=143 ;;
  esac
  wait $launcher
  rc=$?
  ms=$(( $(mono_ms) - start ))
  [[ $rc -eq $want ]] || fail "launcher exited $rc after SIG$sig, expected $want"
  [[ $ms -lt 5000 ]] || fail "the job took $ms ms to stop"
  [[ $(sqlite3 "$db" "select status from runs") == interrupted ]] || fail "run not stored as interrupted"
  kept=$(sqlite3 "$db" "select count(distinct step) from steps")
  [[ $kept -gt 0 ]] || fail "no steps kept"
  if [[ $sig == twice ]]; then  # killed, or stopped on request before the second signal came
    grep -qE "marked interrupted|stored interrupted" "$work/out" || fail "run not reported interrupted"
  else
    # One signal: the ranks stop together after a step, with every step stored.
    grep -q "stored interrupted: stopped on request after step $kept\$" "$work/out" ||
      fail "not stopped on request with its $kept steps stored"
    [[ $(sqlite3 "$db" "select count(*) from steps") -eq $((kept * np)) ]] || fail "not every rank's steps stored"
  fi
  sleep 0.5
  if pgrep -f "$work/long.toml" >/dev/null; then pgrep -af "$work/long.toml"; fail "processes left running"; fi
  echo "$([[ $sig == twice ]] && echo "two SIGINTs" || echo "SIG$sig"): stopped in $ms ms, exit $rc, $kept steps kept"
  ;;
desync)
  # One bit of one rank's parameters flipped after step 5: with train.consistency_every = 4 the check after
  # step 7 (the next one) names that rank, the run fails with that reason; without the fault every check passes.
  victim=$((np - 1))
  sed -e 's/^\[train\]/[train]\nconsistency_every = 4/' "$scenario" >"$work/checked.toml"
  timeout 150 "$ddplab" run "$work/checked.toml" --np "$np" --db "$db" --max-steps 12 >"$work/out" 2>&1 || fail "a run without fault failed"
  grep -q "params identical on all ranks" "$work/out" || fail "no identity confirmation"
  timeout 150 "$ddplab" run "$work/checked.toml" --np "$np" --db "$db" --max-steps 12 --inject-fault "bitflip:$victim:5" \
    >>"$work/out" 2>&1 && fail "the run with a flipped bit succeeded"
  [[ $(sqlite3 "$db" "select status from runs where id = 2") == failed ]] || fail "run not stored as failed"
  reason=$(sqlite3 "$db" "select reason from runs where id = 2")
  echo "reason: $reason" >>"$work/out"
  # Two replicas: no majority, both named with their checksums; three: the odd one out.
  if [[ $np -eq 2 ]]; then
    [[ $reason == "step 7: the replicas' parameters disagree and no checksum is held by a majority (rank "*"; rank "* ]] ||
      fail "two disagreeing replicas were not both named at the next check"
  else
    [[ $reason == "step 7: the parameters of rank $victim differ from the other replicas'"*"replicas diverged"* ]] ||
      fail "the diverged rank was not named at the next check"
  fi
  echo "caught: $reason"
  ;;
rank-signal)
  # Ranks of a hand-run mpirun have no job folder (as under srun): a SIGTERM to one of them, not rank 0,
  # asks the whole job to stop. Every rank stops after the same step, the run is stored interrupted with
  # every step up to it, and no process is left.
  victim=$((np - 1))
  long_scenario "$scenario" "$work/long.toml"
  flags=(--oversubscribe --bind-to none -x OPENBLAS_NUM_THREADS=1)
  [[ $(id -u) == 0 ]] && flags+=(--allow-run-as-root)
  mpirun -np "$np" "${flags[@]}" "$ddplab" run "$work/long.toml" --db "$db" >"$work/out" 2>&1 &
  launcher=$!
  wait_for_steps "$db" || { kill -9 $launcher; fail "no steps stored within 60 s"; }
  pid=$(rank_pid "$victim")
  [[ -n $pid ]] || { kill -9 $launcher; fail "rank $victim not found"; }
  kill -TERM "$pid"
  for _ in $(seq 1 200); do kill -0 $launcher 2>/dev/null || break; sleep 0.1; done
  if kill -0 $launcher 2>/dev/null; then pkill -9 -f "$work/long.toml"; fail "the job went on 20 s after rank $victim's SIGTERM"; fi
  sleep 0.5
  if pgrep -f "$work/long.toml" >/dev/null; then pgrep -af "$work/long.toml"; pkill -9 -f "$work/long.toml"; fail "processes left running"; fi
  status=$(sqlite3 "$db" "select status || ': ' || reason from runs where id = 1")
  [[ $status == "interrupted: stopped on request after step "* ]] || fail "run 1 stored as '$status', not interrupted"
  last=${status##*after step }
  [[ $(sqlite3 "$db" "select count(*) from steps where run_id = 1") == $((${last%% *} * np)) ]] ||
    fail "run 1 stopped after step ${last%% *} but has $(sqlite3 "$db" "select count(*) from steps") step rows for $np ranks"
  ;;
hang)
  # A rank stopped mid-run (SIGSTOP: alive, but it never arrives): the others' watchdogs report it after
  # train.comm_timeout_s = 3 and abort the job within the timeout + 5 s; the run is stored failed with the
  # report as its reason, and no process is left.
  victim=$((np - 1))
  start_long_run -e 's/^\[train\]/[train]\ncomm_timeout_s = 3/'
  pid=$(rank_pid "$victim")
  [[ -n $pid ]] || { kill -9 $launcher; fail "rank $victim not found"; }
  start=$(mono_ms)
  kill -STOP "$pid"
  wait $launcher
  rc=$?
  ms=$(( $(mono_ms) - start ))
  [[ $rc -ne 0 ]] || fail "the job succeeded with rank $victim stopped"
  [[ $ms -lt 8000 ]] || fail "the job took $ms ms to end (timeout 3 s + 5 s)"
  sleep 0.5
  if pgrep -f "$work/long.toml" >/dev/null; then pgrep -af "$work/long.toml"; pkill -9 -f "$work/long.toml"; fail "processes left running"; fi
  [[ $(sqlite3 "$db" "select status from runs") == failed ]] || fail "run not stored as failed"
  reason=$(sqlite3 "$db" "select reason from runs")
  echo "reason: $reason" >>"$work/out"
  [[ $reason == *"not complete after"*"train.comm_timeout_s = 3"* ]] || fail "no watchdog report stored as the reason"
  [[ $reason == *"did not arrive: "*"rank $victim (silent for"* ]] || fail "rank $victim not named in the reason"
  "$ddplab" runs show 1 --db "$db" | grep -q "^reason      rank" || fail "runs show does not give the reason"
  # The flight recorder: the ranks that timed out dumped their last calls; the stopped rank could not.
  "$ddplab" report --flight 1 --db "$db" >"$work/flight" 2>&1 || fail "report --flight failed"
  cat "$work/flight" >>"$work/out"
  grep -q "^rank $victim left no record" "$work/flight" || fail "the stopped rank is not named in the flight report"
  grep -q "^first divergence at call #[0-9]*: " "$work/flight" ||
    fail "no divergence found in the flight report"
  grep -q "IN FLIGHT" "$work/flight" || fail "the call in flight is not shown"
  echo "rank $victim stopped: the job ended in $ms ms, exit $rc; reason: $reason"
  ;;
abandoned)
  # Power loss, as near as one machine gets: SIGKILL to the launcher, mpirun and every rank at once. Nothing
  # marks the run, so it stays stored as running; its writer (rank 0) is gone, so it reads as abandoned, and
  # `ddplab runs prune --status abandoned` removes it.
  start_long_run
  "$ddplab" runs list --db "$db" --status running >"$work/list" 2>&1 || fail "runs list failed"
  [[ $(grep -c " running " "$work/list") -eq 1 ]] || { cat "$work/list"; fail "the live run is not listed running"; }
  kill -9 $launcher
  pkill -9 -f "$work/long.toml"
  wait $launcher 2>/dev/null
  sleep 0.5
  if pgrep -f "$work/long.toml" >/dev/null; then fail "processes left running"; fi
  [[ $(sqlite3 "$db" "select status from runs") == running ]] || fail "the stored status is not running"
  "$ddplab" runs list --db "$db" --status abandoned >"$work/list" 2>&1 || fail "runs list failed"
  cat "$work/list" >>"$work/out"
  [[ $(grep -c " abandoned " "$work/list") -eq 1 ]] || fail "the run is not listed abandoned"
  "$ddplab" report --db "$db" | grep -q "abandoned" || fail "report does not say abandoned"
  "$ddplab" runs prune --db "$db" --status abandoned >>"$work/out" 2>&1 || fail "prune failed"
  [[ $(sqlite3 "$db" "select count(*) from runs") -eq 0 ]] || fail "the abandoned run was not deleted"
  [[ $(sqlite3 "$db" "select count(*) from steps") -eq 0 ]] || fail "its steps were not deleted"
  ;;
partitioned)
  # A fixed split: the table of what each rank holds, the same steps on every rank (no hang), identical
  # parameters, and the split stored with the run.
  timeout 150 "$ddplab" run "$scenario" --np "$np" --db "$db" >"$work/out" 2>&1 || fail "run exited $?"
  [[ $(grep -c "params identical on all ranks" "$work/out") -eq 2 ]] || fail "not both strategies confirmed identical"
  grep -q "^data: dirichlet, alpha 0.3, drop_last: every rank takes [0-9]* samples per epoch" "$work/out" || fail "no split table"
  [[ $(grep -cE "^ +[0-9]+ +[0-9]+ +[0-9]+" "$work/out") -ge $np ]] || fail "not a row per rank"
  per_epoch=$(sed -n 's/.*every rank takes \([0-9]*\) samples per epoch/\1/p' "$work/out" | head -1)
  held_min=$(awk '/^ +rank +holds/ {t=1; next} t && NF > 2 && $1 ~ /^[0-9]+$/ {print $2}' "$work/out" | sort -n | head -1)
  [[ "$per_epoch" == "$held_min" ]] || fail "drop_last takes $per_epoch, the smallest share is $held_min"
  sqlite3 "$db" "select config from runs" | grep -q '"class_histograms"' || fail "split not stored with the run"
  ;;
straggler)
  # Rank 1 computes 3x slower: announced, its parameters still identical, and `report --ranks` names it.
  timeout 150 "$ddplab" run "$scenario" --np "$np" --db "$db" >"$work/out" 2>&1 || fail "run exited $?"
  grep -q "^straggler: rank 1 computes 3x slower" "$work/out" || fail "straggler not announced"
  grep -q "params identical on all ranks" "$work/out" || fail "no identity confirmation"
  "$ddplab" report --db "$db" --ranks 1 --skip-steps 2 >"$work/ranks" || fail "report --ranks failed"
  cat "$work/ranks" >>"$work/out"
  grep -q "^slowest: rank 1," "$work/ranks" || fail "rank 1 not named the slowest"
  [[ $(grep -cE "^ +[0-9]+ +[0-9.]+ " "$work/ranks") -eq $np ]] || fail "not a row per rank"
  "$ddplab" report --db "$db" --ranks 99 >/dev/null 2>&1 && fail "a run that does not exist was reported"
  ;;
optimizers)
  # A registry optimizer with its lr plan, and clipping on a sharded policy: announced, identical on every
  # rank, the loss falls, and the plan is stored with the run.
  timeout 150 "$ddplab" run "$scenario" --np "$np" --db "$db" >"$work/out" 2>&1 || fail "run exited $?"
  "$ddplab" run "${scenario%.toml}-zero1.toml" --np "$np" --db "$db" >>"$work/out" 2>&1 || fail "zero1 run exited $?"
  grep -q "^lamb: lr 0.02 x $np (linear scaling: global batch $((64 * np)) / 64) = .*, warm-up 3 updates, cosine decay over" \
    "$work/out" || fail "no lr plan line"
  [[ $(grep -c "params identical on all ranks" "$work/out") -eq 2 ]] || fail "not both runs confirmed identical"
  sqlite3 "$db" "select config from runs where strategy = 'overlap-ring'" | grep -q '"lr_plan"' || fail "lr plan not stored"
  # Every evaluation keeps its confusion matrix: the per-class report of the last one.
  "$ddplab" report --db "$db" --classes 1 >"$work/classes" || fail "report --classes failed"
  cat "$work/classes" >>"$work/out"
  grep -q "^macro " "$work/classes" && grep -q "^weakest: class " "$work/classes" || fail "no per-class table"
  [[ $("$ddplab" report --db "$db" --classes 1 --csv | wc -l) -eq 11 ]] || fail "not a CSV row per class"
  for run in 1 2; do
    first=$(sqlite3 "$db" "select avg(loss) from steps where run_id = $run and step < 3")
    last=$(sqlite3 "$db" "select avg(loss) from steps where run_id = $run and step >= (select max(step) - 2 from steps where run_id = $run)")
    awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < 0.9 * a) }' || fail "run $run: loss $first -> $last did not fall"
  done
  ;;
join)
  # Ranks of unequal shares each take their own: the table says so, the job ends (no hang), parameters are
  # identical, and per epoch each rank's stored samples are its share, the smallest rank's last steps empty.
  timeout 150 "$ddplab" run "$scenario" --np "$np" --db "$db" >"$work/out" 2>&1 || fail "run exited $?"
  grep -q "^data: quantity, skew 0.3, join: each rank takes what it holds" "$work/out" || fail "no join table"
  [[ $(grep -c "params identical on all ranks" "$work/out") -eq 2 ]] || fail "not both strategies confirmed identical"
  held=$(awk '/^ +rank +holds/ {t=1; next} t && NF > 2 && $1 ~ /^[0-9]+$/ {print $1, $2}' "$work/out" | head -n "$np")
  per_epoch=$(sed -n 's/.*join: each rank takes what it holds, \([0-9]*\) steps.*/\1/p' "$work/out" | head -1)
  while read -r r h; do
    took=$(sqlite3 "$db" "select sum(samples) from steps where run_id = 1 and rank = $r and step < $per_epoch")
    [[ "$took" == "$h" ]] || fail "rank $r took $took samples in epoch 1, it holds $h"
  done <<<"$held"
  smallest=$(awk '{print $2, $1}' <<<"$held" | sort -n | head -1 | cut -d' ' -f2)
  last=$(sqlite3 "$db" "select samples from steps where run_id = 1 and rank = $smallest and step = $per_epoch - 1")
  [[ "$last" == "0" ]] || fail "rank $smallest (the smallest share) still had $last samples at the epoch's last step"
  ;;
balance)
  # Both ways of balancing a skewed split: announced, identical parameters, and a loss that falls.
  for s in "$scenario" "${scenario%.toml}-resample.toml"; do
    timeout 150 "$ddplab" run "$s" --np "$np" --db "$db" >>"$work/out" 2>&1 || fail "$s: run exited $?"
  done
  grep -q "^data: dirichlet, alpha 0.3, balance class_weighted, pad:" "$work/out" || fail "class_weighted not announced"
  grep -q "^data: dirichlet, alpha 0.3, balance resample, pad:" "$work/out" || fail "resample not announced"
  [[ $(grep -c "params identical on all ranks" "$work/out") -eq 2 ]] || fail "not both runs confirmed identical"
  for run in 1 2; do
    first=$(sqlite3 "$db" "select avg(loss) from steps where run_id = $run and step < 3")
    last=$(sqlite3 "$db" "select avg(loss) from steps where run_id = $run and step >= (select max(step) - 2 from steps where run_id = $run)")
    awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < 0.9 * a) }' || fail "run $run: loss $first -> $last did not fall"
  done
  ;;
single-rank)
  # The job's global batch on one rank: the same sequences each step (a DistributedSampler deals one
  # permutation), so every step's loss, the ranks' mean, matches within 1e-5 relative; only the order of the
  # sums differs. Both runs identical on their ranks besides.
  "$ddplab" run "$scenario" --np "$np" --db "$db" >"$work/out" 2>&1 || fail "the run on $np ranks exited $?"
  batch=$(sed -n 's/^batch_size = //p' "$scenario")
  "$ddplab" run "$scenario" --np 1 --batch-size $((batch * np)) --db "$work/one.db" >>"$work/out" 2>&1 ||
    fail "the run on 1 rank exited $?"
  q="select step, printf('%.17g', avg(loss)) from steps group by step order by step"
  sqlite3 -separator ' ' "$db" "$q" >"$work/many"
  sqlite3 -separator ' ' "$work/one.db" "$q" >"$work/one"
  [[ $(wc -l <"$work/many") -gt 5 && $(wc -l <"$work/many") == $(wc -l <"$work/one") ]] ||
    fail "$(wc -l <"$work/many") steps on $np ranks, $(wc -l <"$work/one") on 1"
  worst=$(paste -d ' ' "$work/many" "$work/one" |
    awk '{ d = ($2 - $4) / $4; if (d < 0) d = -d; if (d > m) m = d } END { printf "%.3g", m }')
  echo "largest relative difference of a step's loss: $worst" | tee -a "$work/out"
  awk -v w="$worst" 'BEGIN { exit !(w <= 1e-5) }' || fail "a step's loss differs by $worst (relative) from the single rank's"
  ;;
*) echo "unknown check $check"; exit 2 ;;
esac
echo "PASS: $check with $np ranks"
