"""`burnlike.train.metric.pretrained`: reading a metric network's weights from a local file (torch's
weights-only loader or safetensors, never a pickle beyond tensors), checking keys and shapes before
copying anything, and holding the network outside the metric's modules."""

import pickle

import pytest
import torch
from torch import nn

from burnlike.train.metric.pretrained import Held, WeightsError, check, copy_into, read_state_dict, tensors

WHAT = "the test network's weights"


class Payload:
    """An object a plain unpickler would rebuild (and run code for); the weights-only loader refuses it."""


def test_pth_files_old_and_new_are_read_as_cpu_tensors(tmp_path):
    state = {"a": torch.arange(3.0), "b": torch.ones(2, 2)}
    for name, kwargs in (("new.pth", {}), ("old.pt", {"_use_new_zipfile_serialization": False})):
        torch.save(state, tmp_path / name, **kwargs)
        read = read_state_dict(tmp_path / name, WHAT)
        assert read.keys() == state.keys() and all(torch.equal(read[k], state[k]) for k in state)


def test_a_safetensors_file_is_known_by_its_header_whatever_its_name(tmp_path):
    safetensors = pytest.importorskip("safetensors.torch")
    path = tmp_path / "weights.bin"
    safetensors.save_file({"w": torch.ones(2)}, path)
    assert torch.equal(read_state_dict(path, WHAT)["w"], torch.ones(2))
    broken = tmp_path / "broken.safetensors"
    broken.write_bytes(b"\x05\x00\x00\x00\x00\x00\x00\x00{oops")
    with pytest.raises(WeightsError, match=rf"^{broken}: not a valid safetensors file \(.*\); expected {WHAT}$"):
        read_state_dict(broken, WHAT)


def test_files_that_are_not_a_state_dict_of_tensors_name_the_file(tmp_path):
    missing = tmp_path / "absent.pth"
    with pytest.raises(FileNotFoundError, match=rf"^{missing}: no such file \(expected {WHAT}; burnlike never "
                                                r"downloads weights\)$"):
        read_state_dict(missing, WHAT)
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_state_dict(tmp_path, WHAT)  # a folder
    listed = tmp_path / "list.pth"
    torch.save([torch.ones(1)], listed)
    with pytest.raises(WeightsError, match=rf"^{listed}: holds a list, not a state dict of named tensors; "
                                           rf"expected {WHAT}$"):
        read_state_dict(listed, WHAT)
    mixed = tmp_path / "mixed.pth"
    torch.save({"w": torch.ones(1), "epoch": 3}, mixed)
    with pytest.raises(WeightsError, match=rf"^{mixed}: holds a dict, not a state dict of named tensors"):
        read_state_dict(mixed, WHAT)
    pickled = tmp_path / "payload.pth"
    pickled.write_bytes(pickle.dumps({"w": Payload()}, protocol=2))
    with pytest.raises(WeightsError, match=rf"^{pickled}: torch's weights_only loader refused it \(UnpicklingError: "
                                           r"Unsupported global: GLOBAL [\w.]+\.Payload was not an allowed global by "
                                           rf"default\.\); expected {WHAT}$"):
        read_state_dict(pickled, WHAT)


def test_check_lists_a_few_keys_then_counts_the_rest():
    targets = {f"layer{i}.weight": torch.zeros(1) for i in range(8)}
    with pytest.raises(WeightsError, match=r"^f.pth: missing keys 'layer0.weight', 'layer1.weight', 'layer2.weight', "
                                           r"'layer3.weight', 'layer4.weight' and 3 more \(expected x\)$"):
        check(targets, {}, "f.pth", "x")
    with pytest.raises(WeightsError, match=r"^f.pth: missing key 'layer7.weight' \(expected x\)$"):
        check(targets, {k: v for k, v in targets.items() if k != "layer7.weight"}, "f.pth", "x")
    # ignored prefixes and optional suffixes
    check({"a.w": torch.zeros(1), "a.n": torch.zeros(())}, {"a.w": torch.ones(1), "head.w": torch.ones(5)}, "f.pth",
          "x", ignored=("head.",), optional=(".n",))


def test_copy_into_copies_in_place_in_the_targets_dtype():
    net = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    targets = tensors(net)
    assert set(targets) == set(net.state_dict())
    weight = net[0].weight
    state = {k: torch.full(v.shape, 2, dtype=torch.float64 if v.is_floating_point() else v.dtype)
             for k, v in targets.items()}
    check(targets, state, "f.pth", "x")
    copy_into(targets, state)
    assert net[0].weight is weight and torch.equal(weight, torch.full((2, 2), 2.0)) and weight.dtype == torch.float32
    assert int(net[1].num_batches_tracked) == 2


def test_held_freezes_the_network_and_moves_it_to_the_images_device():
    net = nn.Sequential(nn.Linear(2, 2), nn.Dropout())
    held = Held(net)
    assert not net.training and not any(p.requires_grad for p in net.parameters())
    assert held.on(torch.device("cpu")) is net and net[0].weight.device.type == "cpu"
    held.on(torch.device("meta"))
    assert net[0].weight.device.type == "meta"
    buffers_only = Held(nn.BatchNorm1d(2, affine=False))
    buffers_only.on(torch.device("meta"))
    assert buffers_only.module.running_mean.device.type == "meta"
