"""`burnlike.module`: `Module`, Burn's `Module` trait on a `torch.nn.Module`: `map(mapper)` and
`visit(visitor)` over the record's tensors with Burn's ParamIds and enter/exit calls, the parameter
count as Burn counts it, `valid()` as a frozen inference copy, `no_grad()`, and the devices."""

import pytest
import torch
from torch import nn

from burnlike.module import Module, ModuleMapper, ModuleVisitor, Param, map_module, visit_module


def test_module_counts_params_valid_is_a_frozen_copy_and_lists_devices():
    class Net(Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 2)
            self.drop = nn.Dropout(0.5)

    net = Net()
    assert net.num_params() == 8
    inference = net.valid()
    assert inference is not net and not inference.training and net.training  # Burn's valid() is a copy
    assert not any(p.requires_grad for p in inference.parameters())
    assert all(p.requires_grad for p in net.parameters())
    assert net.devices() == [torch.device("cpu")]


class Critic(Module):
    """A small critic in the shape of Burn's wgan example's (examples/wgan/src/model.rs): linear
    layers, a leaky ReLU, a batch norm (its running statistics are Burn `RunningState`s)."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 5)
        self.bn = nn.BatchNorm1d(5)
        self.act = nn.LeakyReLU(0.2)
        self.blocks = nn.ModuleList([nn.Linear(5, 4), nn.Linear(4, 1, bias=False)])

    def forward(self, x):
        x = self.act(self.bn(self.fc1(x)))
        for block in self.blocks:
            x = block(x)
        return x


class Clip(ModuleMapper):
    """wgan's `Clip` mapper, line for line (examples/wgan/src/model.rs, v0.21.0)."""

    def __init__(self, min: float, max: float):
        self.min, self.max = min, max

    def map_float(self, param: Param) -> Param:
        id, tensor, mapper = param.consume()
        is_require_grad = tensor.requires_grad
        tensor = tensor.detach().clamp(self.min, self.max)  # Tensor::from_inner(tensor.inner().clamp(..))
        if is_require_grad:
            tensor = tensor.requires_grad_()
        return Param.from_mapped_value(id, tensor, mapper)


def spread(model: nn.Module) -> nn.Module:
    """Every float tensor of `model` (running statistics too) spread over [-2, 2], past the clip bounds."""
    with torch.no_grad():
        for t in [*model.parameters(), *(b for b in model.buffers() if b.is_floating_point())]:
            t.copy_(torch.linspace(-2, 2, t.numel()).reshape(t.shape))
    return model


def test_map_clips_every_float_tensor_as_wgans_clip_mapper_does():
    """Acceptance: `critic.map(&mut Clip { min, max })` clamps each weight: min(max(x, min), max)
    element by element; the parameters stay the ones an optimizer holds, trainable."""
    torch.manual_seed(0)
    critic = spread(Critic())
    before = {name: t.clone() for name, t in critic.state_dict().items() if t.is_floating_point()}
    optimizer = torch.optim.RMSprop(critic.parameters(), lr=5e-5)
    params = list(critic.parameters())
    assert critic.map(Clip(-0.01, 0.01)) is critic
    after = {name: t.clone() for name, t in critic.state_dict().items()}
    for name, x in before.items():
        expected = torch.where(x < -0.01, torch.full_like(x, -0.01), torch.where(x > 0.01, torch.full_like(x, 0.01), x))
        assert torch.equal(after[name], expected), name
    assert {"bn.running_mean", "bn.running_var"} <= set(before)  # Burn maps its RunningStates too
    assert [p for p in critic.parameters()] == params and all(p.requires_grad for p in params)
    critic(torch.randn(8, 6)).mean().backward()
    optimizer.step()
    assert not torch.equal(critic.fc1.weight, after["fc1.weight"])  # the optimizer still trains them


class Events(ModuleVisitor):
    def __init__(self):
        self.events = []

    def enter_module(self, name, container_type):
        self.events.append(("enter", name, container_type))

    def exit_module(self, name, container_type):
        self.events.append(("exit", name, container_type))

    def visit_float(self, param):
        self.events.append(("float", param.id, tuple(param.val().shape)))

    def visit_int(self, param):
        self.events.append(("int", param.id, tuple(param.val().shape)))

    def visit_bool(self, param):
        self.events.append(("bool", param.id, tuple(param.val().shape)))


