#!/usr/bin/env bash
# The slow test test_ddp_inside_a_multirun's app run by hand, with every process's stack dumped if it
# hangs (faulthandler on SIGABRT), the sweep's logs printed after. Made for the GPU machine (run from
# the repo root with .device carried: scripts/gpu_checks.sh --prepare), where that test once hung:
# Hydra was on PYTHONPATH without its package metadata, so Lightning's launcher re-ran the sweep.
#   WAIT=90 bash scripts/diag_ddp_multirun.sh     # logs under $OUT (or /tmp/diag)
out=${OUT:-/tmp/diag}; mkdir -p "$out"
export PYTHONPATH="$PWD/.device/site:$PWD" BURNLIKE_DATA="${BURNLIKE_DATA:-$PWD/.device/data}" PYTHONWARNINGS=ignore \
    CUDA_VISIBLE_DEVICES= PYTHONFAULTHANDLER=1 PYTHONUNBUFFERED=1
py=${PY:-python3}
setsid $py train.py -m trainer=ddp optimizer.lr=0.001,0.01 learner.num_epochs=1 learner.checkpointing=false \
    learner.progress_bar=false trainer.limit_train_batches=2 trainer.limit_val_batches=2 \
    hydra.run.dir="$out/run" hydra.sweep.dir="$out/sweep" >"$out/app.log" 2>&1 &
app=$!  # its own process group (setsid): the signals below reach this run's processes only
for i in $(seq 1 "${WAIT:-80}"); do kill -0 $app 2>/dev/null || break; sleep 1; done
echo "after ${i} s; still running: $(kill -0 $app 2>/dev/null && echo yes || echo no)"
ps -eo pid,pgid,etimes,args | awk -v g="$app" '$2 == g' | cut -c1-400
kill -ABRT -- "-$app" 2>/dev/null; sleep 3; kill -9 -- "-$app" 2>/dev/null
wait $app; echo "exit $?"
find "$out/sweep" -type f | sort
tail -n 200 "$out/app.log"
for f in "$out"/sweep/*/*.log; do echo "== $f"; tail -n 30 "$f"; done
