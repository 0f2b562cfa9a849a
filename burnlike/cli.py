"""`burnlike inspect FILE` and `burnlike convert IN OUT`: look into and convert Burn records.

Formats are chosen by file extension: .mpk .mpk.gz .json .json.gz (Burn records, self-describing),
.bin .bin.gz (bincode: needs --model), .safetensors, .ckpt (a Lightning checkpoint, read with
torch's allowlisting `weights_only=True` loader) and burnlike training checkpoints.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

PRECISIONS = {"full": "FullPrecisionSettings", "half": "HalfPrecisionSettings", "double": "DoublePrecisionSettings"}


def recorder_for(path: Path, precision: str | None = None, burn_version: str = "0.21.0") -> Any:
    import burnlike.record as rec

    table = [("mpk.gz", "NamedMpkGzFileRecorder"), ("json.gz", "JsonGzFileRecorder"), ("bin.gz", "BinGzFileRecorder"),
             ("mpk", "NamedMpkFileRecorder"), ("json", "PrettyJsonFileRecorder"), ("bin", "BinFileRecorder")]
    for ext, name in table:
        if path.name.endswith("." + ext):
            settings = getattr(rec, PRECISIONS[precision]) if precision else None
            return getattr(rec, name)(settings, burn_version)
    return None


def tensors(item: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(path, TensorData) for every tensor in a record item (module records and checkpoints)."""
    from burnlike.record.codec import TAG, is_tensor_data

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


def load_model(spec: str) -> Any:
    """`package.module:factory` → a module instance (a class or a function taking no arguments)."""
    module_name, _, attr = spec.partition(":")
    if not attr:
        raise SystemExit(f"--model expects 'package.module:ClassOrFactory', got {spec!r}")
    obj = getattr(importlib.import_module(module_name), attr)
    model = obj()
    return model.init() if hasattr(model, "init") and not hasattr(model, "state_dict") else model


def cmd_inspect(args: argparse.Namespace) -> int:
    from burnlike.record import RecordError

    path = Path(args.file)
    if path.suffix == ".safetensors":
        from safetensors import safe_open

        with safe_open(str(path), "pt") as f:
            rows = [(k, str(f.get_slice(k).get_dtype()), list(f.get_slice(k).get_shape())) for k in f.keys()]
        print(f"{path}: safetensors, {len(rows)} tensors")
        for key, dtype, shape in rows:
            print(f"  {key:<50} {dtype:<8} {shape}")
        return 0
    recorder = recorder_for(path)
    if recorder is None:
        print(f"error: {path}: unknown extension (expected .mpk, .mpk.gz, .json, .json.gz, .bin, .bin.gz, "
              ".safetensors)", file=sys.stderr)
        return 2
    model = load_model(args.model) if args.model else None
    try:
        metadata, item = recorder.read_record(path, module=model)
    except RecordError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"{path}")
    for key, value in metadata.items():
        print(f"  {key}: {value}")
    total = 0
    rows = list(tensors(item))
    print(f"  {len(rows)} tensors:")
    for key, data in rows:
        size = len(data["bytes"])
        total += size
        dtype = data["dtype"] if isinstance(data["dtype"], str) else next(iter(data["dtype"]))
        print(f"    {key:<50} {dtype:<5} {str(data['shape']):<18} {size:>12,} B")
    print(f"  tensor bytes: {total:,}")
    return 0


def cmd_convert(args: argparse.Namespace) -> int:
    import torch

    from burnlike.record import RecordError
    from burnlike.record.checkpoint_io import weights_from_checkpoint

    src, dst = Path(args.input), Path(args.output)
    model = load_model(args.model) if args.model else None
    try:
        state: dict[str, Any] | None = None
        if src.suffix == ".safetensors":
            from safetensors.torch import load_file

            state = load_file(str(src))
        elif src.suffix == ".ckpt":
            ckpt = torch.load(src, map_location="cpu", weights_only=True)
            state = ckpt.get("state_dict", ckpt)
            if all(k.startswith("model.") for k in state):
                state = {k[len("model."):]: v for k, v in state.items()}
        else:
            recorder = recorder_for(src)
            if recorder is None:
                raise SystemExit(f"error: {src}: unknown input format")
            if model is not None:
                _, item = recorder.read_record(src, module=model)
                if isinstance(item, dict) and "pytorch-lightning_version" in item:
                    weights_from_checkpoint(model, item, src)
                else:
                    from burnlike.record.module_record import load_module_record

                    load_module_record(model, item, src)
            else:
                _, item = recorder.read_record(src)
                if dst.suffix == ".safetensors":
                    from safetensors.torch import save_file

                    from burnlike.record.codec import data_to_tensor

                    save_file({k: data_to_tensor(d, k, src).contiguous() for k, d in tensors(item)}, str(dst))
                    print(f"wrote {dst} (tensors as stored in the record; pass --model for PyTorch layouts)")
                    return 0
                out = recorder_for(dst, args.precision, args.burn_version)
                if out is None:
                    raise SystemExit(f"error: {dst}: unknown output format")
                written = out.record(_reprecise(item, out.settings), dst, exact_path=True)
                print(f"wrote {written}")
                return 0
        if state is not None:
            if model is None:
                raise SystemExit("error: converting PyTorch weights into a Burn record needs --model "
                                 "(the module tree decides Linear transposes and gamma/beta names)")
            model.load_state_dict(state)
        if dst.suffix == ".safetensors":
            from safetensors.torch import save_file

            save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(dst))
            written = dst
        else:
            out = recorder_for(dst, args.precision, args.burn_version)
            if out is None:
                raise SystemExit(f"error: {dst}: unknown output format")
            written = out.save_module(model, dst)
        print(f"wrote {written}")
        return 0
    except RecordError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def _reprecise(item: Any, settings: Any) -> Any:
    """Re-encode every TensorData of a module record at `settings` (guards as in `storage_dtype`)."""
    from burnlike.record.codec import data_to_tensor, is_tensor_data, storage_dtype, tensor_to_data

    if is_tensor_data(item):
        t = data_to_tensor(item)
        return tensor_to_data(t, storage_dtype(t, settings))
    if isinstance(item, dict):
        return {k: _reprecise(v, settings) for k, v in item.items()}
    if isinstance(item, list):
        return [_reprecise(v, settings) for v in item]
    return item


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="burnlike", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("inspect", help="print a record's metadata and tensor tree (path, dtype, shape, bytes)")
    p.add_argument("file")
    p.add_argument("--model", help="package.module:Class, needed for bincode (.bin) records")
    p.set_defaults(func=cmd_inspect)
    p = sub.add_parser("convert", help="convert between recorders/precisions, safetensors and Lightning .ckpt",
                       description="Examples:\n  burnlike convert model.mpk model.json --precision full\n"
                                   "  burnlike convert weights.safetensors model.mpk --model mypkg.net:Net\n"
                                   "  burnlike convert checkpoint/model-3.mpk model.safetensors --model mypkg.net:Net",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input")
    p.add_argument("output")
    p.add_argument("--precision", choices=sorted(PRECISIONS), default=None,
                   help="precision of the output record (default: full)")
    p.add_argument("--burn-version", default="0.21.0", help="Burn record layout to write (0.19.0 or 0.21.0)")
    p.add_argument("--model", help="package.module:Class (or a config with init()) giving the module tree")
    p.set_defaults(func=cmd_convert)
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
