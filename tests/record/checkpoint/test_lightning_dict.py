"""`burnlike.record.checkpoint.lightning_dict`: Lightning checkpoint dicts as record items, read
back by `load_checkpoint`. Model weights take the recorder's precision while optimizer state and
the ddp_spawn transport keep theirs; `map_location` (str, device, dict of exact location tags,
callable) moves every tensor; snapshots for async saves reuse their buffers. A torch.save file is
read with torch's `weights_only` loader only: a pickle that would run code is never unpickled,
and every refusal says how to convert the file. A callback state keyed by its class (Lightning's
legacy key) reads back under that class when it is loaded; hparams that were an OmegaConf container
read back as one, with its class as `hparams_type`, and any other `hparams_type` as its name."""

from __future__ import annotations

import json
import pathlib
import pickle
import sys
import warnings
from collections import namedtuple
from pathlib import Path
from typing import Any

import lightning as L
import pytest
import torch
from omegaconf import DictConfig, OmegaConf

from burnlike.record import (
    BinFileRecorder,
    CompactRecorder,
    DefaultRecorder,
    PrettyJsonFileRecorder,
    RecorderCheckpointIO,
    RecordError,
    Unstorable,
    load_checkpoint,
    load_from_checkpoint,
)
from burnlike.record.checkpoint.lightning_dict import encode_checkpoint, map_tensors, snapshot_checkpoint
from burnlike.record.checkpoint.value import TAG, ClassName
from tests.record.checkpoint.helpers import Opaque, save_checkpoint
from tests.record.helpers import Tiny, lightning_checkpoint, randomised_params, repack, unpack


class Evil:
    """Unpickled, it creates the file `marker`: proof that loading ran code."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):  # noqa: ANN204
        return (pathlib.Path.touch, (pathlib.Path(self.marker),))


class Payload:
    """A class a weights_only load refuses (a pickle global outside torch's allowlist)."""


def torch_saved(path: Path, obj: Any, legacy: bool = False) -> Path:
    with open(path, "wb") as f:
        torch.save(obj, f, _use_new_zipfile_serialization=not legacy)
    return path


@pytest.fixture
def refused(tmp_path) -> Path:
    return torch_saved(tmp_path / "last.ckpt", {"state_dict": {"w": torch.ones(2)}, "extra": Payload()})


def first_line(path: Path) -> str:
    """The first line of torch's weights_only refusal of `path`."""
    try:
        torch.load(path, weights_only=True)
    except pickle.UnpicklingError as e:
        return str(e).strip().splitlines()[0]
    raise AssertionError("torch loaded it")


def gpu_saved(path: Path) -> Path:
    """A torch.save file whose tensor storage says `cuda:0`, as one saved from a GPU does."""
    data = torch_saved(path, {"state_dict": {"w": torch.arange(3.0)}}, legacy=True).read_bytes()
    cpu = b"X\x03\x00\x00\x00cpu"  # the location string in the legacy pickle (BINUNICODE)
    assert data.count(cpu) == 1
    path.write_bytes(data.replace(cpu, b"X\x06\x00\x00\x00cuda:0"))
    return path


Point = namedtuple("Point", "x y")


def tensors(obj) -> list[torch.Tensor]:
    """Every tensor in a checkpoint, depth first."""
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, dict):
        return [t for v in obj.values() for t in tensors(v)]
    if isinstance(obj, (list, tuple)):
        return [t for v in obj for t in tensors(v)]
    return []


def to_meta(t: torch.Tensor, location: str) -> torch.Tensor:
    assert location == "cpu"  # where a decoded tensor is
    return t.to("meta")


MAP_LOCATIONS = {"str": "meta", "device": torch.device("meta"), "dict": {"cpu": "meta"}, "callable": to_meta}


# --- what a recorder checkpoint stores ---


