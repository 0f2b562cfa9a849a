#!/usr/bin/env bash
# Lightning's own checkpoint suites with burnlike's RecorderCheckpointIO as every Trainer's default
# CheckpointIO, in every process: the test process, the ranks ddp_spawn spawns and the ones ddp
# launches (a sitecustomize.py in a temp folder on PYTHONPATH adds the plugin to a Trainer given no
# CheckpointIO, in plugins or on its strategy, and puts it in a wrapper given none, AsyncCheckpointIO();
# a Trainer given one keeps it). CPU only.
#
#   scripts/lightning_suites.sh LIGHTNING_CHECKOUT [--all] [--load-through-burnlike] [--full-precision]
#                               [pytest args...]
#
# pytest args naming tests (tests_pytorch/...) run those instead of the suites below.
# LIGHTNING_CHECKOUT: a checkout (or `git archive` of tests/) of the Lightning tag matching the
# installed `lightning` (2.6.5's tests were run against lightning 2.6.6: no 2.6.6 tag was at hand).
# Nothing of Lightning's is kept in this repo. Test modules need jsonargparse (tests_pytorch/
# checkpointing/test_model_checkpoint.py imports it): pip install 'jsonargparse[signatures]>=4.39,<4.46'.
# Lightning's addopts are dropped (-o addopts=""): --strict-markers would refuse its `flaky` marker
# without pytest-rerunfailures, and --doctest-modules is not wanted here.
#
# By default the tests below are deselected, each for its reason; --all runs them too.
# --load-through-burnlike: Lightning's LightningModule/LightningDataModule.load_from_checkpoint read
# files through pl_load (torch.load), never through a CheckpointIO; with this flag pl_load reads a
# file that is no torch file with burnlike's load_checkpoint (what burnlike's own
# load_from_checkpoint(Cls, path) does), so the tests that load that way run instead of being
# deselected.
# --full-precision: RecorderCheckpointIO(DefaultRecorder()) (f32 weights) instead of the default
# RecorderCheckpointIO() (Burn's CompactRecorder: weights at f16, so a test comparing loaded weights
# bit for bit with the trained ones fails by design).
# Every save is logged to $OUT/saves.log (pid, parent pid, the CheckpointIO class, the path); the
# summary counts them, so a save that did not go through RecorderCheckpointIO shows.
# Environment: OUT (results folder, default a temp dir), PY (python, default .venv/bin/python),
# TIMEOUT (seconds per test, default 180).
set -u
[ $# -ge 1 ] && [ -d "$1/tests/tests_pytorch" ] || { sed -n '2,/^set -u/p' "$0" | sed '$d' >&2; exit 2; }
checkout=$(cd "$1" && pwd); shift
root=$(cd "$(dirname "$0")/.." && pwd)
py=${PY:-$root/.venv/bin/python}
all=0; redirect=0; recorder=compact
while [ $# -gt 0 ]; do
    case $1 in
        --all) all=1; shift ;;
        --load-through-burnlike) redirect=1; shift ;;
        --full-precision) recorder=default; shift ;;
        *) break ;;
    esac
done
out=${OUT:-$(mktemp -d /tmp/lightning_suites.XXXXXX)}; mkdir -p "$out"
hook=$(mktemp -d /tmp/burnlike_hook.XXXXXX)
trap 'rm -rf "$hook"' EXIT

"$py" -c "import jsonargparse" 2>/dev/null || {
    echo "jsonargparse is missing: pip install 'jsonargparse[signatures]>=4.39,<4.46'" >&2; exit 2; }
installed=$("$py" -c "import lightning; print(lightning.__version__)")
tests_version=$(cat "$checkout/src/version.info" 2>/dev/null || echo "?")
echo "lightning installed: $installed; tests from: $tests_version ($checkout)"

cat > "$hook/sitecustomize.py" <<'EOF'
"""RecorderCheckpointIO is the default CheckpointIO of every Trainer made in this process."""
import functools
import importlib.abc
import importlib.util
import os
import sys


