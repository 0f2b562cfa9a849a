"""`burnlike.data.tensor_tree`: `map_tensors` rebuilds every container kind (dict, list, tuple,
namedtuple) around the mapped tensors and leaves other leaves alone, classes included (a dataclass
type is not an instance to walk into); `tensors` lists the tensors in order."""

from collections import namedtuple

import torch

from burnlike.data.dataset.table import TabularItems
from burnlike.data.tensor_tree import map_tensors, tensors


def test_map_tensors_walks_every_container_kind():
    Pair = namedtuple("Pair", "left right")
    tree = {"pair": Pair(torch.tensor(1), "path.png"), "list": [torch.tensor(2), 3], "tuple": (torch.tensor(4),),
            "plain": 5}
    doubled = map_tensors(lambda t: t * 2, tree)
    assert type(doubled) is dict and type(doubled["pair"]) is Pair and type(doubled["tuple"]) is tuple
    assert doubled["pair"].left.item() == 2 and doubled["pair"].right == "path.png"
    assert doubled["list"][0].item() == 4 and doubled["list"][1] == 3 and doubled["tuple"][0].item() == 8
    assert doubled["plain"] == 5
    assert [t.item() for t in tensors(tree)] == [1, 2, 4]
    assert map_tensors(lambda t: t + 1, Pair) is Pair  # a class is a leaf, even a dataclass one
    assert map_tensors(lambda t: t + 1, TabularItems) is TabularItems
