"""`burnlike.app.data`: the loaders of the app's data options (MNIST, an image folder, a CSV table,
Tiny Shakespeare's characters). Each yields the batches its model reads (normalised images,
standardised features, class indices or regression targets, windows of characters and the next
ones), splits train/valid reproducibly, and refuses a config that doesn't fit the data with a
`DataConfigError` naming the keys to change, before any training. A text run's model writes a sample
at the end."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf
from PIL import Image
from torch.utils.data import DataLoader, RandomSampler, SequentialSampler

from burnlike.app.data import DataConfigError, build_loaders, fast_path_data_device, generated_sample
from burnlike.data import ImageBatch, TabularBatch, TokenWindowBatch
from tests.app.helpers import REGRESSION, SMALL, write_regression_table
from tests.helpers.app import IMAGE
from tests.helpers.corpus import corpus_text, vocab_size, write_corpus
from tests.helpers.idx import write_mnist_idx
from tests.helpers.images import write_corrupt, write_splits

# a classification on `write_classification_table`'s t.csv (data.root: its folder)
CLASSIFICATION = ["model=tabular", "data=csv", "data.train=t.csv", "data.target=kind", "model.num_features=2",
                  "model.num_outputs=2"]


def write_classification_table(path: Path, delimiter: str = ",", n: int = 20) -> Path:
    """Features a and b (i/n, then a permutation of it) and a class, "up" on odd rows, "down" on even."""
    rows = [delimiter.join(["a", "b", "kind"])]
    rows += [delimiter.join([f"{i / n:.3f}", f"{(i * 7 % n) / n:.3f}", "up" if i % 2 else "down"]) for i in range(n)]
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    """An image folder of 3 classes: 8 images each in train/, 3 in valid/."""
    return write_splits(tmp_path_factory.mktemp("images"), classes=3, train=8, valid=3)


def first_epoch_losses(app, out, seed):
    app(out, "learner.num_epochs=1", f"data.shuffle_seed={seed}", "seed=0")
    return (out / "train" / "epoch-1" / "Loss.log").read_text().splitlines()


# --- data=shakespeare_char ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def text_root(tmp_path_factory):
    return write_corpus(tmp_path_factory.mktemp("text"), 3000)


def text_conf(conf, root, *overrides):
    return conf("model=gpt", "data=shakespeare_char", f"data.root={root}", f"model.vocab_size={vocab_size(3000)}",
                "model.block_size=16", "data.batch_size=5", *overrides)


def test_shakespeare_char_loaders_yield_shuffled_windows_and_their_next_characters(conf, text_root):
    train, valid = build_loaders(text_conf(conf, text_root))
    text = corpus_text(3000)
    chars = sorted(set(text))
    n = int(3000 * 0.9)
    batch = next(iter(train))
    assert isinstance(batch, TokenWindowBatch) and batch.inputs.shape == batch.targets.shape == (5, 16)
    for inputs, targets in zip(batch.inputs.tolist(), batch.targets.tolist()):
        window = "".join(chars[i] for i in inputs + targets[-1:])
        assert window in text[:n] and inputs[1:] == targets[:-1]  # the next character of each input
    assert len(train.dataset) == n - 16 and len(valid.dataset) == 3000 - n - 16
    assert train.drop_last and isinstance(valid.sampler, RandomSampler)  # each validation draws its own windows
    first, again = (build_loaders(text_conf(conf, text_root))[0] for _ in range(2))
    assert [b.inputs.tolist() for b in first] == [b.inputs.tolist() for b in again]  # the shuffle is seeded


def test_shakespeare_char_windows_follow_the_models_block_size_or_a_shorter_one(conf, text_root):
    train, _ = build_loaders(text_conf(conf, text_root, "data.block_size=8"))
    assert next(iter(train)).inputs.shape == (5, 8)


@pytest.mark.parametrize(("overrides", "message"), [
    (["model.vocab_size=65"], f"model.vocab_size=65: the data has {vocab_size(3000)} characters in "),
    (["data.block_size=32"], "data.block_size=32 model.block_size=16: the windows are longer than the model's context"),
    (["data.train_fraction=1.5"], "data.train_fraction=1.5: expected a fraction in (0, 1)"),
])
def test_shakespeare_char_config_errors_name_the_keys(conf, text_root, overrides, message):
    with pytest.raises(DataConfigError) as e:
        build_loaders(text_conf(conf, text_root, *overrides))
    assert message in str(e.value)


def test_shakespeare_char_refuses_an_image_model(conf, text_root):
    with pytest.raises(DataConfigError, match="^model: MlpConfig reads the batches of data=mnist, not "
                                              "data=shakespeare_char: use model=gpt$"):
        build_loaders(conf("model=mlp", "data=shakespeare_char", f"data.root={text_root}"))


def test_missing_shakespeare_text_names_the_file(conf, tmp_path):
    with pytest.raises(DataConfigError) as e:
        build_loaders(text_conf(conf, tmp_path / "none"))
    message = str(e.value)
    assert message.startswith(f"data.root='{tmp_path / 'none'}': Tiny Shakespeare: ")
    assert f"{tmp_path / 'none' / 'shakespeare_char' / 'input.txt'} not found" in message


def test_a_text_runs_model_writes_a_seeded_sample_after_the_prompt(conf, text_root):
    cfg = text_conf(conf, text_root, "data.sample_length=30", "data.sample_prompt=ROMEO")
    model = cfg.model
    from omegaconf import OmegaConf as OC

    gpt = OC.to_object(model).init()
    sample = generated_sample(cfg, gpt)
    assert sample is not None and len(sample) == 35 and sample.startswith("ROMEO")
    assert set(sample) <= set(corpus_text(3000)) and generated_sample(cfg, gpt) == sample
    assert generated_sample(text_conf(conf, text_root, "data.sample_length=0"), gpt) is None
    with pytest.raises(DataConfigError, match="data.sample_prompt='Zebra': CharVocab: 'Z' is not one of"):
        generated_sample(text_conf(conf, text_root, "data.sample_prompt=Zebra"), gpt)


# --- data=image_folder ----------------------------------------------------------------------------
def test_image_folder_loaders_yield_normalised_batches_of_every_class(conf, images):
    train, valid = build_loaders(conf(*IMAGE, f"data.root={images}", "data.batch_size=5"))
    batch = next(iter(train))
    assert isinstance(batch, ImageBatch) and batch.images.shape == (5, 3, 16, 16) and len(train.dataset) == 24
    assert len(valid.dataset) == 9 and sorted(torch.cat([b.targets for b in valid]).tolist()) == [0] * 3 + [1] * 3 + [2] * 3
    mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
    raw = torch.stack([torch.from_numpy(np.asarray(Image.open(p))) for p in batch.image_paths])
    assert torch.allclose(batch.images, (raw.permute(0, 3, 1, 2) / 255 - mean) / std, atol=1e-5)


def test_valid_fraction_splits_train_disjointly_by_the_seed(conf, images):
    cfg = conf(*IMAGE, f"data.root={images}", "data.valid=null", "data.valid_fraction=0.25")
    train, valid = build_loaders(cfg)
    paths = lambda loader: {p for b in loader for p in b.image_paths}  # noqa: E731
    assert (len(train.dataset), len(valid.dataset)) == (18, 6) and not paths(train) & paths(valid)
    again = build_loaders(cfg)[1]
    assert paths(again) == paths(valid)  # the same split every run


def test_image_folder_valid_dir_uses_train_classes_and_options_and_checks_mean_std(conf, tmp_path):
    """data.valid: labels by the train folder's classes (the valid folder lacks class0), decoded with
    the same mode and size; the train loader shuffles, the valid one doesn't. data.mean/std: one
    value, or one per channel, and as many of one as of the other."""
    root = write_splits(tmp_path / "img", classes=3, train=2, valid=1)
    shutil.rmtree(root / "valid" / "class0")
    folder = ["model=cnn", "data=image_folder", f"data.root={root}", "data.valid=valid", "model.num_classes=3"]
    train, valid = build_loaders(conf(*folder, "data.mode=L", "data.size=[8,8]", "model.in_channels=1",
                                      "data.mean=[0.5]", "data.std=[0.25]"))
    assert isinstance(train.sampler, RandomSampler) and isinstance(valid.sampler, SequentialSampler)
    batch = next(iter(valid))
    assert batch.targets.tolist() == [1, 2]  # class1 and class2 of the train folder's three
    assert tuple(batch.images.shape) == (2, 1, 8, 8)
    rgb, _ = build_loaders(conf(*folder, "data.mean=[0.5]", "data.std=[0.25]"))  # one value for 3 channels
    assert tuple(next(iter(rgb)).images.shape[1:]) == (3, 16, 16)
    with pytest.raises(DataConfigError, match=r"data.mean.* data.std.*: the images have 3 channel\(s\): expected one "
                                              r"value in each, or one per channel"):
        build_loaders(conf(*folder, "data.mean=[0.5,0.5,0.5]", "data.std=[0.5]"))


@pytest.mark.parametrize(("overrides", "message"), [
    (["model.num_classes=5"], r"model.num_classes=5: the data has classes \['class0', 'class1', 'class2'\]: "
                              r"set model.num_classes=3"),
    (["data.mode=L", "data.mean=[0.5]", "data.std=[0.5]"], r"model.in_channels=3: the data has 1-channel images \(data.mode=L\): set model.in_channels=1"),
    (["model=mnist"], r"model: ModelConfig reads the batches of data=mnist, not data=image_folder: use model=cnn"),
    (["data.mean=[0.5,0.5]"], r"data.mean=\[0.5, 0.5\] .*3 channel\(s\)"),
    (["data.valid=nothing"], r"data.root='.*' data.valid='nothing': image folder .*nothing not found"),
    (["data.valid=null", "data.valid_fraction=1.5"], r"data.valid_fraction=1.5: splits the 24 images into"),
    (["data.decoder=magic"], r"data.train='train': decoder must be one of"),
])
def test_image_folder_config_errors_name_the_keys(conf, images, overrides, message):
    with pytest.raises(DataConfigError, match=message):
        build_loaders(conf(*IMAGE, f"data.root={images}", *overrides))


def test_empty_split_and_missing_root_errors_name_the_keys(conf, tmp_path):
    write_splits(tmp_path / "d", classes=2, train=2, valid=1)
    for p in (tmp_path / "d" / "valid").rglob("*.png"):
        p.unlink()
    with pytest.raises(DataConfigError, match=r"data.valid='valid': no image files .* under .*valid"):
        build_loaders(conf(*IMAGE, "model.num_classes=2", f"data.root={tmp_path / 'd'}"))
    with pytest.raises(DataConfigError, match=r"data.root='.*nowhere' data.train='train': image folder .*nowhere/train "
                                              "not found"):
        build_loaders(conf(*IMAGE, f"data.root={tmp_path / 'nowhere'}"))


def test_an_undecodable_first_image_names_the_train_folder(conf, tmp_path):
    root = write_splits(tmp_path / "images", classes=2, train=2, valid=1)
    write_corrupt(root / "train" / "class0" / "0000.png", "truncated")
    with pytest.raises(DataConfigError, match=rf"^data.root='{root}' data.train='train': .*0000.png"):
        build_loaders(conf("model=cnn", "data=image_folder", "model.num_classes=2", f"data.root={root}"))


# --- data=csv -------------------------------------------------------------------------------------
def test_csv_loaders_standardise_features_for_classification_and_regression(conf, tmp_path):
    write_regression_table(tmp_path / "t.csv")
    cls_cfg = conf("model=tabular", "data=csv", f"data.root={tmp_path}", "data.train=t.csv", "data.target=kind",
                   "data.features=[a,b]", "model.num_features=2", "model.num_outputs=2")
    train, valid = build_loaders(cls_cfg)
    batch = next(iter(train))
    assert isinstance(batch, TabularBatch) and batch.inputs.shape == (64, 2) and batch.targets.dtype == torch.int64
    assert (len(train.dataset), len(valid.dataset)) == (64, 16)
    everything = torch.cat([b.inputs for b in train])  # standardised with the train part's statistics
    assert torch.allclose(everything.mean(0), torch.zeros(2), atol=1e-5)
    train, _ = build_loaders(conf(*REGRESSION, f"data.root={tmp_path}"))
    assert next(iter(train)).targets.shape == (64, 1) and next(iter(train)).targets.dtype == torch.float32


def test_csv_delimiter_default_features_and_min_max_reach_the_dataset(conf, tmp_path):
    write_classification_table(tmp_path / "t.csv", delimiter=";")
    train, valid = build_loaders(conf(*CLASSIFICATION, f"data.root={tmp_path}", "data.delimiter=';'",
                                      "data.normalize=min_max"))
    assert (len(train.dataset), len(valid.dataset)) == (16, 4)
    inputs = torch.cat([b.inputs for b in train])
    assert inputs.shape == (16, 2)  # features: every column but the target
    assert inputs.min().item() == pytest.approx(0.0) and inputs.max().item() == pytest.approx(1.0)


def test_csv_valid_file_is_read_with_the_train_files_columns_classes_and_delimiter(conf, tmp_path):
    """data.valid: its columns found by the train file's names (in its own order), its class names
    mapped to the train file's indices (only "up" rows here), the same delimiter; the train loader
    shuffles, the valid one doesn't; normalize=null leaves the features as they are."""
    write_classification_table(tmp_path / "t.csv", delimiter=";")
    (tmp_path / "v.csv").write_text("kind;b;a\nup;0.25;0.5\nup;0.75;0.125\n")
    train, valid = build_loaders(conf(*CLASSIFICATION, f"data.root={tmp_path}", "data.delimiter=';'",
                                      "data.valid=v.csv", "data.normalize=null"))
    assert len(train.dataset) == 20 and len(valid.dataset) == 2  # the whole train file trains
    assert isinstance(train.sampler, RandomSampler) and isinstance(valid.sampler, SequentialSampler)
    batch = next(iter(valid))
    assert batch.inputs.tolist() == [[0.5, 0.25], [0.125, 0.75]]  # columns a, b as in the train file
    assert batch.targets.tolist() == [1, 1]  # "up" is class 1 of the train file's ["down", "up"]
    first = next(iter(DataLoader(train.dataset, batch_size=2, collate_fn=train.collate_fn)))
    assert torch.equal(first.inputs, torch.tensor([[0.0, 0.0], [0.05, 0.35]]))  # the file's values: not normalised