def _log(kind, path):
    target = os.environ.get("BURNLIKE_LHOOK_LOG")
    if target:
        with open(target, "a") as f:
            f.write(f"{os.getpid()} {os.getppid()} {kind} {path}\n")


def _logged(cls):
    save = cls.save_checkpoint

    @functools.wraps(save)
    def save_checkpoint(self, checkpoint, path, *args, **kwargs):
        _log(type(self).__name__, path)
        return save(self, checkpoint, path, *args, **kwargs)

    cls.save_checkpoint = save_checkpoint


def _patch_trainer(module):
    from lightning.fabric.plugins.io.checkpoint_io import CheckpointIO
    from lightning.fabric.plugins.io.torch_io import TorchCheckpointIO
    from lightning.pytorch.plugins.io.wrapper import _WrappingCheckpointIO

    from burnlike.record import DefaultRecorder
    from burnlike.record.checkpoint.plugin import RecorderCheckpointIO

    full = os.environ.get("BURNLIKE_LHOOK_RECORDER") == "default"  # f32 weights, else Burn's compact f16

    _logged(TorchCheckpointIO)
    _logged(RecorderCheckpointIO)
    init = module.Trainer.__init__

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        plugins = kwargs.get("plugins")
        given = [] if plugins is None else list(plugins) if isinstance(plugins, (list, tuple)) else [plugins]
        on_strategy = getattr(kwargs.get("strategy"), "_checkpoint_io", None) is not None
        ios = [p for p in given if isinstance(p, CheckpointIO)]
        if not args and not on_strategy and not ios:
            kwargs["plugins"] = [*given, RecorderCheckpointIO(DefaultRecorder() if full else None)]
        for io in ios:  # a wrapper given none (AsyncCheckpointIO()) wraps it, not Lightning's default
            if isinstance(io, _WrappingCheckpointIO) and io._checkpoint_io is None:
                io.checkpoint_io = RecorderCheckpointIO(DefaultRecorder() if full else None)
        init(self, *args, **kwargs)

    module.Trainer.__init__ = __init__


def _patch_saving(module):
    from burnlike.record.checkpoint.lightning_dict import load_checkpoint
    from burnlike.record.format.registry import torch_format

    pl_load = module.pl_load

    @functools.wraps(pl_load)
    def load(path_or_url, map_location=None, weights_only=None):
        if isinstance(path_or_url, (str, os.PathLike)) and "://" not in str(path_or_url) \
                and os.path.isfile(path_or_url) and torch_format(path_or_url) is None:
            return load_checkpoint(path_or_url, None, map_location)
        return pl_load(path_or_url, map_location=map_location, weights_only=weights_only)

    module.pl_load = load


_HOOKS = {"lightning.pytorch.trainer.trainer": _patch_trainer}
if os.environ.get("BURNLIKE_LHOOK_PL_LOAD") == "1":
    _HOOKS["lightning.pytorch.core.saving"] = _patch_saving


class _Finder(importlib.abc.MetaPathFinder):
    """Runs a hook right after its module is first imported (no import of Lightning before)."""

    def find_spec(self, name, path, target=None):
        if name not in _HOOKS:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return None
        exec_module = spec.loader.exec_module

        def exec_and_patch(module):
            exec_module(module)
            _HOOKS[name](module)

        spec.loader.exec_module = exec_and_patch
        return spec


sys.meta_path.insert(0, _Finder())
EOF