def test_compact_checkpoint_keeps_optimizer_state_and_spawn_transport_full_precision(tmp_path):
    io = RecorderCheckpointIO(CompactRecorder())
    tiny = torch.tensor([1e-8, 2049.0])
    io.save_checkpoint({"state_dict": {"w": tiny.clone()}, "optimizer_states": [{"exp_avg_sq": tiny.clone()}],
                        "pytorch-lightning_version": "x"}, tmp_path / "c.ckpt")
    back = io.load_checkpoint(tmp_path / "c.ckpt")
    assert back["state_dict"]["w"].dtype == torch.float16 and back["state_dict"]["w"].tolist() == [0.0, 2048.0]
    assert torch.equal(back["optimizer_states"][0]["exp_avg_sq"], tiny)
    io.save_checkpoint({"state_dict": {"w": tiny.clone()}, "pytorch-lightning_version": "x"}, tmp_path / ".temp.ckpt")
    assert torch.equal(io.load_checkpoint(tmp_path / ".temp.ckpt")["state_dict"]["w"], tiny)  # ddp_spawn transport


def test_a_checkpoint_value_that_cannot_be_stored_warns_how_it_reads_back():
    with pytest.warns(UserWarning, match=r"^checkpoint key 'hparams\.fn' holds a .*, which can't be stored without "
                                         r"pickle; it is saved as a marker and reads back as "
                                         r"burnlike\.record\.Unstorable$"):
        encode_checkpoint({"state_dict": {}, "hparams": {"fn": Opaque()}}, DefaultRecorder())


# --- snapshots for async saves ---


def test_a_snapshot_reuses_the_last_snapshots_buffers_where_shape_and_dtype_match():
    ckpt = {"state_dict": {"w": torch.randn(3, 2), "steps": torch.arange(4)}, "epoch": 1}
    first, buffers = snapshot_checkpoint(ckpt)
    assert [b.dtype for b in buffers] == [torch.float32, torch.int64]
    assert buffers[0] is first["state_dict"]["w"] and buffers[1] is first["state_dict"]["steps"]
    ckpt["state_dict"]["w"].add_(1)
    second, again = snapshot_checkpoint(ckpt, buffers)
    assert again[0] is buffers[0] and again[1] is buffers[1]  # the same pages, rewritten
    assert torch.equal(second["state_dict"]["w"], ckpt["state_dict"]["w"])
    assert second["state_dict"]["w"] is not ckpt["state_dict"]["w"]


@pytest.mark.parametrize("other", [torch.zeros(2, 3), torch.zeros(3, 2, dtype=torch.float64)])
def test_a_snapshot_takes_a_fresh_buffer_when_shape_or_dtype_differ(other):
    w = torch.randn(3, 2)
    snap, used = snapshot_checkpoint({"w": w}, [other])
    assert used[0] is not other and used[0].dtype == w.dtype and torch.equal(snap["w"], w)


def test_a_snapshot_is_on_the_cpu_whatever_the_default_device():
    w = torch.arange(4)
    with torch.device("meta"):
        snap, _ = snapshot_checkpoint({"w": w})
    assert snap["w"].device.type == "cpu" and torch.equal(snap["w"], w)


# --- map_location ---


@pytest.mark.parametrize("how", list(MAP_LOCATIONS))
@pytest.mark.parametrize("via", ["load_checkpoint", "plugin"])
def test_map_location_moves_every_tensor(tmp_path, how, via):
    path = tmp_path / "c.ckpt"
    io = RecorderCheckpointIO(CompactRecorder())
    io.save_checkpoint(lightning_checkpoint(randomised_params(Tiny())), path)
    read = load_checkpoint if via == "load_checkpoint" else io.load_checkpoint
    plain = read(path)
    moved = read(path, map_location=MAP_LOCATIONS[how])
    before, after = tensors(plain), tensors(moved)
    assert len(after) == len(before) == 7 and all(t.device.type == "cpu" for t in before)
    assert all(t.device.type == "meta" for t in after)
    assert [(t.shape, t.dtype) for t in after] == [(t.shape, t.dtype) for t in before]
    assert moved["epoch"] == 2 and isinstance(moved["loops"]["pair"], tuple) and moved["loops"]["pair"][1] == "x"