@pytest.mark.parametrize(("overrides", "message"), [
    (["data.target=price"], r"data.train='t.csv': .*column 'price' not found; the columns are \['a', 'b', 'c', 'y', 'kind'\]"),
    (["model.num_features=5"], r"model.num_features=5: the data has feature columns \['a', 'b', 'c'\]: set model.num_features=3"),
    (["learner.metrics=[Accuracy,Loss]"], r"learner.metrics=\['Accuracy', 'Loss'\]: a regression .* has no Accuracy"),
    (["data.valid=missing.csv"], r"data.valid='missing.csv': CSV file .*missing.csv not found"),
    (["data.task=ranking"], r"data.task='ranking': expected classification or regression"),
    (["data.features=[a,kind]"], r"line 2: column 'kind': '(up|down)' is not a number"),
])
def test_csv_config_errors_name_the_keys(conf, tmp_path, overrides, message):
    write_regression_table(tmp_path / "t.csv")
    with pytest.raises(DataConfigError, match=message):
        build_loaders(conf(*REGRESSION, f"data.root={tmp_path}", *overrides))


def test_csv_regression_errors_name_the_target_column_and_the_metric_to_optimize(conf, tmp_path):
    (tmp_path / "r.csv").write_text("a,b,y\n" + "".join(f"{i},{i % 3},{2 * i}\n" for i in range(10)))
    reg = ["model=tabular", "data=csv", "data.train=r.csv", "data.target=y", "data.task=regression",
           "model.num_features=2", f"data.root={tmp_path}"]
    with pytest.raises(DataConfigError, match=r"a regression \(data.task=regression\) has no Accuracy: use "
                                              r"learner.metrics=\[Loss\] optimized_metric=valid/Loss"):
        build_loaders(conf(*reg, "learner.metrics=[Accuracy,Loss]"))
    with pytest.raises(DataConfigError, match=r"model.num_outputs=2: the data has target column \['y'\]"):
        build_loaders(conf(*reg, "learner.metrics=[Loss]", "model.num_outputs=2"))


