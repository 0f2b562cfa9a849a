"""Sharded checkpoints in Burn's encoding: a `torch.distributed.checkpoint` (DCP) storage.

Each rank's shard is one record of the recorder's format (`shard-<rank>.mpk`: MessagePack
TensorData), model weights at the recorder's precision (f16 for `CompactRecorder`, where the values
fit: `storage_dtype` never corrupts one), optimizer state, integers and everything else at full
precision; the checkpoint's metadata (which chunk of which tensor is where) is a record too, never
a pickle. Paths are local folders or any fsspec URL: local files are written to a temp file and
renamed, object stores get one complete object per put.

DCP does the rest: the planners decide what each rank writes (a DTensor's local shard, a replicated
value once) and what each rank reads, so a checkpoint saved by N processes loads into M, each
reading the chunks it needs and copying them into its own shards (resharding).

    from torch.distributed.checkpoint import load, save
    save(state, storage_writer=CompactStorageWriter(url), planner=CompactSavePlanner())
    load(state, storage_reader=CompactStorageReader(url), planner=CompactLoadPlanner())

Plain values (the loops' counters, epochs, a learning rate) are stored as themselves: DCP's default
planners would `torch.save` them (a pickle) and unpickle them on load; the planners here don't.
"""

from __future__ import annotations

import dataclasses
import io
import os
import uuid
from collections import defaultdict
from collections.abc import Callable
from functools import partial
from typing import Any

import torch
from torch.distributed.checkpoint._traverse import set_element
from torch.distributed.checkpoint.default_planner import DefaultLoadPlanner, DefaultSavePlanner
from torch.distributed.checkpoint.metadata import (
    BytesStorageMetadata,
    ChunkStorageMetadata,
    Metadata,
    MetadataIndex,
    StorageMeta,
    TensorProperties,
    TensorStorageMetadata,
)
from torch.distributed.checkpoint.planner import (
    LoadItemType,
    LoadPlan,
    LoadPlanner,
    ReadItem,
    SavePlan,
    SavePlanner,
    WriteItem,
    WriteItemType,
)
from torch.distributed.checkpoint.storage import StorageReader, StorageWriter, WriteResult
from torch.futures import Future

from burnlike.record.checkpoint.shard_folder import (
    FORMAT,
    METADATA,
    TRAINING_STATE,
    metadata_path,
    read_training_state,
    shard_name,
)
from burnlike.record.checkpoint.value import TAG, decode_value, encode_value
from burnlike.record.error import RecordError
from burnlike.record.format.location import AnyPath, as_path
from burnlike.record.format.named_mpk import CompactRecorder
from burnlike.record.format.recorder import Recorder
from burnlike.record.tensor.file_slice import FileSlice
from burnlike.record.tensor.precision import PrecisionSettings, storage_dtype, target_dtype
from burnlike.record.tensor.tensor_data import check_data, tensor_to_data
from burnlike.record.tensor.transfer import Transfers

WEIGHT_PREFIXES = ("model.", "state_dict.", "module.")  # the model's weights in the state dicts Lightning saves


def _weight_dtype(tensor: torch.Tensor, peak: int | None, settings: PrecisionSettings | None) -> torch.dtype:
    """The dtype a weight is stored at: the recorder's precision unless its values need more."""
    return storage_dtype(tensor, settings, peak)