def test_map_location_dict_keys_are_location_tags_matched_exactly(tmp_path):
    """A dict moves a tensor only under its exact location tag ("cpu" here): another device's tag,
    or another spelling, leaves every tensor of the checkpoint where it was, as it was."""
    path = tmp_path / "c.ckpt"
    RecorderCheckpointIO(DefaultRecorder()).save_checkpoint(lightning_checkpoint(Tiny()), path)
    plain = tensors(load_checkpoint(path))
    for unmatched in ({"cuda:0": "meta"}, {"cuda:0": "meta", "CPU": "meta"}):
        kept = tensors(load_checkpoint(path, map_location=unmatched))
        assert len(kept) == len(plain) == 7 and all(t.device.type == "cpu" for t in kept)
        assert all(torch.equal(a, b) for a, b in zip(kept, plain))
    assert all(t.device.type == "meta" for t in tensors(load_checkpoint(path, map_location={"cpu": "meta"})))


@pytest.mark.parametrize("key", ["None", None, "XXcpuXX", "cuda:0"])
def test_a_map_location_dict_without_the_cpu_tag_leaves_tensors_whatever_its_other_keys(tmp_path, key):
    """Decoded tensors are on the CPU, so only a "cpu" entry applies: a key that is not that tag (the
    text "None", None itself, a longer name containing "cpu") moves nothing, and with a "cpu" entry
    too, that entry alone decides."""
    path = save_checkpoint(tmp_path / "last.ckpt", {"w": torch.arange(3.0)})
    kept = load_checkpoint(path, map_location={key: "meta"})["state_dict"]["w"]
    assert kept.device.type == "cpu" and torch.equal(kept, torch.arange(3.0))
    moved = load_checkpoint(path, map_location={key: "cpu", "cpu": "meta"})["state_dict"]["w"]
    assert moved.device.type == "meta"


def test_a_map_location_callable_returning_none_keeps_the_tensor(tmp_path):
    path = save_checkpoint(tmp_path / "last.ckpt", {"w": torch.arange(3.0)})
    w = load_checkpoint(path, map_location=lambda t, location: None)["state_dict"]["w"]
    assert isinstance(w, torch.Tensor) and torch.equal(w, torch.arange(3.0))


def test_map_tensors_keeps_a_named_tuple_as_it_is():
    p = Point(torch.ones(2), 1)
    out = map_tensors({"p": p, "t": (torch.ones(1),)}, lambda t: t * 2)
    assert out["p"] is p and torch.equal(out["t"][0], torch.full((1,), 2.0))


# --- records that are not (valid) checkpoints ---


def test_a_record_that_is_not_a_checkpoint_says_so(tmp_path):
    path = DefaultRecorder().record({"weights": [1, 2]}, tmp_path / "not-ckpt")
    for value in ({"weights": [1, 2]}, [1, 2]):
        DefaultRecorder().record(value, path, exact_path=True)
        with pytest.raises(RecordError) as error:
            load_checkpoint(path)
        assert str(error.value) == f"{path}: not a training checkpoint (no 'state_dict')"


def test_a_checkpoint_with_a_malformed_value_is_named_by_its_file(tmp_path):
    path = DefaultRecorder().record({"state_dict": {}, "loops": {TAG: "tuple", "items": 5}}, tmp_path / "ckpt")
    with pytest.raises(RecordError) as error:
        load_checkpoint(path)
    assert str(error.value).startswith(f"{path}:") and "loops" in str(error.value)


