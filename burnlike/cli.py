"""burnlike: look into and convert Burn record files.

  burnlike inspect FILE                 metadata + tensor tree (path, dtype, shape, bytes)
  burnlike consolidate TRAINER_DIR      a sharded checkpoint's weights as one model record (and
                                        with --checkpoint, the training checkpoint as one file)
  burnlike convert IN OUT [options]     between recorders/precisions, safetensors and .ckpt
  burnlike summary RUN_DIR              a run's Learner summary table and metrics.png
  burnlike compare DIR...               runs (or a multirun dir) ranked by their optimized metric

Formats come from the file extension: .mpk .mpk.gz .json .json.gz (Burn's self-describing
records), .bin .bin.gz (bincode: has no field names, so tensors need --model), .safetensors,
.ckpt (a Lightning checkpoint: burnlike's RecorderCheckpointIO files are recognised by content;
PyTorch-pickled ones are read with torch's allowlisting `weights_only=True` loader, never with
plain pickle). Going between PyTorch layouts (safetensors/.ckpt) and Burn records needs --model,
because the module tree decides Linear transposes and norm gamma/beta names.

Examples:
  burnlike inspect artifacts/model.mpk
  burnlike inspect model.bin --model mypkg.net:Net
  burnlike convert model.mpk model.json --precision full
  burnlike convert checkpoint/model-3.mpk ckpt-half.mpk.gz --precision half
  burnlike convert weights.safetensors model.mpk --precision half --model mypkg.net:Net
  burnlike convert epoch=3-step=100.ckpt model.bin --burn-version 0.19.0 --model mypkg.net:Net
  burnlike convert model.mpk model.safetensors --model mypkg.net:Net
  burnlike convert model.json compact --recorder CompactRecorder      # -> compact.mpk
  burnlike consolidate outputs/run/artifacts/checkpoint/trainer-3.mpk   # -> model-3.mpk beside it
  burnlike consolidate outputs/run/checkpoint/trainer-3.mpk --checkpoint  # and trainer-3.mpk one file

Files may be local paths or fsspec URLs (s3://, gs://, memory://…: any filesystem fsspec has
installed), as for the training app's artifact dir.

Exit status: 0 on success, 2 on an unreadable or mismatched file (message on stderr).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from torch import nn

from burnlike import __version__
from burnlike.cli_runs import register as register_run_commands
from burnlike.record.checkpoint.lightning_dict import encode_checkpoint, is_checkpoint
from burnlike.record.checkpoint.shard_folder import is_sharded_checkpoint
from burnlike.record.checkpoint.value import TAG, decode_value
from burnlike.record.checkpoint.weights import weights_from_checkpoint
from burnlike.record.error import MAX_MESSAGE, QUOTE_CHARS, RecordError, quote
from burnlike.record.format import registry
from burnlike.record.format.bincode import ITEM_FORMAT, BinFileRecorder, read_metadata
from burnlike.record.format.files import atomic_write, gunzip, open_record
from burnlike.record.format.location import AnyPath, as_path
from burnlike.record.format.module_record import load_module_record
from burnlike.record.format.recorder import Recorder
from burnlike.record.tensor.dtypes import DTYPES
from burnlike.record.tensor.file_slice import FileSlice
from burnlike.record.tensor.precision import PrecisionSettings, storage_dtype
from burnlike.record.tensor.tensor_data import check_data, data_to_tensor, is_tensor_data, tensor_to_data
from burnlike.record.tensor.version import DEFAULT_VERSION


def tensors(item: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(path, TensorData) for every tensor in a record item (module records and checkpoints)."""
    if is_tensor_data(item):
        yield prefix, item
    elif isinstance(item, dict):
        if item.get(TAG) == "tensor":
            yield prefix, item["data"]
            return
        if item.get(TAG) in ("odict", "dict"):
            for pair in item.get("items", []):
                if isinstance(pair, list) and len(pair) == 2:
                    yield from tensors(pair[1], f"{prefix}.{pair[0]}" if prefix else str(pair[0]))
            return
        for key, value in item.items():
            if key == "param" and isinstance(value, dict):
                yield from tensors(value, prefix)
            elif key != "id":
                yield from tensors(value, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(item, list):
        for i, value in enumerate(item):
            yield from tensors(value, f"{prefix}.{i}" if prefix else str(i))


class CliError(Exception):
    """A user-facing failure: `main` prints it as one line on stderr and exits 2."""


def load_model(spec: str) -> Any:
    """`package.module:factory` → a module instance (a class or a function taking no arguments)."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise CliError(f"--model expects 'package.module:ClassOrFactory', got {quote(spec)}")
    sys.path.insert(0, str(Path.cwd()))
    try:
        obj = getattr(importlib.import_module(module_name), attr)
        model = obj()
        model = model.init() if hasattr(model, "init") and not hasattr(model, "state_dict") else model
    except Exception as e:  # noqa: BLE001 - any failure of the user's factory is reported, not raised
        raise CliError(f"--model {quote(spec)}: {type(e).__name__}: {quote(str(e))}") from None
    if not isinstance(model, nn.Module):
        raise CliError(f"--model {quote(spec)} made a {type(model).__name__}, not a torch.nn.Module")
    return model


def read_torch_ckpt(path: AnyPath) -> dict[str, Any]:
    """A PyTorch/Lightning pickle checkpoint through torch's allowlisting loader only."""
    try:
        with open_record(path) as (f, _):
            ckpt = torch.load(f, map_location="cpu", weights_only=True)
    except RecordError:
        raise
    except Exception as e:  # noqa: BLE001 - any refusal of the safe loader is a user-facing error
        raise CliError(f"{path}: torch's weights_only loader refused it ({type(e).__name__}: {quote(str(e))})") \
            from None
    state = ckpt.get("state_dict", ckpt) if isinstance(ckpt, dict) else ckpt
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise CliError(f"{path}: expected a state_dict of tensors (a PyTorch/Lightning checkpoint)")
    return ckpt if isinstance(ckpt, dict) else {"state_dict": ckpt}


def read_safetensors(path: AnyPath) -> dict[str, torch.Tensor]:
    """A .safetensors file's tensors, any failure as a CliError naming the file."""
    from safetensors.torch import load

    try:
        with open_record(path) as (f, _):
            return load(f.read())
    except RecordError:
        raise
    except Exception as e:  # noqa: BLE001 - safetensors' own errors (SafetensorError, OSError…)
        raise CliError(f"{path}: not a valid safetensors file ({type(e).__name__}: {quote(str(e))})") from None


def strip_prefix(state: dict[str, Any], prefix: str) -> dict[str, Any]:
    if prefix and state and all(isinstance(k, str) and k.startswith(prefix) for k in state):
        return {k[len(prefix):]: v for k, v in state.items()}
    return dict(state)


def _record_reader(path: AnyPath) -> Recorder | None:
    """Recorder for a burnlike/Burn record, sniffing `.ckpt` files; None for PyTorch pickles."""
    if path.suffix == ".ckpt":
        return None if registry.is_torch_zip(path) else registry.sniff(path)
    return registry.by_extension(path)


def cmd_inspect(args: argparse.Namespace) -> int:
    path = as_path(args.file)
    if not path.exists():
        print(f"error: {path}: no such file", file=sys.stderr)
        return 2
    if is_sharded_checkpoint(path):
        from burnlike.record.checkpoint.dcp import describe  # torch.distributed: only for a shard folder

        print("\n".join(describe(path)))
        return 0
    if path.suffix == ".safetensors":
        weights = read_safetensors(path)
        print(f"{path}: safetensors, {len(weights)} tensors")
        for key, t in weights.items():
            print(f"  {_show(key):<50} {str(t.dtype).removeprefix('torch.'):<8} {list(t.shape)}")
        return 0
    recorder = _record_reader(path)
    if recorder is None and path.suffix == ".ckpt":
        state = read_torch_ckpt(path).get("state_dict", {})
        print(f"{path}: PyTorch checkpoint (read with weights_only=True), {len(state)} state_dict entries")
        for key, t in state.items():
            print(f"  {_show(key):<50} {str(t.dtype).removeprefix('torch.'):<8} {list(t.shape)}")
        return 0
    if recorder is None:
        print(f"error: {path}: unknown extension (expected .mpk, .mpk.gz, .json, .json.gz, .bin, .bin.gz, "
              ".safetensors or .ckpt)", file=sys.stderr)
        return 2
    model = load_model(args.model) if args.model else None
    if model is None and isinstance(recorder, BinFileRecorder):
        return _inspect_bin_metadata(path, recorder)
    with recorder.scan(path, module=model) as (metadata, item):
        lines = _record_lines(path, metadata, item)  # every tensor checked before anything is printed
    print("\n".join(lines))
    return 0


def cmd_consolidate(args: argparse.Namespace) -> int:
    """A sharded `trainer-N` folder's model weights gathered into `model-N` (Burn's module record)."""
    folder = as_path(args.folder)
    if not is_sharded_checkpoint(folder):
        alt = folder.parent / f"{folder.name}.{args.extension}"  # `trainer-N` named without its extension
        if not is_sharded_checkpoint(alt):
            raise CliError(f"{folder}: no sharded checkpoint (a folder holding .metadata.<ext>, as "
                           "ShardedStrategy/CompactFSDPStrategy write checkpoint/trainer-N.<ext>)")
        folder = alt
    model = load_model(args.model) if args.model else _run_model(folder)
    from burnlike.record.checkpoint.dcp import whole_tensors

    weights = whole_tensors(folder)
    missing, unexpected = model.load_state_dict(weights, strict=False)
    if missing or unexpected:
        raise CliError(f"{folder}: the checkpoint's weights don't fit {type(model).__name__}: missing "
                       f"{quote(', '.join(missing))}; unexpected {quote(', '.join(unexpected))}")
    recorder = registry.sniff(next(p for p in folder.iterdir() if p.name.startswith("shard-")))
    if args.recorder:
        recorder = registry.by_name(args.recorder)
    stem = folder.name.split(".")[0].replace("trainer-", "model-", 1)
    out = as_path(args.out) if args.out else folder.parent / f"{stem}.{recorder.file_extension()}"
    written = recorder.save_module(model, out, durable=True)
    print(f"{folder} -> {written} ({len(weights)} tensors)")
    if args.checkpoint:
        _one_file_checkpoint(folder, recorder)
    return 0


def _one_file_checkpoint(folder: AnyPath, recorder: Recorder) -> None:
    """Replace the sharded training checkpoint `folder` by the one file a single process would have
    saved (the whole weights and optimizer states, the training state): what any strategy resumes
    from. The shards stay beside it, in `<folder>.shards`; the file is complete before the folder
    moves, so a cut-short run leaves the shards or the file."""
    from burnlike.record.checkpoint.dcp import gathered_checkpoint
    from burnlike.record.checkpoint.plugin import RecorderCheckpointIO

    checkpoint = gathered_checkpoint(folder)
    whole = folder.with_name(folder.name + ".whole")
    kept = folder.with_name(folder.name + ".shards")
    if kept.exists():
        raise CliError(f"{kept} exists: move it away first (it would receive {folder}'s shards)")
    RecorderCheckpointIO(recorder).save_checkpoint(checkpoint, str(whole))
    _move(folder, kept)
    _move(whole, folder)
    print(f"{folder}: one file now (step {checkpoint.get('global_step')}, {len(checkpoint['optimizer_states'])} "
          f"optimizer states); the shards are in {kept}")


def _move(source: AnyPath, target: AnyPath) -> None:
    if isinstance(source, Path) and isinstance(target, Path):
        os.replace(source, target)
    else:
        source.fs.mv(source.fs_path, target.fs_path, recursive=True)  # type: ignore[union-attr]


def _run_model(folder: AnyPath) -> nn.Module:
    """The model of the app's run that wrote `folder` (RUN/.hydra/config.yaml, or RUN/artifacts/..)."""
    for run in (folder.parent.parent, folder.parent.parent.parent):
        config = run / ".hydra" / "config.yaml"
        if isinstance(config, Path) and config.exists():
            from omegaconf import OmegaConf

            from burnlike.app.run import build_model
            from burnlike.app.schema import SCHEMAS

            cfg = OmegaConf.load(config)
            hydra = config.parent / "hydra.yaml"  # the run's model= choice: its schema types the saved values
            choice = OmegaConf.select(OmegaConf.load(hydra), "hydra.runtime.choices.model") if hydra.exists() else None
            schema = SCHEMAS.get(f"model/{choice}")
            if schema is not None and "_target_" not in cfg.model:
                cfg.model = OmegaConf.merge(OmegaConf.structured(schema), cfg.model)
            return build_model(cfg)  # type: ignore[arg-type]
    raise CliError(f"{folder}: no app run around it (RUN/.hydra/config.yaml) to build the model from: pass "
                   "--model package.module:ClassOrFactory")


def _show(value: object) -> str:
    """A value from the file as printed: at most ~200 characters of it."""
    text = str(value)
    return text if len(text) <= QUOTE_CHARS else quote(text)


def _record_lines(path: AnyPath, metadata: dict[str, str], item: Any, note: str | None = None) -> list[str]:
    """What `inspect` prints for a record, each TensorData checked (dtype, shape, byte count)."""
    lines = [f"{path}", *(f"  {_show(key)}: {_show(value)}" for key, value in metadata.items())]
    if note:
        lines.append(note)
        return lines
    if is_checkpoint(item):
        lines.append("  kind: burnlike training checkpoint (Lightning dict); keys: "
                     + _show(", ".join(str(k) for k in item if not str(k).startswith("__"))))
    rows = []
    total = 0
    for key, data in tensors(item):
        raw, dtype, shape = check_data(data, key, str(path))
        size = raw.nbytes if isinstance(raw, (memoryview, FileSlice)) else len(raw)
        total += size
        rows.append(f"    {_show(key):<50} {DTYPES[dtype]:<5} {str(shape):<18} {size:>12,} B")
    return [*lines, f"  {len(rows)} tensors:", *rows, f"  tensor bytes: {total:,}"]


def _inspect_bin_metadata(path: AnyPath, recorder: Recorder) -> int:
    """bincode without a model: the metadata is readable; module tensors need the field order."""
    with open_record(path) as (f, _):
        data: bytes | bytearray = f.read()
    if path.name.endswith(".gz"):
        data = gunzip(bytes(data), Path(str(path)))  # the path names the file in errors only
    metadata, _ = read_metadata(data, Path(str(path)))
    if metadata["format"].startswith(ITEM_FORMAT):  # self-describing checkpoint: list it in full
        lines = _record_lines(path, metadata, recorder.read_record(path)[1])
    else:
        lines = _record_lines(path, metadata, None,
                              "  (bincode has no field names: pass --model package.module:Class to list the tensors)")
    print("\n".join(lines))
    return 0


def cmd_convert(args: argparse.Namespace) -> int:
    src, dst = as_path(args.input), as_path(args.output)
    if not src.exists():
        print(f"error: {src}: no such file", file=sys.stderr)
        return 2
    model = load_model(args.model) if args.model else None
    return _convert(src, dst, model, args)


def _convert(src: AnyPath, dst: AnyPath, model: nn.Module | None, args: argparse.Namespace) -> int:
    out = registry.by_extension(dst, args.precision, args.burn_version)
    if args.recorder:
        out = registry.by_name(args.recorder, args.precision, args.burn_version)
        dst = out.path_for(dst)
    if out is None and dst.suffix not in (".safetensors", ".ckpt"):
        raise CliError(f"{dst}: unknown output format (use .mpk, .mpk.gz, .json, .json.gz, .bin, .bin.gz, "
                         ".safetensors or .ckpt)")
    state: dict[str, Any] | None = None  # PyTorch-layout weights, when the input has them
    item: Any = None
    reader = _record_reader(src) if src.suffix != ".safetensors" else None
    if src.suffix == ".safetensors":
        state = read_safetensors(src)
    elif reader is None and src.suffix == ".ckpt":
        ckpt = read_torch_ckpt(src)
        state = strip_prefix(ckpt.get("state_dict", ckpt), args.prefix)
    elif reader is None:
        raise CliError(f"{src}: unknown input format")
    else:
        _, item = reader.read_record(src, module=model)
        if is_checkpoint(item):
            checkpoint = decode_value(item, str(src))
            if out is not None and model is None:  # checkpoint → checkpoint in another recorder/precision
                written = out.record(encode_checkpoint(checkpoint, out), dst, exact_path=True)
                print(f"wrote {written} (training checkpoint; weights at {out.settings.name}, the rest full)")
                return 0
            state = strip_prefix(checkpoint["state_dict"], args.prefix)
            if model is not None:
                weights_from_checkpoint(model, item, str(src))
                state = None
        elif model is not None:
            load_module_record(model, item, str(src))
        elif out is not None:  # record → record: same tree, new format/precision
            written = out.record(_reprecise(item, out.settings, out.burn_version), dst, exact_path=True)
            print(f"wrote {written}")
            return 0
        else:
            raise CliError("converting a Burn record to a PyTorch layout needs --model "
                             "(Linear weights are stored transposed, norms as gamma/beta)")
    if state is not None and model is not None:
        try:
            model.load_state_dict(state)
        except RuntimeError as e:
            raise CliError(f"{src} doesn't fit --model: {quote(str(e))}") from None
    if model is None and (out is not None or state is None):
        raise CliError("converting PyTorch weights into a Burn record needs --model "
                         "(the module tree decides Linear transposes and gamma/beta names)")
    weights = model.state_dict() if model is not None else state
    assert weights is not None
    if dst.suffix == ".safetensors":
        from safetensors.torch import save

        atomic_write(dst, save({k: v.detach().contiguous() for k, v in weights.items()}))
        written = dst
    elif dst.suffix == ".ckpt":
        import lightning

        ckpt = {"state_dict": {f"{args.prefix}{k}": v for k, v in weights.items()},
                "pytorch-lightning_version": lightning.__version__}
        atomic_write(dst, lambda f: torch.save(ckpt, f))
        written = dst
    else:
        assert out is not None and model is not None  # unknown formats and missing --model exited above
        written = out.save_module(model, dst)
    print(f"wrote {written}")
    return 0


def _reprecise(item: Any, settings: PrecisionSettings, burn_version: str) -> Any:
    """Re-encode every TensorData of a module record at `settings` (guards as in `storage_dtype`)."""
    if is_tensor_data(item):
        t = data_to_tensor(item)
        return tensor_to_data(t, storage_dtype(t, settings), burn_version)
    if isinstance(item, dict):
        return {k: _reprecise(v, settings, burn_version) for k, v in item.items()}
    if isinstance(item, list):
        return [_reprecise(v, settings, burn_version) for v in item]
    return item


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="burnlike", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"burnlike {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{inspect,consolidate,convert,summary,compare}")
    p = sub.add_parser("inspect", help="print a record's metadata and tensor tree (path, dtype, shape, bytes)",
                       description="Print a record's metadata and its tensors (path, dtype, shape, bytes). "
                                   "Works on .mpk/.mpk.gz/.json/.json.gz/.bin/.bin.gz records, burnlike "
                                   "training checkpoints, .safetensors and PyTorch .ckpt files.")
    p.add_argument("file")
    p.add_argument("--model", metavar="PKG.MOD:CLASS", help="module giving the field order of bincode (.bin) records")
    p.set_defaults(func=cmd_inspect)
    p = sub.add_parser("consolidate", help="a sharded checkpoint's weights as one model record (model-N)",
                       description="Gather the model weights of a sharded training checkpoint (a "
                                   "checkpoint/trainer-N.<ext> folder written by ShardedStrategy or "
                                   "CompactFSDPStrategy) into Burn's module record, in one process. The model "
                                   "comes from --model, or from the app's run config around the folder.")
    p.add_argument("folder", metavar="TRAINER_DIR", help="checkpoint/trainer-N.<ext> (or trainer-N)")
    p.add_argument("--model", metavar="PKG.MOD:CLASS", help="importable factory of the model (default: the app "
                                                             "run's model= config)")
    p.add_argument("--out", metavar="FILE", help="where to write (default: model-N.<ext> beside the folder)")
    p.add_argument("--recorder", choices=[*registry.SHORT_NAMES, *registry.ALIASES], default=None,
                   help="format to write (default: the shards' own)")
    p.add_argument("--extension", default="mpk", help=argparse.SUPPRESS)
    p.add_argument("--checkpoint", action="store_true",
                   help="also turn the training checkpoint into one file (whole weights and optimizer states) "
                        "that any strategy resumes from; the shards move to TRAINER_DIR.shards")
    p.set_defaults(func=cmd_consolidate)
    p = sub.add_parser("convert", help="convert between recorders/precisions, safetensors and Lightning .ckpt",
                       description="Convert IN to OUT; formats come from the extensions. Records convert to "
                                   "records without --model (precision changes keep the f16 guards). To or "
                                   "from PyTorch layouts (.safetensors, .ckpt) pass --model.\n\n"
                                   + __doc__.split("Examples:")[1].split("Exit status")[0].rstrip(),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input", help="input file")
    p.add_argument("output", help="output file (its extension picks the format; written as named)")
    p.add_argument("--precision", choices=sorted(registry.PRECISIONS), default=None,
                   help="precision of an output record (default: full)")
    p.add_argument("--burn-version", default=DEFAULT_VERSION, metavar="VERSION",
                   help="Burn record layout to write: 0.21.0 (default) or 0.19.0")
    p.add_argument("--recorder", choices=[cls.__name__ for cls in registry.FILE_RECORDERS] + sorted(registry.ALIASES),
                   default=None,
                   help="output recorder; OUT's extension is replaced by its own, like Burn's save_file "
                        "(default: picked by OUT's extension)")
    p.add_argument("--model", metavar="PKG.MOD:CLASS",
                   help="importable factory of the PyTorch module (a class, or a config with init())")
    p.add_argument("--prefix", default="model.",
                   help="state_dict key prefix of the model inside .ckpt files (default 'model.', burnlike's "
                        "StepModule; '' for none)")
    p.set_defaults(func=cmd_convert)
    register_run_commands(sub)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except BrokenPipeError:  # `burnlike inspect big.mpk | head`: the reader left; no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # as Python's docs advise
        return 1
    except (CliError, RecordError, OSError) as e:
        return _fail(str(e))
    except Exception as e:  # noqa: BLE001 - never a traceback: any other failure is one line, exit 2
        return _fail(f"{type(e).__name__}: {e}")


def _fail(message: str) -> int:
    """One line on stderr, exit status 2."""
    line = " ".join(message.split())
    print(f"error: {line if len(line) <= MAX_MESSAGE else quote(line, MAX_MESSAGE)}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