def test_visit_enters_and_exits_each_field_as_burns_derive_and_gives_the_records_param_ids():
    """burn-derive module/codegen_struct.rs: `enter_module(field, "Struct:<the struct>")` around each
    field holding parameters (stateless ones, like the activation, are not entered), `"Vec"` with the
    index around each list entry (burn-core module/param/primitive.rs); an absent `Option<Param>` is
    entered and left. Each tensor comes with the ParamId the module's record has."""
    critic = Critic()
    record = critic.into_record()
    events = Events()
    critic.visit(events)

    def pid(*path):
        node = record
        for key in path:
            node = node[int(key)] if isinstance(node, list) else node[key]
        return node["id"]

    def param(struct, name, path, shape):
        return [("enter", name, f"Struct:{struct}"), ("float", pid(*path), shape), ("exit", name, f"Struct:{struct}")]

    assert events.events == [
        ("enter", "fc1", "Struct:Critic"),
        *param("Linear", "weight", ("fc1", "weight"), (5, 6)), *param("Linear", "bias", ("fc1", "bias"), (5,)),
        ("exit", "fc1", "Struct:Critic"),
        ("enter", "bn", "Struct:Critic"),
        *param("BatchNorm1d", "gamma", ("bn", "gamma"), (5,)), *param("BatchNorm1d", "beta", ("bn", "beta"), (5,)),
        *param("BatchNorm1d", "running_mean", ("bn", "running_mean"), (5,)),
        *param("BatchNorm1d", "running_var", ("bn", "running_var"), (5,)),
        ("exit", "bn", "Struct:Critic"),
        ("enter", "blocks", "Struct:Critic"),
        ("enter", "0", "Vec"),
        *param("Linear", "weight", ("blocks", 0, "weight"), (4, 5)), *param("Linear", "bias", ("blocks", 0, "bias"), (4,)),
        ("exit", "0", "Vec"),
        ("enter", "1", "Vec"),
        *param("Linear", "weight", ("blocks", 1, "weight"), (1, 4)),
        ("enter", "bias", "Struct:Linear"), ("exit", "bias", "Struct:Linear"),
        ("exit", "1", "Vec"),
        ("exit", "blocks", "Struct:Critic"),
    ]


def test_visit_and_map_dispatch_by_dtype_for_any_nn_module():
    class Counters(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("steps", torch.tensor([3, 4]))
            self.register_buffer("mask", torch.tensor([True, False]))
            self.weight = nn.Parameter(torch.ones(2))

    class Double(ModuleMapper):
        def map_int(self, param):
            return param.map(lambda t: t * 2)

        def map_bool(self, param):
            return param.map(torch.logical_not)

        def map_float(self, param):
            return Param.from_mapped_value(param.id, param.val().double())  # another dtype: replaces the data

    module = Counters()
    weight = module.weight
    events = Events()
    visit_module(module, events)
    assert [e[0] for e in events.events if e[0] not in ("enter", "exit")] == ["float", "int", "bool"]
    assert map_module(module, Double()) is module
    assert module.steps.tolist() == [6, 8] and module.mask.tolist() == [False, True]
    assert module.weight is weight and module.weight.dtype == torch.float64 and module.weight.requires_grad


def test_a_mapper_returning_something_else_than_a_param_is_named():
    class Wrong(ModuleMapper):
        def map_float(self, param):
            return param.val()

    with pytest.raises(TypeError, match=r"^Wrong\.map_float must return a Param \(Param\.from_mapped_value\(id, "
                                        r"tensor, mapper\)\), got Parameter for 'fc1\.weight'$"):
        Critic().map(Wrong())


def test_num_params_counts_as_burn_running_statistics_included():
    """Burn's `num_params` visits every float `Param` and `RunningState`: a BatchNorm of 5 counts
    gamma, beta, running mean and variance (torch's `parameters()` counts 10)."""
    critic = Critic()
    assert critic.num_params() == (6 * 5 + 5) + 4 * 5 + (5 * 4 + 4) + 4


def test_valid_disables_dropout_so_a_forward_is_deterministic():
    """Acceptance: `model.valid()` is Burn's inner module: dropout off, the same output every time,
    the dropout-free output; the training model's dropout still drops."""

    class Dropped(Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(64, 64)
            self.dropout = nn.Dropout(0.5)

        def forward(self, x):
            return self.dropout(self.fc(x))

    torch.manual_seed(0)
    model, x = Dropped(), torch.randn(8, 64)
    valid = model.valid()
    first, second = valid(x), valid(x)
    assert torch.equal(first, second) and torch.equal(first, model.fc(x).detach())
    assert not torch.equal(model(x), model(x))  # training mode: dropout draws each time


def test_no_grad_is_stateful_through_valid_as_burns():
    """burn-core module/base.rs `test_module_val_train_stateful`: after `no_grad()` no parameter
    requires a gradient, and `valid()` keeps it so."""
    critic = Critic()
    assert critic.no_grad() is critic
    assert not any(p.requires_grad for p in critic.parameters())
    assert not any(p.requires_grad for p in critic.valid().parameters())


def test_fork_and_to_device_move_the_module_and_devices_says_where_it_is():
    critic = Critic()
    assert critic.fork("cpu") is critic and critic.devices() == [torch.device("cpu")]
    assert critic.to_device(torch.device("meta")) is critic
    assert critic.devices() == [torch.device("meta")] and critic.fc1.weight.requires_grad