def test_a_checkpoint_nested_deeper_than_python_can_decode_is_a_record_error(tmp_path):
    """JSON parses in C (one level per container); decoding the values takes Python frames: under a
    tight recursion limit the decode is what overflows, and that must be a RecordError, not a crash."""
    nested: list[object] = []
    for _ in range(300):
        nested = [nested]
    recorder = PrettyJsonFileRecorder()
    path = recorder.record({"state_dict": {}}, tmp_path / "deep")
    doc = json.loads(path.read_text())
    doc["item"]["deep"] = nested
    path.write_text(json.dumps(doc))  # C's encoder: no Python frame per level
    depth = 0
    frame = sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    limit = sys.getrecursionlimit()
    # Room for the JSON parse, not for decoding. Up to 3.11 the C parser counts against the limit
    # (300) and decoding takes 2 frames a level; from 3.12 the parser doesn't and, with list
    # comprehensions inlined (PEP 709), decoding takes 1 frame a level.
    sys.setrecursionlimit(depth + (400 if sys.version_info < (3, 12) else 200))
    try:
        with pytest.raises(RecordError) as error:
            load_checkpoint(path, recorder)
    finally:
        sys.setrecursionlimit(limit)
    assert str(error.value) == f"{path}: checkpoint nests too deeply"


# --- torch.save files: read by torch's weights_only loader, never unpickled ---


@pytest.mark.parametrize("how", ["pickle", "torch.save"])
def test_a_pickle_that_would_run_code_is_refused_and_never_unpickled(tmp_path, how):
    marker = tmp_path / "pwned"
    evil = {"state_dict": {"w": Evil(marker)}, "pytorch-lightning_version": "2.6"}
    path = tmp_path / "innocent.ckpt"
    if how == "pickle":
        path.write_bytes(pickle.dumps(evil, protocol=2))
    else:
        torch.save(evil, path)
    with pytest.raises(RecordError, match="burnlike convert") as e:
        RecorderCheckpointIO(DefaultRecorder()).load_checkpoint(path)
    assert str(path) in str(e.value)
    with pytest.raises(RecordError):
        load_checkpoint(path)
    assert not marker.exists()


@pytest.mark.parametrize(("recorder", "name"), [(None, "model.mpk"), (BinFileRecorder(), "model.bin")])
def test_a_refused_torch_file_quotes_the_loaders_first_line_and_how_to_convert(refused, recorder, name):
    with pytest.raises(RecordError) as e:
        load_checkpoint(refused, recorder)
    message = str(e.value)
    assert message.startswith(f"{refused}: a torch.save/pickle file that torch's weights_only loader refuses "
                              "(Weights only load failed. ")
    assert "(1) In PyTorch 2.6" not in message  # only the loader's first line
    assert message.endswith(f"refuses ({first_line(refused)}); it is never unpickled here. If you trust it, keep "
                            f"only its tensors and convert them once: burnlike convert {refused} {name} "
                            "--model pkg.module:Net")
    assert e.value.path == str(refused)


def test_an_environment_forcing_unpickling_does_not_reach_the_loader(refused, monkeypatch):
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")  # torch honours it unless weights_only is passed
    with pytest.raises(RecordError, match="weights_only loader refuses"):
        load_checkpoint(refused)


def test_a_torch_file_with_an_empty_error_is_named_by_the_errors_type(tmp_path):
    whole = torch_saved(tmp_path / "whole.ckpt", {"state_dict": {"w": torch.ones(2)}}, legacy=True).read_bytes()
    path = tmp_path / "cut.ckpt"
    for cut in range(len(whole) - 1, 0, -1):  # a cut where the unpickler hits the end between two pickles
        path.write_bytes(whole[:cut])
        try:
            torch.load(path, weights_only=True)
        except EOFError as e:
            if not str(e).strip():
                break
        except Exception:  # noqa: BLE001, S112 - other cuts fail with a message
            continue
    else:
        pytest.skip("no cut of this torch.save file fails with an empty EOFError")
    with pytest.raises(RecordError, match=r"weights_only loader refuses \(EOFError\); it is never unpickled"):
        load_checkpoint(path)


def test_a_torch_file_without_a_state_dict_is_refused(tmp_path):
    path = torch_saved(tmp_path / "weights.ckpt", {"weight": torch.ones(2)})
    with pytest.raises(RecordError) as e:
        load_checkpoint(path)
    assert str(e.value) == f"{path}: a torch.save file that is not a training checkpoint (no 'state_dict')"
    assert e.value.path == str(path)