class CompactStorageWriter(StorageWriter):
    """DCP's storage writer for `path` (a folder, local or at any fsspec URL) in `recorder`'s format
    (CompactRecorder: f16 weights, full-precision optimizer state)."""

    def __init__(self, path: str | os.PathLike[str] | AnyPath, recorder: Recorder | None = None) -> None:
        super().__init__()
        self.path = as_path(path)
        self.recorder = recorder or CompactRecorder()
        self.is_coordinator = False

    def reset(self, checkpoint_id: str | os.PathLike[str] | None = None) -> None:
        if checkpoint_id is not None:
            self.path = as_path(checkpoint_id)

    def set_up_storage_writer(self, is_coordinator: bool, *args: Any, **kwargs: Any) -> None:
        self.is_coordinator = is_coordinator

    def prepare_local_plan(self, plan: SavePlan) -> SavePlan:
        self.path.mkdir(parents=True, exist_ok=True)
        return plan

    def prepare_global_plan(self, plans: list[SavePlan]) -> list[SavePlan]:
        """Each rank's plan names its file."""
        extension = self.recorder.file_extension()
        return [dataclasses.replace(plan, storage_data=shard_name(i, extension)) for i, plan in enumerate(plans)]

    def write_data(self, plan: SavePlan, planner: SavePlanner) -> Future[list[WriteResult]]:
        file = str(plan.storage_data)
        entries: dict[str, Any] = {}
        results: list[WriteResult] = []
        settings = self.recorder.settings
        for item in plan.items:
            offset = item.index.offset
            key = item.index.fqn  # a chunk of a sharded tensor: its offsets too
            if offset is not None and any(offset):
                key += "@" + ",".join(map(str, offset))
            if item.type == WriteItemType.BYTE_IO:  # a plain value: stored as itself, never pickled
                lookup = getattr(planner, "lookup_object", None)
                if not callable(lookup):
                    raise RecordError(f"{type(planner).__name__} can't hand over {item.index.fqn!r} unpickled; "
                                      "save with CompactSavePlanner (or DCP's DefaultSavePlanner)", str(self.path))
                entries[key] = encode_value(lookup(item.index), _own_dtype, key)
                size = 0
            else:
                tensor = planner.resolve_data(item).detach().cpu().contiguous()  # type: ignore[union-attr]
                target = tensor.dtype
                if settings is not None and tensor.is_floating_point() and item.index.fqn.startswith(WEIGHT_PREFIXES):
                    target = target_dtype(tensor, settings)  # weights only: the recorder's precision
                # the cast, and the check that f16 holds the values, happen as the recorder writes
                decide = partial(_weight_dtype, settings=settings) if target != tensor.dtype else None
                entries[key] = {TAG: "tensor", "data": tensor_to_data(tensor, target, lazy=True, decide=decide)}
                size = tensor.numel() * target.itemsize  # the likely size (a weight f16 can't hold stays wider)
            results.append(WriteResult(index=item.index, size_in_bytes=size, storage_data=[file, key]))
        self.recorder.record(entries, self.path / file, exact_path=True, durable=True)
        future: Future[list[WriteResult]] = Future()
        future.set_result(results)
        return future

    def finish(self, metadata: Metadata, results: list[list[WriteResult]]) -> None:
        """The metadata, written last: a folder without it is no checkpoint (a save cut short)."""
        storage = [[*_index(r.index), *r.storage_data] for rank in results for r in rank]
        record = {"format": FORMAT, "tensors": {}, "bytes": [], "storage": storage,
                  "planner_data": metadata.planner_data}
        for fqn, meta in metadata.state_dict_metadata.items():
            if isinstance(meta, BytesStorageMetadata):
                record["bytes"].append(fqn)
            else:
                record["tensors"][fqn] = {"dtype": str(meta.properties.dtype).removeprefix("torch."),
                                          "size": list(meta.size),
                                          "chunks": [[list(c.offsets), list(c.sizes)] for c in meta.chunks]}
        self.recorder.record(encode_value(record, _own_dtype), metadata_path(self.path, self.recorder),
                             exact_path=True, durable=True)

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id: str | os.PathLike[str]) -> bool:
        return isinstance(checkpoint_id, (str, os.PathLike))

    def storage_meta(self) -> StorageMeta | None:
        return StorageMeta(checkpoint_id=str(self.path), save_id=uuid.uuid4().hex)