def test_csv_normalize_names_its_choices(conf, tmp_path):
    write_classification_table(tmp_path / "t.csv")
    with pytest.raises(DataConfigError, match=r"^data.normalize='zscore': expected standard, min_max or null$"):
        build_loaders(conf(*CLASSIFICATION, f"data.root={tmp_path}", "data.normalize=zscore"))


def test_csv_class_count_mismatch_names_the_classes(conf, tmp_path):
    write_classification_table(tmp_path / "t.csv")
    with pytest.raises(DataConfigError, match=r"model.num_outputs=3: the data has classes \['down', 'up'\]: "
                                              r"set model.num_outputs=2"):
        build_loaders(conf(*CLASSIFICATION, f"data.root={tmp_path}", "model.num_outputs=3"))


def test_csv_split_error_counts_rows(conf, tmp_path):
    write_classification_table(tmp_path / "t.csv")
    with pytest.raises(DataConfigError, match=r"^data.valid_fraction=0.01: splits the 20 rows into 20 to train and 0 "
                                              r"to validate; expected a fraction in \(0, 1\) that leaves both "
                                              r"non-empty \(or set data.valid\)$"):
        build_loaders(conf(*CLASSIFICATION, f"data.root={tmp_path}", "data.valid_fraction=0.01"))
    with pytest.raises(DataConfigError, match=r"splits the 20 rows into 0 to train and 20 to validate"):
        build_loaders(conf(*CLASSIFICATION, f"data.root={tmp_path}", "data.valid_fraction=0.99"))


