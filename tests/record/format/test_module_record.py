"""`burnlike.record.format.module_record`: a module to and from Burn's named record item. ParamIds
are Burn's (13 lowercase base32hex characters) and a file's ids, older 10-character ones too, are
kept through a load and a save and through dtype conversions; loading checks the whole item
against the module first, so a missing parameter or module, a wrong length or shape, or a
record of the wrong kind is refused naming the key and the module's class, and leaves the module
as it was."""

from __future__ import annotations

import re

import pytest
import torch
from torch import nn

from burnlike.record import (
    DefaultRecorder,
    NamedMpkFileRecorder,
    RecordError,
)
from burnlike.record.format.module_record import new_param_id
from tests.helpers.records import Net, randomised
from tests.record.helpers import Tiny, Wide, randomised_params, repack, unpack

# --- ParamIds ---


def test_param_ids_are_burns_lowercase_unpadded_base32hex():
    ids = {new_param_id() for _ in range(20)}
    assert len(ids) == 20 and all(re.fullmatch(r"[0-9a-v]{13}", i) for i in ids), ids


def test_param_ids_are_kept_through_a_load_and_save(tmp_path):
    a = randomised(Net())
    first = unpack(a.save_file(tmp_path / "a", DefaultRecorder()))
    b = Net().load_file(tmp_path / "a.mpk", DefaultRecorder())
    second = unpack(b.save_file(tmp_path / "b", DefaultRecorder()))
    assert first["item"] == second["item"]


def test_ten_char_param_ids_are_read_and_written_back_unchanged(tmp_path):
    src = randomised(Net())
    path = src.save_file(tmp_path / "m", DefaultRecorder())
    record = unpack(path)
    record["item"]["embed"]["weight"]["id"] = "0123456789"  # older Burn writes 10-char ParamIds
    repack(path, record)
    dst = Net().load_file(path, DefaultRecorder())
    assert all(torch.equal(a, b) for a, b in zip(src.state_dict().values(), dst.state_dict().values()))
    again = unpack(dst.save_file(tmp_path / "again", DefaultRecorder()))
    assert again["item"]["embed"]["weight"]["id"] == "0123456789"  # the id arrived and is written back
    assert again["item"] == record["item"]  # with every other id and byte


def test_param_ids_are_kept_through_a_dtype_conversion(tmp_path):
    a = randomised(Net())
    first = unpack(a.save_file(tmp_path / "a", DefaultRecorder()))
    a.double().float()  # replaces buffers' tensors
    second = unpack(a.save_file(tmp_path / "b", DefaultRecorder()))
    assert first["item"]["block"]["norm"]["running_mean"]["id"] == second["item"]["block"]["norm"]["running_mean"]["id"]


# --- records that don't fit the module ---


def test_shape_mismatch_names_the_parameter(tmp_path):
    path = randomised(Net()).save_file(tmp_path / "m", DefaultRecorder())
    other = Net()
    other.layers[0] = nn.Linear(4, 6)
    with pytest.raises(RecordError, match=r"layers\.0\.weight"):
        other.load_file(path, DefaultRecorder())


def test_a_bad_record_leaves_the_module_untouched(tmp_path):
    torch.manual_seed(0)
    path = DefaultRecorder().save_module(Wide(), tmp_path / "wide")
    record = unpack(path)
    record["item"]["c"]["weight"]["param"]["shape"] = [4, 300]  # the last weight is wrong
    repack(path, record)
    model = Wide()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(RecordError, match=r"c\.weight"):
        DefaultRecorder().load_module(model, path)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


@pytest.mark.parametrize(("module", "field", "how"), [("linear", "bias", "deleted"), ("linear", "bias", "nil"),
                                                      ("norm", "beta", "deleted"), ("linear", "weight", "nil")])
def test_a_record_missing_a_parameter_fails_naming_it_and_loads_nothing(tmp_path, module, field, how):
    path = randomised_params(Tiny()).save_file(tmp_path / "m", DefaultRecorder())
    record = unpack(path)
    if how == "deleted":
        del record["item"][module][field]
    else:
        record["item"][module][field] = None
    repack(path, record)
    dst = randomised_params(Tiny(), seed=1)
    before = {k: v.clone() for k, v in dst.state_dict().items()}
    owner = type(getattr(dst, module)).__name__  # the message names the module's own class
    with pytest.raises(RecordError, match=rf"at '{module}\.{field}'.*missing parameter for {owner}\."):
        dst.load_file(path, DefaultRecorder())
    assert all(torch.equal(before[k], v) for k, v in dst.state_dict().items())  # no partial load


def test_a_record_missing_a_whole_module_fails_naming_it(tmp_path):
    path = randomised_params(Tiny()).save_file(tmp_path / "m", DefaultRecorder())
    record = unpack(path)
    del record["item"]["norm"]
    repack(path, record)
    with pytest.raises(RecordError, match=r"at 'norm'.*missing module record for LayerNorm"):
        Tiny().load_file(path, DefaultRecorder())


def test_a_module_list_recorded_with_the_wrong_length_is_named_with_its_class(tmp_path):
    class ModuleListStack(nn.Module):
        def __init__(self, n: int) -> None:
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(n)])

    path = DefaultRecorder().save_module(ModuleListStack(2), tmp_path / "m")
    with pytest.raises(RecordError) as error:
        DefaultRecorder().load_module(ModuleListStack(3), path)
    assert "expected a list of 3 module records for ModuleList" in str(error.value)


def test_a_module_whose_record_is_not_a_map_is_named_by_its_class(tmp_path):
    """A Linear whose record is a list, not a map: the error names the Linear (walker passes the
    module to `struct`), not the list."""

    class OneLinear(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(2, 2)

    path = NamedMpkFileRecorder().save_module(OneLinear(), tmp_path / "m")
    record = unpack(path)
    record["item"]["fc"] = [1, 2]
    repack(path, record)
    with pytest.raises(RecordError) as error:
        NamedMpkFileRecorder().load_module(OneLinear(), path)
    assert "expected a map for Linear, got list" in str(error.value)


def test_a_parameter_recorded_without_its_param_field_names_the_file_and_key(tmp_path):
    path = randomised_params(Tiny()).save_file(tmp_path / "m", DefaultRecorder())
    record = unpack(path)
    del record["item"]["linear"]["weight"]["param"]
    repack(path, record)
    with pytest.raises(RecordError) as error:
        Tiny().load_file(path, DefaultRecorder())
    assert (error.value.path, error.value.key) == (str(path), "linear.weight")
    assert error.value.detail == "expected ParamSerde {id, param}"