class CompactStorageReader(StorageReader):
    """DCP's storage reader for a folder `CompactStorageWriter` wrote (any recorder's format: the
    metadata file says which)."""

    def __init__(self, path: str | os.PathLike[str] | AnyPath, recorder: Recorder | None = None) -> None:
        super().__init__()
        self.path = as_path(path)
        self.recorder = recorder
        self.storage: dict[MetadataIndex, tuple[str, str]] = {}

    def reset(self, checkpoint_id: str | os.PathLike[str] | None = None) -> None:
        if checkpoint_id is not None:
            self.path = as_path(checkpoint_id)

    def _metadata_file(self) -> AnyPath:
        if self.recorder is not None:
            return metadata_path(self.path, self.recorder)
        found = [p for p in self.path.iterdir() if p.name.startswith(METADATA + ".")] if self.path.is_dir() else []
        if not found:
            raise RecordError(f"no sharded checkpoint here (expected its {METADATA}.<ext> file)", str(self.path))
        return found[0]

    def _recorder_of(self, path: AnyPath) -> Recorder:
        from burnlike.record.format import registry

        return self.recorder or registry.sniff(path)

    def read_metadata(self, *args: Any, **kwargs: Any) -> Metadata:
        file = self._metadata_file()
        record = decode_value(self._recorder_of(file).load(file), str(file))
        if not isinstance(record, dict) or record.get("format") != FORMAT:
            raise RecordError(f"not a sharded checkpoint's metadata (expected format {FORMAT!r})", str(file))
        try:
            state: dict[str, TensorStorageMetadata | BytesStorageMetadata] = {
                fqn: BytesStorageMetadata() for fqn in record["bytes"]}
            for fqn, meta in record["tensors"].items():
                dtype = getattr(torch, str(meta["dtype"]))
                if not isinstance(dtype, torch.dtype):
                    raise TypeError(f"{meta['dtype']!r} is no torch dtype")
                state[fqn] = TensorStorageMetadata(
                    TensorProperties(dtype=dtype), torch.Size(meta["size"]),
                    [ChunkStorageMetadata(torch.Size(o), torch.Size(s)) for o, s in meta["chunks"]])
            storage = {MetadataIndex(fqn, None if offset is None else torch.Size(offset), index): (file_, key)
                       for fqn, offset, index, file_, key in record["storage"]}
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise RecordError(f"malformed sharded-checkpoint metadata ({type(e).__name__}: {e})", str(file)) from None
        return Metadata(state_dict_metadata=state, planner_data=record.get("planner_data"),
                        storage_data=storage)

    def set_up_storage_reader(self, metadata: Metadata, is_coordinator: bool, *args: Any, **kwargs: Any) -> None:
        self.storage = metadata.storage_data

    def prepare_local_plan(self, plan: LoadPlan) -> LoadPlan:
        return plan

    def prepare_global_plan(self, plans: list[LoadPlan]) -> list[LoadPlan]:
        return plans

    def read_data(self, plan: LoadPlan, planner: LoadPlanner) -> Future[None]:
        """Each file this rank needs is read once; each item's chunk is cut out of the stored one
        and copied into the rank's own tensor (casting back from the stored precision)."""
        by_file: dict[str, list[Any]] = defaultdict(list)
        for item in plan.items:
            file, _ = self.storage[item.storage_index]
            by_file[file].append(item)
        for file, items in by_file.items():
            path = self.path / file
            with self._recorder_of(path).scan(path) as (_, entries):  # only the entries asked for are read
                if not isinstance(entries, dict) or TAG in entries:
                    raise RecordError("a shard file's item must be a map of entries", str(path))
                self._read_items(path, entries, items, planner)
        future: Future[None] = Future()
        future.set_result(None)
        return future

    def _read_items(self, path: AnyPath, entries: dict[str, Any], items: list[ReadItem], planner: LoadPlanner) -> None:
        """Each item's stored value decoded and handed to the planner. A stored tensor that is the
        whole of a CPU target (a resume at the same process count) goes from the file into it the way
        a module record's weights do (`Transfers`: in parts, straight into the target when the dtypes
        match, no tensor-sized buffer); any other is read, cut to the item's chunk and copied."""
        transfers, whole = Transfers(), []
        for item in items:
            _, key = self.storage[item.storage_index]
            if key not in entries:
                raise RecordError(f"no entry {key!r} for {item.storage_index.fqn!r}", str(path))
            if item.type == LoadItemType.BYTE_IO:
                if not isinstance(planner, CompactLoadPlanner):
                    raise RecordError(f"{item.storage_index.fqn!r} is a plain value: load with "
                                      "CompactLoadPlanner (DCP's default one would unpickle it)", str(path))
                planner.load_value(item, decode_value(entries[key], str(path), key))
                continue
            target = planner.resolve_tensor(item).detach()
            stored = _whole_in_file(entries[key], key, path, item, target)
            if stored is not None:
                transfers.add(target, *stored, transpose=False)
                whole.append((item, target))
                continue
            chunk = decode_value(entries[key], str(path), key)
            for dim, (offset, length) in enumerate(zip(item.storage_offsets, item.lengths)):
                chunk = chunk.narrow(dim, offset, length)
            if target.shape != chunk.shape:
                raise RecordError(f"chunk {key} of {item.storage_index.fqn} has shape {list(chunk.shape)}, "
                                  f"expected {list(target.shape)}", str(path))
            if target.device != chunk.device:  # move the stored bytes (f16: half), cast on the device
                chunk = chunk.to(target.device)
            target.copy_(chunk)
            planner.commit_tensor(item, target)
        transfers.run()
        for item, target in whole:
            planner.commit_tensor(item, target)

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id: str | os.PathLike[str]) -> bool:
        return isinstance(checkpoint_id, (str, os.PathLike))


