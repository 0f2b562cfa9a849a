#!/usr/bin/env bash
# The GPU checks in one call of a lent GPU machine, whose image has torch, Lightning, torchmetrics,
# msgpack, rich and pytest but not hydra-core/omegaconf/antlr4 and no network.
#
#   bash scripts/gpu_checks.sh --prepare    # here: .device/site (those three, pure Python) and
#                                           # .device/data/MNIST/raw, both git-ignored
#   bash scripts/gpu_checks.sh [STEP...]    # there, with .device carried; logs go to $OUT (or ./gpu-out)
#
# Steps, each under its own time limit so one hang can't eat the others: the `cuda` tests,
# benchmarks/gpu.py (issue 10's table), the guide's app run on the fast path, the fast tests with a
# GPU present (the default device becomes it), and benchmarks/records.py at 100M parameters.
# Not in the default list: `before_fix` (the `cuda` tests matching $BEFORE_K on a copy of the repo
# with the files under .device/before/ laid over it: the code before a fix, to see a test fail),
# `resnet` (ResNet-18 alone, three runs a precision) and `slow_with_a_gpu` (the slow tests).
set -u
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--prepare" ]; then
    site=$(.venv/bin/python -c "import hydra, os; print(os.path.dirname(os.path.dirname(hydra.__file__)))")
    data=${BURNLIKE_DATA:-../shared/data}
    rm -rf .device && mkdir -p .device/site .device/data/MNIST
    # with their package metadata: Lightning calls its Hydra launcher hook only where it finds hydra-core's
    cp -r "$site/hydra" "$site/omegaconf" "$site/antlr4" "$site"/hydra_core-*.dist-info "$site"/omegaconf-*.dist-info \
        "$site"/antlr4_python3_runtime-*.dist-info .device/site/
    cp -r "$data/MNIST/raw" .device/data/MNIST/
    du -sh .device
    exit 0
fi

out=${OUT:-gpu-out}
mkdir -p "$out"
export PYTHONPATH="$PWD/.device/site:$PWD" BURNLIKE_DATA="$PWD/.device/data" PYTHONUNBUFFERED=1
py=${PY:-python3}

step() {  # step NAME SECONDS COMMAND...: runs COMMAND under a limit, its output into $out/NAME.log
    local name=$1 limit=$2
    shift 2
    echo "== $name (limit ${limit}s): $*"
    local start=$SECONDS
    timeout "$limit" "$@" >"$out/$name.log" 2>&1
    echo "   exit $? after $((SECONDS - start)) s"
    tail -n "${TAIL:-25}" "$out/$name.log"
}

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
$py -c "import sys, torch, lightning, torchmetrics; print(sys.version.split()[0], 'torch', torch.__version__,
'lightning', lightning.__version__, 'torchmetrics', torchmetrics.__version__, 'cuda', torch.cuda.is_available())"

cuda_tests() { TAIL=15 step cuda_tests 100 $py -m pytest -q -p no:cacheprovider -m cuda -rfEs; }
gpu_bench() { TAIL=30 step gpu_bench 180 $py benchmarks/gpu.py --repeats 2; }
app_fast_path() {
    TAIL=20 step app_fast_path 90 $py train.py model=mnist trainer.devices=1 learner.cuda_graph=true \
        hydra.run.dir=/tmp/gpu-app-run
    cat /tmp/gpu-app-run/result.json >>"$out/app_fast_path.log" 2>&1
}
suite_with_a_gpu() { TAIL=15 step suite_with_a_gpu 150 $py -m pytest -q -p no:cacheprovider -m "not slow and not cuda" -rfE; }
records() { TAIL=20 step records 90 $py benchmarks/records.py --sizes 1e8 --repeats 3 --no-memory; }
resnet() { TAIL=12 step resnet 150 $py benchmarks/gpu.py --resnet-only --resnet-repeats 3; }
slow_with_a_gpu() { TAIL=15 step slow_with_a_gpu 300 $py -m pytest -q -p no:cacheprovider -m "slow and not cuda" -rfE; }
before_fix() {
    rm -rf /tmp/before && cp -r . /tmp/before && cp -r .device/before/. /tmp/before/
    (cd /tmp/before && PYTHONPATH="$PWD/.device/site:$PWD" TAIL=15 step before_fix 100 \
        $py -m pytest -q -p no:cacheprovider -m cuda -k "${BEFORE_K:-}" -rfE)
}

for name in ${*:-cuda_tests gpu_bench app_fast_path suite_with_a_gpu records}; do
    "$name"
done