suites=(
    tests_pytorch/checkpointing
    tests_pytorch/callbacks/test_model_checkpoint_additional_cases.py
    tests_pytorch/callbacks/test_model_checkpoint_edge_cases.py
    tests_pytorch/callbacks/test_model_checkpoint_manual_opt.py
    tests_pytorch/callbacks/test_model_checkpoint_step_interval_val_metric.py
    tests_pytorch/callbacks/test_early_stopping.py
    tests_pytorch/callbacks/test_callbacks.py
    tests_pytorch/callbacks/test_finetuning_callback.py
    tests_pytorch/callbacks/test_timer.py
    tests_pytorch/callbacks/test_stochastic_weight_avg.py
    tests_pytorch/callbacks/test_weight_averaging.py
    tests_pytorch/callbacks/test_lambda_function.py
    tests_pytorch/callbacks/test_pruning.py
    tests_pytorch/trainer/connectors/test_checkpoint_connector.py
    tests_pytorch/trainer/connectors/test_signal_connector.py
    tests_pytorch/models/test_restore.py
    tests_pytorch/models/test_hooks.py
    tests_pytorch/models/test_cpu.py
    tests_pytorch/models/test_hparams.py
    tests_pytorch/plugins/test_checkpoint_io_plugin.py
    tests_pytorch/plugins/test_async_checkpoint.py
    tests_pytorch/loops/test_loops.py
    tests_pytorch/loops/test_training_epoch_loop.py
    tests_pytorch/loops/test_double_iter_in_iterable_dataset.py
    tests_pytorch/core/test_saving.py
    tests_pytorch/core/test_datamodules.py
    tests_pytorch/core/test_metric_result_integration.py
    tests_pytorch/trainer/test_trainer.py
    tests_pytorch/trainer/optimization/test_optimizers.py
    tests_pytorch/accelerators/test_cpu.py
    tests_pytorch/strategies/test_ddp_integration.py
    tests_pytorch/utilities/migration/test_migration.py
)