def _whole_in_file(entry: Any, key: str, path: AnyPath, item: ReadItem, target: torch.Tensor
                   ) -> tuple[FileSlice, torch.dtype, list[int]] | None:
    """A stored tensor still in the file that is all of `item` and of its CPU `target`: its bytes,
    dtype and shape; None for anything else."""
    if not (isinstance(entry, dict) and entry.get(TAG) == "tensor"):
        return None
    raw, dtype, shape = check_data(entry.get("data"), key, str(path))
    if (not isinstance(raw, FileSlice) or any(item.storage_offsets) or list(item.lengths) != shape
            or target.device.type != "cpu" or list(target.shape) != shape):
        return None
    return raw, dtype, shape


class CompactSavePlanner(DefaultSavePlanner):
    """DCP's default save planning; plain values (ints, lists, the loops' counters) go to the writer
    as they are, not as `torch.save` bytes."""

    def transform_object(self, write_item: WriteItem, object: Any) -> Any:
        return object


class CompactLoadPlanner(DefaultLoadPlanner):
    """DCP's default load planning, and plain values set from the record, never unpickled."""

    def load_value(self, read_item: ReadItem, value: Any) -> None:
        if self.flatten_state_dict:
            set_element(self.original_state_dict, self.mappings[read_item.dest_index.fqn], value)
        else:
            self.state_dict[read_item.dest_index.fqn] = value

    def load_bytes(self, read_item: ReadItem, value: io.BytesIO) -> None:
        raise RecordError(f"{read_item.dest_index.fqn!r}: this format stores no pickled bytes")


def _own_dtype(key: str, t: torch.Tensor) -> torch.dtype:
    return t.dtype  # the writer has already cast what the policy casts


def _index(index: MetadataIndex) -> list[Any]:
    return [index.fqn, None if index.offset is None else list(index.offset), index.index]


MODEL_PREFIX = "state_dict.model."  # the Burn model's weights in a burnlike training checkpoint


def _flat_values(folder: AnyPath, wanted: Callable[[str], bool] = lambda fqn: True) -> dict[str, Any]:
    """The values DCP stored under flat keys `wanted` says, in one process (no process group): each
    tensor put back together from its shards at its saved dtype (a shard stored at f16 is widened
    back), each plain value as stored."""
    reader = CompactStorageReader(folder)
    metadata = reader.read_metadata()
    out: dict[str, Any] = {fqn: torch.zeros(tuple(meta.size), dtype=meta.properties.dtype)
                           for fqn, meta in metadata.state_dict_metadata.items()
                           if wanted(fqn) and isinstance(meta, TensorStorageMetadata)}
    files: dict[str, dict[str, Any]] = {}
    for index, (file, key) in (metadata.storage_data or {}).items():
        if not wanted(index.fqn):
            continue
        if file not in files:
            entries = decode_value(reader._recorder_of(folder / file).load(folder / file), str(folder / file))
            if not isinstance(entries, dict):
                raise RecordError("a shard must be a map of its chunks", str(folder / file))
            files[file] = entries
        if key not in files[file]:
            raise RecordError(f"shard {file} has no entry {key!r} (the metadata names it)", str(folder))
        stored = files[file][key]
        target = out.get(index.fqn)
        if target is None:  # a plain value (BytesStorageMetadata)
            out[index.fqn] = stored
            continue
        if not isinstance(stored, torch.Tensor):
            raise RecordError(f"shard {file} has no tensor {key!r} (the metadata names it)", str(folder))
        offset = tuple(index.offset) if index.offset is not None else (0,) * target.dim()
        region = target
        for dim, (start, length) in enumerate(zip(offset, stored.shape)):
            region = region.narrow(dim, start, length)
        region.copy_(stored)
    return out


def whole_tensors(path: str | os.PathLike[str] | AnyPath, prefix: str = MODEL_PREFIX) -> dict[str, torch.Tensor]:
    """The tensors under `prefix` (stripped), each put back together from its shards in one
    process (no process group): what `burnlike consolidate` writes as `model-N`. Values keep the
    saved dtype (a shard stored at f16 is widened back)."""
    values = _flat_values(as_path(path), lambda fqn: fqn.startswith(prefix))
    return {fqn[len(prefix):]: t for fqn, t in values.items() if isinstance(t, torch.Tensor)}


def whole_state(path: str | os.PathLike[str] | AnyPath) -> dict[str, Any]:
    """Everything a sharded checkpoint's shards hold, whole, in the nested layout it was saved in
    (DCP's flattening undone with the metadata's planner data): for a training checkpoint
    `{"state_dict": {name: tensor}, "optimizer_0": optimizer state by parameter name, ...}`."""
    folder = as_path(path)
    mappings = CompactStorageReader(folder).read_metadata().planner_data
    nested: dict[str, Any] = {}
    for fqn, value in _flat_values(folder).items():
        where = mappings.get(fqn) if isinstance(mappings, dict) else None
        set_element(nested, tuple(where) if isinstance(where, (list, tuple)) else (fqn,), value)
    return nested