# --- data=mnist and unknown options ---------------------------------------------------------------
def test_missing_mnist_names_data_root(conf, tmp_path):
    root = tmp_path / "nowhere"
    with pytest.raises(DataConfigError, match=rf"^data.root='{root}': .*MNIST") as info:
        build_loaders(conf(*SMALL, f"data.root={root}"))
    assert "None" not in str(info.value)


def test_mnist_data_refuses_an_image_model(conf, tmp_path):
    with pytest.raises(DataConfigError, match="model: CnnConfig reads the batches of data=image_folder, not "
                                              "data=mnist: use model=mnist or model=mlp"):
        build_loaders(conf("model=cnn", f"data.root={tmp_path}"))


def test_an_unknown_data_type_is_named():
    cfg = OmegaConf.create({"data": {"root": None}, "model": {"hidden_sizes": [8]}})
    with pytest.raises(DataConfigError, match=r"^data: dict is not a data option this app knows: expected one of "
                                              r"\['mnist', 'image_folder', 'csv', 'shakespeare_char'\]"):
        build_loaders(cfg)


def test_a_null_data_config_is_named_as_none():
    cfg = OmegaConf.create({"data": None})
    with pytest.raises(DataConfigError, match=r"^data: None is not a data option this app knows: expected one of "
                                              r"\['mnist', 'image_folder', 'csv', 'shakespeare_char'\]"):
        build_loaders(cfg)