def test_a_gpu_saved_torch_checkpoint_loads_on_the_cpu_without_map_location(tmp_path):
    path = gpu_saved(tmp_path / "gpu.ckpt")
    with pytest.warns(UserWarning, match="torch.save checkpoint"):
        w = load_checkpoint(path)["state_dict"]["w"]
    assert w.device.type == "cpu" and torch.equal(w, torch.arange(3.0))


def test_map_location_reaches_torchs_loader(tmp_path):
    path = torch_saved(tmp_path / "last.ckpt", {"state_dict": {"w": torch.ones(2)}})
    with pytest.warns(UserWarning, match="torch.save checkpoint"):
        assert load_checkpoint(path, map_location="meta")["state_dict"]["w"].device.type == "meta"


# --- a callback state keyed by its class (Lightning's legacy state key) ---


class Counter:
    """A callback state key: Lightning keys a legacy callback's state by `type(callback)`."""


def test_callback_states_keyed_by_a_loaded_class_read_back_under_that_class(tmp_path):
    class Local:
        pass

    path = save_checkpoint(tmp_path / "c.ckpt", {}, callbacks={Counter: {"n": 1}, Local: {"n": 2}, "Named": {"n": 3}},
                           other={Counter: 4})
    back = load_checkpoint(path)
    assert back["callbacks"] == {Counter: {"n": 1}, ClassName(__name__, Local.__qualname__): {"n": 2}, "Named": {"n": 3}}
    assert back["other"] == {ClassName(__name__, "Counter"): 4}  # only Lightning's callback states are looked up


class Hooked:
    """An object whose attribute lookups run code (it has no `__dict__` to read)."""

    __slots__ = ()
    looked_up: list[str] = []

    def __getattr__(self, name: str) -> Any:
        Hooked.looked_up.append(name)
        return Counter


HOOKED = Hooked()


@pytest.mark.parametrize("name", [ClassName("burnlike_not_imported_anywhere", "Counter"),
                                  ClassName(__name__, "HOOKED.Counter"),
                                  ClassName(__name__, "Missing"), ClassName(__name__, "torch_saved"),
                                  ClassName("os", "path.join"), ClassName(__name__, "Counter.__module__")])
def test_a_class_key_that_is_no_loaded_class_stays_a_name_and_nothing_is_imported(tmp_path, name):
    path = save_checkpoint(tmp_path / "c.ckpt", {}, callbacks={"x": 1})
    raw = unpack(path)
    raw["item"]["callbacks"] = {TAG: "dict", "items": [[{TAG: "class", "module": name.module,
                                                         "qualname": name.qualname}, 1]]}
    repack(path, raw)
    Hooked.looked_up.clear()  # pytest's collection looks up attributes of module globals
    assert load_checkpoint(path)["callbacks"] == {name: 1}
    assert "burnlike_not_imported_anywhere" not in sys.modules and Hooked.looked_up == []


class KeyedByClass(L.Callback):
    """A callback whose state is keyed by its class, as Lightning's checkpoints before 1.5 were."""

    def __init__(self, state: int) -> None:
        self.state = state

    @property
    def state_key(self) -> Any:
        return type(self)

    def state_dict(self) -> dict[str, Any]:
        return {"state": self.state}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.state = state_dict["state"]


class Line(L.LightningModule):
    """One Linear fitted to zeros, four batches an epoch."""

    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Linear(2, 1)

    def training_step(self, batch: list[torch.Tensor], _: int) -> torch.Tensor:
        return self.net(batch[0]).pow(2).mean()

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self) -> torch.utils.data.DataLoader:
        return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.ones(8, 2)), batch_size=2)


def test_a_legacy_callback_state_keyed_by_its_class_is_restored_on_resume(tmp_path):
    # as Lightning's test_resume_callback_state_saved_by_type_stateful, with the plugin
    model = Line()
    kw: dict[str, Any] = {"default_root_dir": tmp_path, "logger": False, "enable_progress_bar": False,
                          "enable_model_summary": False}
    L.Trainer(max_steps=1, callbacks=[KeyedByClass(111)], plugins=[RecorderCheckpointIO()], **kw).fit(model)
    ckpt = next((tmp_path / "checkpoints").glob("*.ckpt"))
    assert load_checkpoint(ckpt)["callbacks"][KeyedByClass] == {"state": 111}
    callback = KeyedByClass(222)
    L.Trainer(max_steps=2, callbacks=[callback], plugins=[RecorderCheckpointIO()], **kw).fit(model, ckpt_path=ckpt)
    assert callback.state == 111