def gathered_checkpoint(path: str | os.PathLike[str] | AnyPath) -> dict[str, Any]:
    """A sharded training checkpoint as a single process saves one (what a one-device or DDP fit
    resumes from, and `burnlike consolidate --checkpoint` writes): the training state with the whole
    `state_dict` and each optimizer's whole state, by parameter index as `Optimizer.state_dict()`
    has it (the shards key it by parameter name)."""
    folder = as_path(path)
    state = whole_state(folder)
    checkpoint = read_training_state(folder)
    checkpoint["state_dict"] = state.get("state_dict", {})
    count = sum(1 for key in state if key.startswith("optimizer_"))
    checkpoint["optimizer_states"] = [_by_index(state.get(f"optimizer_{i}"), folder, i) for i in range(count)]
    return checkpoint


def _by_index(optimizer: Any, folder: AnyPath, i: int) -> dict[str, Any]:
    """An optimizer state keyed by parameter name (torch's `get_optimizer_state_dict`) keyed by
    each parameter's index over the param groups, as the optimizer's own `state_dict` is."""
    groups = optimizer.get("param_groups") if isinstance(optimizer, dict) else None
    if not isinstance(groups, list) or not all(isinstance(g, dict) for g in groups):
        raise RecordError("expected an optimizer state with its param groups", str(folder), f"optimizer_{i}")
    names = [name for group in groups for name in group.get("params", [])]
    index = {name: n for n, name in enumerate(names)}
    state = optimizer.get("state") or {}
    unknown = sorted(str(name) for name in state if name not in index)
    if unknown:
        raise RecordError(f"optimizer state for parameters no param group lists: {unknown[:3]}", str(folder),
                          f"optimizer_{i}.state")
    numbered, start = [], 0
    for group in groups:
        size = len(group.get("params", []))
        numbered.append({**group, "params": list(range(start, start + size))})
        start += size
    return {"state": {index[name]: value for name, value in state.items()}, "param_groups": numbered}


def describe(path: str | os.PathLike[str] | AnyPath) -> list[str]:
    """What `burnlike inspect` prints for a sharded checkpoint: its files, each tensor's global
    shape, saved dtype, shard count and stored bytes, and the plain values' keys."""
    folder = as_path(path)
    reader = CompactStorageReader(folder)
    metadata = reader.read_metadata()
    storage = metadata.storage_data or {}
    sizes: dict[str, int] = defaultdict(int)
    files: set[str] = set()
    stored_dtype: dict[str, str] = {}
    by_file: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for index, (file, key) in storage.items():
        files.add(file)
        if isinstance(metadata.state_dict_metadata.get(index.fqn), TensorStorageMetadata):
            by_file[file].append((index.fqn, key))
    for file, keys in by_file.items():  # the files' structure only: no tensor's bytes are read
        path = folder / file
        with reader._recorder_of(path).scan(path) as (_, entries):
            for fqn, key in keys:
                entry = entries.get(key) if isinstance(entries, dict) else None
                if isinstance(entry, dict) and entry.get(TAG) == "tensor":
                    raw, dtype, _ = check_data(entry.get("data"), key, str(path))
                    sizes[fqn] += len(raw)
                    stored_dtype[fqn] = str(dtype).removeprefix("torch.")
    lines = [f"{folder}: sharded checkpoint ({FORMAT}), {len(files)} shard files: {', '.join(sorted(files))}"]
    tensors = {k: m for k, m in metadata.state_dict_metadata.items() if isinstance(m, TensorStorageMetadata)}
    lines.append(f"  {len(tensors)} tensors:")
    for fqn, meta in sorted(tensors.items()):
        lines.append(f"    {fqn:<50} {stored_dtype.get(fqn, '?'):<8} {str(list(meta.size)):<18} "
                     f"{len(meta.chunks):>3} shards {sizes[fqn]:>12,} B")
    lines.append(f"  tensor bytes: {sum(sizes.values()):,}")
    values = sorted(k for k, m in metadata.state_dict_metadata.items() if isinstance(m, BytesStorageMetadata))
    if values:
        lines.append(f"  {len(values)} values: {', '.join(values)}")
    state = [p for p in folder.iterdir() if p.name.startswith(TRAINING_STATE + ".")]
    if state:
        lines.append(f"  training state ({state[0].name}): {', '.join(str(k) for k in read_training_state(folder))}")
    return lines