# (a) tests that read or mock torch files themselves: excluded by the acceptance.
reads_torch_files=(  # torch.load / pl_load (Lightning's torch.load) of a checkpoint the Trainer wrote
    tests_pytorch/checkpointing/test_model_checkpoint.py::test_model_checkpoint_score_and_ckpt
    tests_pytorch/checkpointing/test_model_checkpoint.py::test_model_checkpoint_score_and_ckpt_val_check_interval
    tests_pytorch/checkpointing/test_model_checkpoint.py::test_model_checkpoint_on_exception_parametrized
    tests_pytorch/checkpointing/test_model_checkpoint.py::test_model_checkpoint_on_exception_in_other_callbacks
    tests_pytorch/checkpointing/test_model_checkpoint.py::test_model_checkpoint_save_last_checkpoint_contents
    tests_pytorch/checkpointing/test_model_checkpoint.py::test_checkpoint_repeated_strategy_extended
    tests_pytorch/checkpointing/test_model_checkpoint.py::test_current_score
    tests_pytorch/checkpointing/test_model_checkpoint.py::test_save_last_saves_correct_last_model_path
    tests_pytorch/checkpointing/test_model_checkpoint.py::test_none_monitor_saves_correct_best_model_path
    tests_pytorch/callbacks/test_model_checkpoint_manual_opt.py::test_model_checkpoint_manual_opt
    tests_pytorch/callbacks/test_early_stopping.py::test_resume_early_stopping_from_checkpoint
    tests_pytorch/callbacks/test_pruning.py::test_multiple_pruning_callbacks
    tests_pytorch/models/test_restore.py::test_trainer_properties_restore_ckpt_path
    tests_pytorch/models/test_restore.py::test_correct_step_and_epoch
    tests_pytorch/models/test_restore.py::test_load_model_from_checkpoint
    tests_pytorch/models/test_hparams.py::test_namespace_hparams
    tests_pytorch/models/test_hparams.py::test_dict_hparams
    tests_pytorch/models/test_hparams.py::test_omega_conf_hparams
    tests_pytorch/models/test_hparams.py::test_explicit_args_hparams
    tests_pytorch/models/test_hparams.py::test_implicit_args_hparams
    tests_pytorch/models/test_hparams.py::test_explicit_missing_args_hparams
    tests_pytorch/models/test_hparams.py::test_collect_init_arguments
    tests_pytorch/models/test_hparams.py::test_load_past_checkpoint
    tests_pytorch/models/test_hparams.py::test_ignore_args_list_hparams
    tests_pytorch/loops/test_loops.py::test_loop_restart_progress_multiple_dataloaders
    tests_pytorch/loops/test_loops.py::test_loop_state_on_exception
    tests_pytorch/loops/test_loops.py::test_loop_state_on_complete_run
    tests_pytorch/loops/test_loops.py::test_fit_loop_reset
    tests_pytorch/loops/test_loops.py::test_restart_parity
    tests_pytorch/loops/test_loops.py::test_restart_with_val_parity
    tests_pytorch/loops/test_loops.py::test_restart_from_last_parity
    tests_pytorch/loops/test_loops.py::test_restart_from_last_with_val_parity
    tests_pytorch/loops/test_loops.py::test_fit_can_fail_during_validation
    tests_pytorch/loops/test_loops.py::test_fit_loop_save_and_restore_dataloaders
    tests_pytorch/core/test_saving.py::test_load_from_checkpoint_map_location_automatic
    tests_pytorch/core/test_saving.py::test_load_from_checkpoint_warn_on_empty_state_dict
    tests_pytorch/core/test_datamodules.py::test_dm_checkpoint_save_and_load
    tests_pytorch/trainer/test_trainer.py::test_no_val_module
    tests_pytorch/trainer/test_trainer.py::test_model_checkpoint_only_weights
    tests_pytorch/trainer/test_trainer.py::test_fit_ckpt_path_epoch_restored
    tests_pytorch/utilities/migration/test_migration.py::test_migrate_loop_batches_that_stepped
)
mocks_torch_save=(  # count or mock torch.save / TorchCheckpointIO.save_checkpoint calls
    tests_pytorch/checkpointing/test_checkpoint_callback_frequency.py::test_default_checkpoint_freq
    tests_pytorch/checkpointing/test_checkpoint_callback_frequency.py::test_top_k
    tests_pytorch/checkpointing/test_model_checkpoint.py::test_model_checkpoint_no_extraneous_invocations
    tests_pytorch/checkpointing/test_trainer_checkpoint.py::test_trainer_save_checkpoint_storage_options
)
names_torch_io=(  # load a Trainer-written checkpoint through a TorchCheckpointIO the test gives its strategy
    tests_pytorch/accelerators/test_cpu.py::test_restore_checkpoint_after_pre_setup
)
load_from_checkpoint=(  # LightningModule.load_from_checkpoint: pl_load (torch.load), never a CheckpointIO
    tests_pytorch/core/test_saving.py::test_load_from_checkpoint_map_location_cpu
    tests_pytorch/core/test_saving.py::test_load_from_checkpoint_strict
    tests_pytorch/callbacks/test_pruning.py::test_permanent_when_model_is_saved_multiple_times
    tests_pytorch/callbacks/test_weight_averaging.py::test_ema_resume_ddp
    tests_pytorch/models/test_restore.py::test_running_test_pretrained_model_cpu
    tests_pytorch/models/test_restore.py::test_strict_model_load_more_params[False]
    tests_pytorch/models/test_restore.py::test_strict_model_load_less_params[False]
    tests_pytorch/models/test_hooks.py::test_load_from_checkpoint_hook_calls
    tests_pytorch/models/test_hparams.py::test_model_ignores_non_exist_kwargument
    tests_pytorch/models/test_hparams.py::test_args
    tests_pytorch/models/test_cpu.py::test_cpu_model
    tests_pytorch/models/test_cpu.py::test_all_features_cpu_model
    tests_pytorch/models/test_cpu.py::test_early_stopping_cpu_model
    tests_pytorch/models/test_cpu.py::test_lbfgs_cpu_model
    tests_pytorch/models/test_cpu.py::test_default_logger_callbacks_cpu_model
    tests_pytorch/models/test_cpu.py::test_multi_cpu_model_ddp
    tests_pytorch/trainer/test_trainer.py::test_strict_model_load[False]
)
bit_exact_weights=(  # load_from_checkpoint, then weights compared bit for bit: f16 in Burn's compact format
    tests_pytorch/callbacks/test_weight_averaging.py::test_ema_resume[
    tests_pytorch/models/test_restore.py::test_model_saving_loading
)
nested_omegaconf=(  # load_from_checkpoint; OmegaConf configs nested in the hparams read back as plain dicts
    tests_pytorch/models/test_hparams.py::test_model_save_hyper_parameters_interpolation_with_hydra
)
load_from_url=(  # load_from_checkpoint of an http:// URL: torch.hub, even with --load-through-burnlike
    tests_pytorch/models/test_restore.py::test_strict_model_load_more_params[True]
    tests_pytorch/models/test_restore.py::test_strict_model_load_less_params[True]
    tests_pytorch/trainer/test_trainer.py::test_strict_model_load[True]
)
# (c) environment: not the plugin's doing (they fail the same without it)
environment=(
    tests_pytorch/checkpointing/test_legacy_checkpoints.py  # Lightning's CI downloads the legacy checkpoints it loads
    tests_pytorch/trainer/connectors/test_signal_connector.py::test_auto_requeue_custom_signal_flag  # 2.6.5's test, 2.6.6's signal handlers
)

# exact test ids (a parametrized test: all its cases; `name[` its cases only; a file: its tests),
# deselected by a small plugin: pytest's --deselect takes prefixes (test_top_k would take test_top_k_ddp)
cat > "$hook/burnlike_deselect.py" <<'EOF'
import os


def pytest_collection_modifyitems(config, items):
    names = set(open(os.environ["BURNLIKE_DESELECT"]).read().split())
    keep, drop = [], []
    for item in items:
        base = item.nodeid.split("[")[0]
        hit = {item.nodeid, base, base + "[", item.nodeid.split("::")[0]} & names
        (drop if hit else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
EOF
deselect=()
if [ $all = 0 ]; then
    groups=("${reads_torch_files[@]}" "${mocks_torch_save[@]}" "${names_torch_io[@]}" "${load_from_url[@]}"
            "${nested_omegaconf[@]}" "${environment[@]}")
    [ $redirect = 0 ] && groups+=("${load_from_checkpoint[@]}")
    [ $redirect = 0 ] || [ $recorder = compact ] && groups+=("${bit_exact_weights[@]}")
    deselect=("${groups[@]}")
fi
printf '%s\n' "${deselect[@]}" > "$hook/deselect.txt"

for a in "$@"; do case $a in tests_pytorch/*) suites=() ;; esac; done  # tests named: only those
cd "$checkout/tests" || exit 2
rm -f "$out/saves.log"
CUDA_VISIBLE_DEVICES="" PYTHONPATH="$hook:$checkout/tests" BURNLIKE_LHOOK_LOG="$out/saves.log" \
BURNLIKE_LHOOK_PL_LOAD=$redirect BURNLIKE_LHOOK_RECORDER=$recorder BURNLIKE_DESELECT="$hook/deselect.txt" \
    "$py" -m pytest -p no:cacheprovider --rootdir "$checkout/tests" -o addopts="" --disable-pytest-warnings --timeout="${TIMEOUT:-180}" \
    -p burnlike_deselect -q -rfE --junitxml="$out/junit.xml" "$@" "${suites[@]}" 2>&1 | tee "$out/pytest.log"
status=${PIPESTATUS[0]}
echo "saves by CheckpointIO class: count, then the processes that saved"
[ -f "$out/saves.log" ] && awk '{print "  " $3}' "$out/saves.log" | sort | uniq -c \
    && awk '{print "  " $3 " in processes"}' <(sort -u -k1,1 -k3,3 "$out/saves.log") | sort | uniq -c
echo "results: $out (junit.xml, pytest.log, saves.log)"
exit "$status"