# --- the training order ---------------------------------------------------------------------------
def test_shuffle_seed_sets_the_training_order(app, tmp_path):
    # same model seed: the first batch's loss differs only if the first batch holds other digits
    one = first_epoch_losses(app, tmp_path / "a", 1)
    again = first_epoch_losses(app, tmp_path / "b", 1)
    other = first_epoch_losses(app, tmp_path / "c", 2)
    assert len(one) == 4 and one == again
    assert one[0] != other[0]


# --- the fast path keeps the data on the GPU ------------------------------------------------------
def test_the_app_keeps_the_data_on_the_gpu_only_for_the_fast_path_on_one_gpu(conf):
    on = conf("learner.cuda_graph=true")
    assert fast_path_data_device(on, cuda=True) == "cuda:0"
    assert fast_path_data_device(on, cuda=False) is None
    assert fast_path_data_device(conf("learner.cuda_graph=true", "trainer=gpu"), cuda=True) == "cuda:0"
    assert fast_path_data_device(conf(), cuda=True) is None
    assert fast_path_data_device(conf("learner.cuda_graph=true", "trainer=cpu"), cuda=True) is None
    assert fast_path_data_device(conf("learner.cuda_graph=true", "trainer=ddp"), cuda=True) is None
    multi_node = conf("learner.cuda_graph=true", "trainer.num_nodes=2")
    assert fast_path_data_device(multi_node, cuda=True) is None


def test_the_fast_path_takes_accelerator_cuda_and_asks_torch_for_a_gpu_by_default(conf):
    on = conf("learner.cuda_graph=true", "trainer.accelerator=cuda")
    assert fast_path_data_device(on, cuda=True) == "cuda:0"
    assert fast_path_data_device(on) == ("cuda:0" if torch.cuda.is_available() else None)  # torch is asked


@pytest.mark.skipif(torch.cuda.is_available(), reason="tells torch there is a GPU where there is none")
def test_cuda_graph_asks_for_the_data_on_the_gpu_torch_reports(conf, tmp_path, monkeypatch):
    """Where torch reports a GPU, the loaders move the data to it as they are built: told there is
    one on this machine, torch's own error on that move shows they asked (the cuda-marked test
    below checks where the data ends up on a GPU)."""
    tiny = write_mnist_idx(tmp_path / "mnist", n_train=128, n_test=64)
    cfg = conf(*SMALL, f"data.root={tiny}", "learner.cuda_graph=true", "trainer.devices=1")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert fast_path_data_device(cfg) == "cuda:0"  # torch is asked
    with pytest.raises((RuntimeError, AssertionError), match="(?i)cuda|nvidia"):
        build_loaders(cfg)
    monkeypatch.undo()
    train, _ = build_loaders(cfg)  # torch's own answer: no GPU, the batches are made on the host
    assert isinstance(train, DataLoader)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_graph_keeps_the_data_on_the_gpu(conf, tmp_path):
    tiny = write_mnist_idx(tmp_path / "mnist", n_train=128, n_test=64)
    train, valid = build_loaders(conf(*SMALL, f"data.root={tiny}", "learner.cuda_graph=true", "trainer.devices=1"))
    assert train.device == valid.device == torch.device("cuda:0")
