#!/bin/bash
# The prepared device check (docs/gpu.md): builds the GPU-only target set, runs every CUDA op and codec against
# the reference, NCCL with one rank through every schedule, the PlanExecutor on the GPU (NCCL and host
# staging) against the reference, one epoch of the default MLP on the GPU through the PlanExecutor
# (accuracy within 0.5 points of the stored CPU run at the same seed), GEMM TFLOP/s at the model's
# shapes against cuBLAS's best, and PyTorch on the same MLP and batch. Writes summary.json and logs to
# OUTDIR and prints a short table last.
#
# usage: scripts/gpu-check.sh [--dry-run] OUTDIR
#   --dry-run   configure and build only, then stop (what can be checked without a GPU)
# Environment: DDPLAB_GPU_BUNDLE (default .gpu-bundle, from scripts/gpu-bundle.sh),
# CUDA_ARCH (default: the device's, from nvidia-smi; else 90),
# JOBS (default: all cores), PYTHON (default python3), STEP_TIMEOUT (seconds per part, default 120),
# NCCL_ROOT (default: the toolkit's, the system's, or PyTorch's nvidia-nccl wheel).
set -u
usage() { echo "usage: $0 [--dry-run] OUTDIR" >&2; exit 2; }
die() { echo "gpu-check: $*" >&2; exit "${code:-1}"; }

dry=0 out=""
for a in "$@"; do
  case "$a" in
    --dry-run) dry=1 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    -*) echo "gpu-check: unknown option $a" >&2; usage ;;
    *) [ -z "$out" ] || usage; out=$a ;;
  esac
done
[ -n "$out" ] || usage
mkdir -p "$out" 2>/dev/null && [ -w "$out" ] && touch "$out/.write-test" 2>/dev/null ||
  code=2 die "cannot write to output folder '$out'"
rm -f "$out/.write-test"
out=$(cd "$out" && pwd)
# A rerun into the same folder must not show an earlier run's results: remove what this script writes.
rm -f "$out"/{machine,steps}.txt "$out"/summary.json "$out"/{build,cuda_ops,cuda_layers,cuda_codecs,cuda_optimizers,nccl,nccl_watchdog,plan_executor}.{log,json} \
  "$out"/gemm.{log,json} "$out"/train_cuda{,_direct,_fp16,_tf32,_b256,_b1024}.{log,json} "$out"/pytorch{,_sweep}.log \
  "$out"/{memcheck,memcheck_codecs,racecheck}.log

root=$(cd "$(dirname "$0")/.." && pwd)
bundle=${DDPLAB_GPU_BUNDLE:-$root/.gpu-bundle}
[ -d "$bundle" ] && bundle=$(cd "$bundle" && pwd)  # CMake resolves relative paths against the build folder
build=${DDPLAB_GPU_BUILD:-$root/build/gpu-only}
py=${PYTHON:-python3}
[ -d "$bundle" ] || code=2 die "no bundle at $bundle: run scripts/gpu-bundle.sh on a Debian 12 machine first"
command -v cmake >/dev/null || code=2 die "cmake not found"

step() { printf '== %s\n' "$*"; }
# What the machine has, first: when the build fails, this says why in the same call.
{ echo "date: $(date -u)"; nvidia-smi -L 2>&1; nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm --format=csv 2>&1
  echo "nvcc: $(command -v nvcc) $(nvcc --version 2>&1 | tail -1)"; echo "cmake: $(cmake --version | head -1)"
  echo "c++: $(${CXX:-c++} --version 2>&1 | head -1)"; echo "cores: $(nproc)"
  "$py" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())' 2>&1
  ls /usr/local/cuda/lib64 2>&1 | grep -E "cublas|nccl|cudart" | head; } >"$out/machine.txt" 2>&1
