"""`burnlike.app.tree`: how the app prints its config. Redirected, one `config <group>: k=v ...` line
per group (greppable in a job's log); on a terminal, a tree of the groups as YAML in the terminal's
own 16 colours."""

import re

from omegaconf import OmegaConf

from burnlike.app.tree import _flat, print_config

ANSI = re.compile(r"\x1b\[[0-9;]*m")


# --- one line per group ---------------------------------------------------------------------------
def test_flat_config_is_dotted_key_value_pairs_with_interpolations_resolved():
    group = OmegaConf.create({"lr": 0.001, "betas": {"b1": 0.9, "b2": 0.999}, "empty": {}, "tags": [1, 2],
                              "ref": "${lr}"})
    assert _flat(group) == "lr=0.001 betas.b1=0.9 betas.b2=0.999 empty={} tags=[1, 2] ref=0.001"
    assert _flat(42) == "42" and _flat("mnist") == "mnist"
    assert _flat(OmegaConf.create([1, {"a": 2}])) == "[1, {'a': 2}]"


def test_a_string_with_a_newline_or_tab_stays_on_the_groups_line():
    group = OmegaConf.create({"sample_prompt": "\n", "sep": "a\tb", "name": "two words"})
    assert _flat(group) == "sample_prompt='\\n' sep='a\\tb' name=two words"


def test_print_config_is_one_line_per_group_when_redirected(mlp_conf, data, capsys):
    cfg = mlp_conf("optimizer=sgd", "seed=7")
    print_config(cfg)
    lines = capsys.readouterr().out.splitlines()
    groups = [line.split(":")[0].removeprefix("config ") for line in lines]
    assert groups[:5] == ["model", "data", "optimizer", "trainer", "learner"]
    assert sorted(groups[5:]) == sorted(k for k in cfg if k not in groups[:5])
    assert "config seed: 7" in lines
    optimizer = next(line for line in lines if line.startswith("config optimizer: "))
    assert f"lr={cfg.optimizer.lr}" in optimizer and "momentum" in optimizer
    assert f"root={data}" in next(line for line in lines if line.startswith("config data: "))
    print_config(cfg, order=("learner", "model"))
    assert [line.split(":")[0] for line in capsys.readouterr().out.splitlines()][:2] == ["config learner", "config model"]


def test_a_null_data_root_prints_the_folder_it_stands_for(mlp_conf, monkeypatch, capsys):
    """data.root=null means $BURNLIKE_DATA, else ./data: the line says which folder that is."""
    cfg = mlp_conf("data.root=null")
    monkeypatch.setenv("BURNLIKE_DATA", "/somewhere/data")
    print_config(cfg)
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("config data: "))
    assert "root=None" in line and line.endswith(" (root: /somewhere/data)")
    monkeypatch.delenv("BURNLIKE_DATA")
    print_config(cfg)
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("config data: "))
    assert line.endswith(" (root: data)")


# --- a tree on a terminal -------------------------------------------------------------------------
def test_print_config_is_a_tree_on_a_terminal(mlp_conf, terminal):
    screen = terminal()
    print_config(mlp_conf("optimizer=sgd"))
    text = ANSI.sub("", screen.getvalue())  # without the colours
    assert text.splitlines()[0] == "config"
    for group in ("model", "data", "optimizer", "trainer", "learner"):
        assert f"── {group}" in text
    assert "config optimizer:" not in text  # not the one-line form
    assert "momentum" in text and "lr" in text


def test_config_tree_shows_each_group_as_yaml(conf, terminal):
    out = terminal()
    print_config(conf("model=mlp", "model.hidden_sizes=[8]"))
    text = ANSI.sub("", out.getvalue())
    lines = [line.strip("│ ") for line in text.splitlines()]
    assert "hidden_sizes:" in lines and "- 8" in lines  # YAML, not a dict's repr
    assert "{'" not in text


def test_config_tree_highlights_yaml_in_a_terminal(conf, colour_terminal):
    out = colour_terminal()
    print_config(conf("model=mlp", "model.hidden_sizes=[8]"))
    line = next(x for x in out.getvalue().splitlines() if "hidden_sizes" in x)
    codes = re.search(r"\x1b\[([0-9;]+)mhidden_sizes", line)
    assert codes and any(c.startswith(("3", "9")) for c in codes[1].split(";")), line  # the yaml key's colour


def test_config_tree_styles_resolved_values_and_scalars(colour_terminal):
    """The terminal tree: a dim root and guides, bold group names, interpolations resolved, a
    top-level scalar as itself, YAML keys in the terminal's 16 colours (not a truecolor theme)."""
    out = colour_terminal()
    print_config(OmegaConf.create({"model": {"width": 8, "name": "w${model.width}"}, "seed": 7}))
    raw = out.getvalue()
    text = ANSI.sub("", raw)
    lines = [line.strip("│├└─ ") for line in text.splitlines()]
    assert "name: w8" in lines and "7" in lines, lines  # resolved; the scalar's own value
    assert raw.startswith("\x1b[2mconfig"), repr(raw[:40])
    assert re.search(r"\x1b\[2m├── \x1b\[0m\x1b\[1;2mmodel", raw), repr(raw)  # dim guide; bold name (in the dim tree)
    key = re.search(r"\x1b\[([0-9;]+)mwidth", raw)
    assert key and "38" not in key[1].split(";"), raw  # not a truecolor/256-colour theme
    assert key[1].split(";")[-1] in {str(c) for c in [*range(30, 38), *range(90, 98)]}, raw  # one of 16 colours


def test_a_data_group_without_a_root_prints_as_it_is(capsys):
    """Another repo's data config need not have a root (a CSV file, a dataset name): nothing is added."""
    print_config(OmegaConf.create({"data": {"name": "reviews", "batch_size": 8}}))
    assert capsys.readouterr().out == "config data: name=reviews batch_size=8\n"