# --- hparams that are an OmegaConf container (Lightning saves their class as `hparams_type`) ---


@pytest.mark.parametrize(("type_key", "params_key"), [("hparams_type", "hyper_parameters"),
                                                      ("datamodule_hparams_type", "datamodule_hyper_parameters")])
@pytest.mark.parametrize("cfg", [OmegaConf.create({"lr": 0.1, "sub": {"x": [1, 2]}}), OmegaConf.create([1, {"a": 2}])])
def test_omegaconf_hparams_read_back_as_their_container_with_its_class(tmp_path, type_key, params_key, cfg):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the class is stored by name, no marker
        path = save_checkpoint(tmp_path / "c.ckpt", {}, **{params_key: cfg, type_key: type(cfg)})
    back = load_checkpoint(path)
    assert back[type_key] is type(cfg) and type(back[params_key]) is type(cfg) and back[params_key] == cfg


@pytest.mark.parametrize("cls", [Counter, dict])
def test_another_hparams_type_reads_back_as_its_name_which_lightning_takes_for_an_attribute_dict(tmp_path, cls):
    path = save_checkpoint(tmp_path / "c.ckpt", {}, hyper_parameters={"lr": 0.1}, hparams_type=cls)
    back = load_checkpoint(path)
    assert back["hparams_type"] == f"{cls.__module__}.{cls.__qualname__}" and back["hyper_parameters"] == {"lr": 0.1}


def test_omegaconf_hparams_holding_an_unstorable_value_stay_plain_maps(tmp_path):
    cfg = OmegaConf.create({"opt": {"thing": Opaque()}}, flags={"allow_objects": True})
    with pytest.warns(UserWarning, match="hyper_parameters.opt.thing"):
        path = save_checkpoint(tmp_path / "c.ckpt", {}, hyper_parameters=cfg, hparams_type=type(cfg))
    back = load_checkpoint(path)
    assert back["hparams_type"] == "omegaconf.dictconfig.DictConfig"
    assert type(back["hyper_parameters"]) is dict and isinstance(back["hyper_parameters"]["opt"]["thing"], Unstorable)


class Configured(Line):
    """`save_hyperparameters(cfg)` of one OmegaConf config, as a Hydra app does."""

    def __init__(self, cfg: Any) -> None:
        super().__init__()
        self.save_hyperparameters(cfg)
        assert self.hparams.sub.width == 2


def test_a_module_whose_hparams_are_an_omegaconf_config_loads_back_from_the_plugins_checkpoint(tmp_path):
    # Lightning saves `hparams_type` (DictConfig) and calls it on the hparams when it builds the module
    trainer = L.Trainer(max_steps=1, logger=False, enable_progress_bar=False, enable_model_summary=False,
                        default_root_dir=tmp_path, plugins=[RecorderCheckpointIO()])
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="checkpoint key")
        trainer.fit(Configured(OmegaConf.create({"lr": 0.1, "sub": {"width": 2}})))
        trainer.save_checkpoint(tmp_path / "c.ckpt")
    back = load_from_checkpoint(Configured, tmp_path / "c.ckpt")
    assert isinstance(back.hparams, DictConfig) and back.hparams.sub.width == 2 and back.hparams.lr == 0.1


@pytest.mark.stack
def test_the_torch_save_checkpoint_warning_names_the_line_that_loaded_it(tmp_path):
    path = torch_saved(tmp_path / "t.ckpt", {"state_dict": {"w": torch.ones(2)}})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_checkpoint(path)
    assert [Path(w.filename).name for w in caught if "torch.save checkpoint" in str(w.message)] == [Path(__file__).name]