# NCCL: the toolkit's or the system's when present, else the one PyTorch's wheels carry (nvidia-nccl-cu13,
# which ships libnccl.so.2 but no libnccl.so); its header from the wheel, else the bundle's.
if [ -z "${NCCL_ROOT:-}" ] && [ ! -e /usr/local/cuda/include/nccl.h ] && ! ldconfig -p 2>/dev/null | grep -q 'libnccl\.so '; then
  whl=$("$py" -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null)
  if [ -n "$whl" ] && [ -e "$whl/lib/libnccl.so.2" ]; then
    nr=$build/nccl-root; mkdir -p "$nr/lib" "$nr/include"
    ln -sf "$whl/lib/libnccl.so.2" "$nr/lib/libnccl.so.2"; ln -sf "$whl/lib/libnccl.so.2" "$nr/lib/libnccl.so"
    if [ -e "$whl/include/nccl.h" ]; then cp "$whl"/include/*.h "$nr/include/"; else cp "$bundle"/nccl/include/*.h "$nr/include/"; fi
    export NCCL_ROOT=$nr LD_LIBRARY_PATH=$nr/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    echo "nccl: from $whl" >>"$out/machine.txt"
  fi
fi
# The device's own architecture (9.0 -> 90), so that an A100 or L40S gets kernels too; 90 when unknown.
arch=${CUDA_ARCH:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')}
case "$arch" in ''|*[!0-9]*) arch=90 ;; esac
echo "cuda architecture: $arch" >>"$out/machine.txt"
step "configure + build for sm_$arch (log: $out/build.log)"
gen=""; command -v ninja >/dev/null && gen="-G Ninja"
{ cmake -S "$root" -B "$build" $gen -DCMAKE_BUILD_TYPE=Release -DDDPLAB_GPU_ONLY=ON \
    -DDDPLAB_BUNDLE_DIR="$bundle" -DCMAKE_CUDA_ARCHITECTURES="$arch" &&
  cmake --build "$build" -j "${JOBS:-$(nproc)}"; } >"$out/build.log" 2>&1 ||
  { tail -30 "$out/build.log" >&2; die "build failed (see $out/build.log)"; }
if [ $dry = 1 ]; then step "dry run: built, not run"; exit 0; fi

train=$build/bench/gpu/ddplab-gpu-train
if ! why=$("$train" --probe); then
  code=3 die "$why; nothing run on a device (the build is in $build)"
fi
data=$bundle/fashion-mnist
fail=0
# Each part runs under its own time limit (STEP_TIMEOUT, default 120 s), so one hang costs one part, not the
# call; a part that fails or times out is named in steps.txt and its log's tail is printed.
part() {  # part NAME LOG command...
  local name=$1 log=$2; shift 2
  local t0=$SECONDS; timeout -k 5 "${STEP_TIMEOUT:-120}" "$@" >"$log" 2>&1; local rc=$?
  printf '%-16s rc %-3s %4ss\n' "$name" "$rc" "$((SECONDS - t0))" >>"$out/steps.txt"
  if [ $rc -ne 0 ]; then
    fail=1; { [ $rc -eq 124 ] || [ $rc -eq 137 ]; } && echo "  $name: timed out after ${STEP_TIMEOUT:-120} s" >&2
    echo "  $name failed (rc $rc); last lines of $log:" >&2; tail -15 "$log" | sed 's/^/    /' >&2
  fi
}
step "CUDA ops vs reference"
part cuda_ops "$out/cuda_ops.log" "$build/tests/gpu/test_cuda_ops" --gtest_output="json:$out/cuda_ops.json"
step "CNN kernels and a CNN step vs reference"
part cuda_layers "$out/cuda_layers.log" "$build/tests/gpu/test_cuda_layers" --gtest_output="json:$out/cuda_layers.json"
step "codecs on the GPU vs the host"
part cuda_codecs "$out/cuda_codecs.log" "$build/tests/gpu/test_cuda_codecs" --gtest_output="json:$out/cuda_codecs.json"
step "optimizers on the GPU vs the host"
part cuda_optimizers "$out/cuda_optimizers.log" "$build/tests/gpu/test_cuda_optimizers" \
  --gtest_output="json:$out/cuda_optimizers.json"
step "NCCL, one rank, every schedule"
part nccl "$out/nccl.log" "$build/tests/gpu/test_nccl" --gtest_output="json:$out/nccl.json"
step "NCCL watchdog: a stuck init, a failed receive, a collective behind held compute"
STEP_TIMEOUT=60 part nccl_watchdog "$out/nccl_watchdog.log" "$build/tests/gpu/test_nccl_watchdog" \
  --gtest_output="json:$out/nccl_watchdog.json"
step "PlanExecutor on the GPU (NCCL and staged) vs reference"
part plan_executor "$out/plan_executor.log" "$build/tests/gpu/test_gpu_plan_executor" --gtest_output="json:$out/plan_executor.json"
step "GEMM TFLOP/s"
part gemm "$out/gemm.log" sh -c '"$1" >"$2"' gemm "$build/bench/gpu/ddplab-gemm-bench" "$out/gemm.json"
step "train one epoch on the GPU (fp32 through the PlanExecutor, bare loop, overlap+fp16, TF32)"
part train_cuda "$out/train_cuda.log" "$train" --backend cuda --data "$data" --json "$out/train_cuda.json"
part train_direct "$out/train_cuda_direct.log" "$train" --backend cuda --direct --data "$data" --json "$out/train_cuda_direct.json"
part train_fp16 "$out/train_cuda_fp16.log" "$train" --backend cuda --policy overlap --codec fp16 --data "$data" \
  --json "$out/train_cuda_fp16.json"
part train_tf32 "$out/train_cuda_tf32.log" "$train" --backend cuda --tf32 --data "$data" --json "$out/train_cuda_tf32.json"
step "PyTorch on the same MLP and batch (eager, and the step in a CUDA graph)"
part pytorch "$out/pytorch.log" "$py" "$root/bench/pytorch/ddp_mlp_gpu.py" --data "$data" --graph
step "larger batches, 4 epochs each: ddplab and PyTorch"
for b in 256 1024; do
  part "train_b$b" "$out/train_cuda_b$b.log" "$train" --backend cuda --batch $b --epochs 4 --data "$data" \
    --json "$out/train_cuda_b$b.json"
done
part pytorch_sweep "$out/pytorch_sweep.log" "$py" "$root/bench/pytorch/ddp_mlp_gpu.py" --data "$data" --graph \
  --batches 256,1024 --epochs 4
step "compute-sanitizer: memcheck on the op and codec tests, racecheck on the shared-memory kernels"
san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [ -x "$san" ]; then
  STEP_TIMEOUT=${SANITIZER_TIMEOUT:-180} part memcheck "$out/memcheck.log" "$san" --tool memcheck --error-exitcode 9 \
    "$build/tests/gpu/test_cuda_ops"
  STEP_TIMEOUT=${SANITIZER_TIMEOUT:-180} part memcheck_codecs "$out/memcheck_codecs.log" "$san" --tool memcheck \
    --error-exitcode 9 "$build/tests/gpu/test_cuda_codecs"
  STEP_TIMEOUT=${SANITIZER_TIMEOUT:-180} part racecheck "$out/racecheck.log" "$san" --tool racecheck --error-exitcode 9 \
    "$build/tests/gpu/test_cuda_ops" --gtest_filter='CudaVsReference.BiasGrad*:CudaVsReference.Softmax*'
else
  echo "  compute-sanitizer not found: memcheck and racecheck not run" | tee -a "$out/steps.txt"
fi

"$py" - "$out" "$root/bench/gpu/cpu_reference.json" "$fail" <<'PY'
import json, os, sys
out, cpu_path, fail = sys.argv[1], sys.argv[2], int(sys.argv[3])
def load(name):
    try:
        with open(os.path.join(out, name)) as f: return json.load(f)
    except Exception: return None
def gtest(name):
    j = load(name)
    if not j: return {"passed": 0, "failed": 1, "skipped": 0}
    cases = [t for s in j.get("testsuites", []) for t in s.get("testsuite", [])]
    skipped = sum(1 for t in cases if t.get("result") == "SKIPPED")
    failed = sum(1 for t in cases if "failures" in t)
    return {"passed": len(cases) - skipped - failed, "failed": failed, "skipped": skipped}
torch_runs = {}  # (batch, mode) -> PyTorch's result
for log in ("pytorch.log", "pytorch_sweep.log"):
    try:
        for line in open(os.path.join(out, log)):
            if line.startswith("PYTORCH_RESULT "):
                r = json.loads(line.split(" ", 1)[1]); torch_runs[(r["batch"], r.get("mode", "eager"))] = r
    except OSError: pass
py = torch_runs.get((64, "eager"))
cpu = json.load(open(cpu_path))
cuda, tf32, gemm = load("train_cuda.json"), load("train_cuda_tf32.json"), load("gemm.json")
direct, fp16 = load("train_cuda_direct.json"), load("train_cuda_fp16.json")
# The GoogleTest parts: summary key (its JSON file's name) and the table's title.
tests = [("cuda_ops", "CUDA ops vs reference"), ("cuda_layers", "CNN kernels vs reference"),
         ("cuda_codecs", "codecs GPU vs host"), ("cuda_optimizers", "optimizers GPU vs host"), ("nccl", "NCCL 1 rank, schedules"),
         ("nccl_watchdog", "NCCL watchdog"), ("plan_executor", "PlanExecutor GPU vs reference")]
s = {k: gtest(k + ".json") for k, _ in tests}
s.update({"cpu_reference": cpu, "train_cuda": cuda, "train_cuda_direct": direct, "train_cuda_fp16": fp16,
          "train_cuda_tf32": tf32, "gemm": gemm, "pytorch": py})
ok = fail == 0 and all(s[k]["failed"] == 0 for k, _ in tests)
if cuda:
    s["accuracy_delta_points"] = round(100 * (cuda["test_accuracy"] - cpu["test_accuracy"]), 2)
    ok = ok and abs(s["accuracy_delta_points"]) <= 0.5
else: ok = False
if cuda and py: s["throughput_ratio_vs_pytorch"] = round(cuda["samples_per_s"] / py["samples_per_s"], 2)
# Steady state (after each program's warm-up steps), per batch: ddplab against PyTorch eager and graphed.
sweep = []
for b, d in ((64, cuda), (256, load("train_cuda_b256.json")), (1024, load("train_cuda_b1024.json"))):
    e, g = torch_runs.get((b, "eager")), torch_runs.get((b, "graph"))
    row = {"batch": b, "ddplab": d and d.get("steady_samples_per_s"), "pytorch_eager": e and e.get("steady_samples_per_s"),
           "pytorch_graph": g and g.get("steady_samples_per_s")}
    for k in ("pytorch_eager", "pytorch_graph"):
        if row["ddplab"] and row[k]: row["ratio_vs_" + k] = round(row["ddplab"] / row[k], 2)
    sweep.append(row)
s["steady_throughput"] = sweep
s["pytorch_runs"] = list(torch_runs.values())
# Every part's exit status and time (steps.txt), the sanitizers' verdicts, and the machine as recorded.
parts, notes = {}, []
try:
    for line in open(os.path.join(out, "steps.txt")):
        f = line.split()
        if len(f) >= 4 and f[1] == "rc": parts[f[0]] = {"rc": int(f[2]), "seconds": int(f[3].rstrip("s"))}
        elif line.strip(): notes.append(line.strip())
except OSError: pass
s["parts"] = parts
s["sanitizer"] = {k: ("clean" if parts[k]["rc"] == 0 else "rc %d" % parts[k]["rc"]) if k in parts else "not run"
                  for k in ("memcheck", "memcheck_codecs", "racecheck")}
if notes: s["notes"] = notes
wd = load("nccl_watchdog.json")  # what each watchdog case said, and after how long (gtest properties)
if wd:
    s["nccl_watchdog_cases"] = [{"test": t.get("name"), "message": t.get("message"), "waited_s": t.get("waited_s")}
                                for suite in wd.get("testsuites", []) for t in suite.get("testsuite", [])]
try: s["machine"] = [l.rstrip("\n") for l in open(os.path.join(out, "machine.txt"))]
except OSError: pass
s["ok"] = ok
json.dump(s, open(os.path.join(out, "summary.json"), "w"), indent=2)
rows = [(title, "%(passed)d passed, %(failed)d failed, %(skipped)d skipped" % s[k]) for k, title in tests]
if cuda: rows.append(("accuracy GPU / CPU", "%.4f / %.4f (%+.2f pts)" % (cuda["test_accuracy"], cpu["test_accuracy"], s["accuracy_delta_points"])))
if gemm:
    fwd = [l for l in gemm["layers"] if not l["tf32"]]
    rows.append(("GEMM fp32 TFLOP/s", "layers %.1f-%.1f, cuBLAS best %.1f" % (min(l["tflops"] for l in fwd), max(l["tflops"] for l in fwd), gemm["cublas_best_fp32_tflops"])))
    rows.append(("GEMM TF32 best", "%.1f TFLOP/s" % gemm["cublas_best_tf32_tflops"]))
if cuda and py: rows.append(("samples/s ddplab / PyTorch", "%.0f / %.0f = %.2fx" % (cuda["samples_per_s"], py["samples_per_s"], s["throughput_ratio_vs_pytorch"])))
for r in sweep:
    if r["ddplab"]:
        f = lambda k: ("%.0f (%.2fx)" % (r[k], r["ratio_vs_" + k])) if r.get("ratio_vs_" + k) else "-"
        rows.append(("steady b%d: ddplab / eager / graph" % r["batch"], "%.0f / %s / %s" % (r["ddplab"], f("pytorch_eager"), f("pytorch_graph"))))
if direct: rows.append(("samples/s bare loop (no plan)", "%.0f (acc %.4f)" % (direct["samples_per_s"], direct["test_accuracy"])))
if fp16: rows.append(("samples/s overlap + fp16", "%.0f (acc %.4f)" % (fp16["samples_per_s"], fp16["test_accuracy"])))
if cuda: rows.append(("peak device memory", "%.1f MiB" % (cuda["peak_device_bytes"] / 2**20)))
if tf32: rows.append(("samples/s ddplab TF32", "%.0f (acc %.4f)" % (tf32["samples_per_s"], tf32["test_accuracy"])))
for k, v in s["sanitizer"].items():
    rows.append(("compute-sanitizer " + k, v if v in ("clean", "not run") else v + " (see its log)"))
rows.append(("result", "OK" if ok else "FAILED (see logs in %s)" % out))
w = max(len(r[0]) for r in rows)
for k, v in rows: print(k.ljust(w), " ", v)
sys.exit(0 if ok else 1)
PY
