#!/bin/bash
# ddplab under a real Slurm (Debian's slurm-wlm): munged, slurmctld and one slurmd, with their own key, ports,
# folders and configuration, started here and stopped at exit. Then, as a cluster user would:
#   srun    srun -n 4 ddplab run trains, stores every strategy on 4 ranks and checks the replicas;
#   sbatch  the documented job script (scripts/slurm/train.sbatch), submitted with sbatch --wait, does the same;
#   scancel a job cancelled while it trains ends with its run stored interrupted, every step kept.
# usage: slurm_checks.sh DDPLAB SCENARIO JOB_SCRIPT CHECK
set -u
ddplab=$1 scenario=$2 job_script=$3 check=$4
for tool in munged mungekey slurmctld slurmd srun sbatch scancel squeue sinfo sqlite3; do
  command -v $tool >/dev/null || { echo "SKIP: $tool is missing (scripts/setup.sh installs slurm-wlm and munge)"; exit 77; }
done
# slurmd 22.05 cannot start without a cgroup filesystem (v1 under a tmpfs, or v2), whatever its plugins; a
# chroot that bind-mounts /sys alone has none.
case $(stat -f -c %T /sys/fs/cgroup 2>/dev/null) in
tmpfs | cgroup2fs) ;;
*) echo "SKIP: no cgroup filesystem at /sys/fs/cgroup, which slurmd 22.05 needs to start"; exit 77 ;;
esac
work=$(mktemp -d /tmp/ddplab-slurm-XXXXXX)
chmod 755 "$work"  # munged wants its socket's folder searchable by all
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
  done
  rm -rf "$work"
}
trap cleanup EXIT
source "$(dirname "$0")/../long_run.sh"
fail() {
  echo "FAIL: $*"
  for f in "$work"/out "$work"/*.out "$work"/slurmctld.log "$work"/slurmd.log; do
    [[ -f $f ]] && { echo "--- $f"; tail -n 40 "$f"; }
  done
  exit 1
}

# --- the cluster: one node, this machine, 4 CPUs (oversubscribed when it has fewer) ---
node=$(hostname -s)
user=$(id -un)
port=$((20000 + ($$ % 5000) * 2))
mkdir -p "$work/state" "$work/spool"
mungekey -c -k "$work/munge.key" || fail "mungekey"
munged -F --key-file="$work/munge.key" --socket="$work/munge.sock" --pid-file="$work/munged.pid" \
  --log-file="$work/munged.log" --seed-file="$work/munge.seed" >"$work/munged.stdout" 2>&1 &
pids+=($!)
cat >"$work/slurm.conf" <<CONF
ClusterName=ddplab-test
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
AuthInfo=socket=$work/munge.sock
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
KillWait=10
MailProg=/bin/true
NodeName=$node NodeAddr=127.0.0.1 CPUs=4 RealMemory=4000 State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=30 State=UP
CONF
export SLURM_CONF=$work/slurm.conf
for _ in $(seq 1 50); do [[ -S $work/munge.sock ]] && break; sleep 0.1; done
[[ -S $work/munge.sock ]] || fail "munged did not start: $(cat "$work/munged.log" 2>/dev/null)"
slurmctld -D -f "$SLURM_CONF" >"$work/slurmctld.stdout" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" -N "$node" >"$work/slurmd.stdout" 2>&1 &
pids+=($!)
up=""
for _ in $(seq 1 300); do
  [[ $(timeout 5 sinfo -h -o %T 2>/dev/null) == idle ]] && { up=1; break; }
  sleep 0.1
done
[[ -n $up ]] || fail "the Slurm node did not come up within 30 s: $(sinfo 2>&1)"

# Every stored run: completed on 4 ranks, and as many as the scenario has strategies.
strategies=$(grep -c '^\[\[strategy\]\]' "$scenario")
check_store() {
  local db=$1
  [[ $(sqlite3 "$db" "select count(*) from runs where status = 'completed' and world_size = 4") == "$strategies" ]] ||
    fail "$db: expected $strategies completed 4-rank runs, got: $(sqlite3 "$db" "select id, strategy, world_size, status, reason from runs")"
}
# Waits until job $1 has left the queue (at most $2 seconds).
wait_gone() {
  for _ in $(seq 1 $(($2 * 10))); do
    [[ -z $(squeue -h -j "$1" 2>/dev/null) ]] && return 0
    sleep 0.1
  done
  return 1
}

export OPENBLAS_NUM_THREADS=1
case $check in
srun)
  srun -n 4 --mpi=pmix --kill-on-bad-exit=1 -t 5 "$ddplab" run "$scenario" --db "$work/srun.db" >"$work/out" 2>&1 ||
    fail "srun exited $?"
  grep -q "params identical on all ranks" "$work/out" || fail "no replica check in the output"
  check_store "$work/srun.db"
  ;;
sbatch)
  DDPLAB=$ddplab sbatch --wait -n 4 -o "$work/job-%j.out" "$job_script" "$scenario" "$work/sbatch.db" >"$work/out" 2>&1 ||
    fail "sbatch --wait exited $?"
  grep -q "params identical on all ranks" "$work"/job-*.out || fail "no replica check in the job's output"
  check_store "$work/sbatch.db"
  ;;
scancel)
  # A run that would not end by itself, cancelled once it has stored steps.
  long_scenario "$scenario" "$work/long.toml"
  db=$work/cancel.db
  job=$(DDPLAB=$ddplab sbatch --parsable -n 4 -o "$work/job-%j.out" "$job_script" "$work/long.toml" "$db") ||
    fail "sbatch exited $?"
  wait_for_steps "$db" || fail "job $job stored no step within 60 s"
  t0=$(mono_ms)
  scancel "$job" || fail "scancel exited $?"
  wait_gone "$job" 30 || fail "job $job still in the queue 30 s after scancel"
  t1=$(mono_ms)
  status=$(sqlite3 "$db" "select status || ': ' || reason from runs where id = 1")
  [[ $status == "interrupted: stopped on request after step "* ]] || fail "run 1 stored as '$status', not interrupted"
  last=${status##*after step }
  last=${last%% *}
  [[ $(sqlite3 "$db" "select max(step) + 1 from steps where run_id = 1") == "$last" ]] ||
    fail "run 1 stopped after step $last but its stored steps end at $(sqlite3 "$db" "select max(step) from steps")"
  [[ $(sqlite3 "$db" "select count(*) from runs") == 1 ]] || fail "a strategy after the cancelled one started"
  leftover=$(pgrep -f "$work/long.toml" || true)
  [[ -z $leftover ]] || fail "processes left after the job ended: $leftover"
  awk -v a="$t0" -v b="$t1" -v s="$status" 'BEGIN { printf "scancel to the job leaving the queue: %.2f s; run 1 %s\n", (b - a) / 1000, s }'
  ;;
*)
  fail "unknown check $check"
  ;;
esac
[[ -n ${SLURM_CHECKS_SHOW:-} ]] && cat "$work"/out "$work"/*.out 2>/dev/null
echo "PASS: $check"
