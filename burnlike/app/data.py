"""The app's `data=` options: their structured configs, and the train/valid loaders built from them.

`data=mnist` (the default) is Burn's guide: MNIST's train split to train on, its test split to
validate on. `data=image_folder` is a folder per class (Burn's `ImageFolderDataset`), `data=csv` a
table with a target column, `data=shakespeare_char` Tiny Shakespeare as windows of characters for a
language model (nanoGPT's shakespeare_char). Each option reads its data, checks that the chosen model fits it (class
count, channels, features) and returns two loaders. The datasets are imported only when loaders are
built: the configs themselves are plain `@config` classes.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from omegaconf import DictConfig, OmegaConf

from burnlike.config import config

T = TypeVar("T")

__all__ = ["CsvDataConfig", "DataConfig", "DataConfigError", "ImageFolderDataConfig", "ShakespeareCharDataConfig",
           "build_loaders", "generated_sample"]


class DataConfigError(ValueError):
    """The data config can't be read, or doesn't fit the model or metrics (names the keys)."""


@config
class DataConfig:
    """`data=mnist`: `root` holds `MNIST/raw/`."""

    root: str | None = None  # null: $BURNLIKE_DATA, else ./data (MnistDataset's rule); image_folder/csv set it
    batch_size: int = 64  # items per batch (Burn's DataLoaderBuilder.batch_size)
    num_workers: int = 0  # the MNIST pipeline is ~100x faster than torchvision's; workers only add IPC here
    shuffle_seed: int = 42  # the train order's seed (Burn's .shuffle(seed)): epoch e shuffles with it and e


@config
class ImageFolderDataConfig(DataConfig):
    """`data=image_folder`: `<root>/<train>/<class>/*.png|jpg|jpeg|bmp`, likewise `<root>/<valid>`;
    with `valid: null`, a seeded `valid_fraction` of the train images validates instead."""

    train: str = "train"  # the train folder under data.root, one subfolder per class
    valid: str | None = "valid"  # the valid folder under data.root; null: valid_fraction of train
    valid_fraction: float = 0.2  # with valid=null: the seeded share of the train images that validates
    mode: str | None = "RGB"  # Pillow mode to convert to ("L", "RGB", "RGBA"); null keeps each file's
    size: list[int] | None = None  # [height, width] to resize to; null: the files' own (all equal)
    # per-channel mean subtracted after scaling to [0, 1] (ImageNet's by default)
    mean: list[float] = [0.485, 0.456, 0.406]
    # per-channel standard deviation divided by (ImageNet's by default)
    std: list[float] = [0.229, 0.224, 0.225]
    decoder: str = "auto"  # auto | pil | torchvision
    skip_corrupt: bool = False  # true: leave out images that don't decode, with a warning


@config
class CsvDataConfig(DataConfig):
    """`data=csv`: `<root>/<train>` (and `<root>/<valid>`, or a seeded `valid_fraction` of train),
    feature columns (default: all but the target) and a `target` column."""

    train: str = "train.csv"  # the train table under data.root
    valid: str | None = None  # the valid table under data.root; null: valid_fraction of train
    valid_fraction: float = 0.2  # with valid=null: the seeded share of the train rows that validates
    target: str = "label"  # the column to predict
    features: list[str] | None = None  # the input columns; null: every column but the target
    task: str = "classification"  # classification (integer ids or class names) | regression
    normalize: str | None = "standard"  # standard | min_max (fitted on the train split) | null
    delimiter: str = ","  # the field separator of the CSV files


@config
class ShakespeareCharDataConfig(DataConfig):
    """`data=shakespeare_char`: `<root>/shakespeare_char/input.txt`, its first `train_fraction` of
    characters to train on and the rest to validate on, as windows of `block_size + 1` characters in
    a seeded random order (validation too: each evaluation draws its own windows, as nanoGPT's do;
    `trainer.limit_val_batches` says how many batches). At the end, the trained model writes
    `sample_length` characters after `sample_prompt`."""

    block_size: int | None = None  # characters a window's inputs hold; null: the model's block_size
    train_fraction: float = 0.9  # the first part of the text to train on (nanoGPT's 90%); the rest validates
    sample_length: int = 500  # characters generated at the end of the run (0: none)
    sample_prompt: str = "\n"  # the text the sample continues
    temperature: float = 0.8  # the sample's softmax temperature (lower: likelier characters)
    top_k: int | None = 200  # sample among the k likeliest characters only; null: among all


def _error(cfg: DictConfig, keys: str, problem: str) -> DataConfigError:
    """`data.root='x' data.train='train': <problem>`: the keys to change, with their values."""
    where = " ".join(f"{key}={OmegaConf.select(cfg, key)!r}" for key in keys.split())
    return DataConfigError(f"{where}: {' '.join(str(problem).split())}")


def fast_path_data_device(cfg: DictConfig, cuda: bool | None = None) -> str | None:
    """Where `learner.cuda_graph=true` keeps the data: the one GPU the run trains on, if any
    (`cuda`: whether there is one; torch is asked when None)."""
    if not cfg.learner.cuda_graph or str(cfg.trainer.accelerator) not in ("auto", "gpu", "cuda"):
        return None
    if cfg.trainer.devices != 1 or cfg.trainer.num_nodes != 1:
        return None
    if cuda is None:
        import torch

        cuda = torch.cuda.is_available()
    return "cuda:0" if cuda else None


def _loader(cfg: DictConfig, batcher: Any, dataset: Any, shuffle: bool, drop_last: bool = False) -> Any:
    from burnlike.data import DataLoaderBuilder

    builder = DataLoaderBuilder(batcher).batch_size(cfg.data.batch_size).drop_last(drop_last)
    if shuffle:
        builder = builder.shuffle(cfg.data.shuffle_seed)
    device = fast_path_data_device(cfg)
    if device is not None:  # the fast path: data on the GPU once, batches indexed there
        builder = builder.on_device(device)
    return builder.num_workers(cfg.data.num_workers).build(dataset)


def _split(cfg: DictConfig, dataset: Any, what: str) -> tuple[Any, Any, Any]:
    """Burn's way: `ShuffledDataset(ds, seed)`, then the first part trains and the rest validates.
    Returns the two parts and the train part's indices into `dataset`."""
    from burnlike.data.dataset import PartialDataset, ShuffledDataset

    fraction = cfg.data.valid_fraction
    n = len(dataset)
    n_valid = int(round(n * fraction))
    if not 0 < fraction < 1 or n_valid == 0 or n_valid == n:
        raise _error(cfg, "data.valid_fraction",
                     f"splits the {n} {what} into {n - n_valid} to train and {n_valid} to validate; "
                     "expected a fraction in (0, 1) that leaves both non-empty (or set data.valid)")
    shuffled: ShuffledDataset[Any] = ShuffledDataset(dataset, cfg.data.shuffle_seed)
    n_train = n - n_valid
    return PartialDataset(shuffled, 0, n_train), PartialDataset(shuffled, n_train, n), shuffled.indices[:n_train]


def _mnist(cfg: DictConfig) -> tuple[Any, Any]:
    from burnlike.data import MnistBatcher, MnistDataset, MnistFormatError, MnistNotFoundError

    try:  # Burn's guide shuffles the test set too; order can't change a valid epoch, and Lightning warns
        train = MnistDataset.train(cfg.data.root)
        valid = MnistDataset.test(cfg.data.root)
    except (MnistNotFoundError, MnistFormatError) as e:
        raise _error(cfg, "data.root", str(e)) from e
    return _loader(cfg, MnistBatcher(), train, True), _loader(cfg, MnistBatcher(), valid, False)


def _guarded(cfg: DictConfig, keys: str, read: Callable[[], T]) -> T:
    """`read()`, with a data error (missing folder, bad file, empty split...) reported on `keys`."""
    try:
        return read()
    except ValueError as e:  # DatasetError and the constructors' argument checks
        raise _error(cfg, keys, str(e)) from e


def _image_folder(cfg: DictConfig) -> tuple[Any, Any]:
    from burnlike.data import ImageBatcher
    from burnlike.data.dataset import ImageFolderDataset

    d = cfg.data
    options = {"decoder": d.decoder, "mode": d.mode, "skip_corrupt": d.skip_corrupt,
               "size": None if d.size is None else list(d.size)}
    train_dir = Path(d.root) / d.train
    train = _guarded(cfg, "data.root data.train", lambda: ImageFolderDataset.new_classification(train_dir, **options))
    channels = _guarded(cfg, "data.root data.train", lambda: int(train[0].image.shape[2]))
    if d.valid is None:
        train_part, valid, _ = _split(cfg, train, "images")
    else:
        valid_dir = Path(d.root) / d.valid
        train_part, valid = train, _guarded(cfg, "data.root data.valid", lambda: ImageFolderDataset
                                            .new_classification(valid_dir, train.classes, **options))
    if len(d.mean) not in (1, channels) or len(d.std) != len(d.mean):
        raise _error(cfg, "data.mean data.std",
                     f"the images have {channels} channel(s): expected one value in each, or one per channel")
    _check_model(cfg, {"num_classes": (len(train.classes), f"classes {train.classes}"),
                       "in_channels": (channels, f"{channels}-channel images (data.mode={d.mode})")})
    batcher = ImageBatcher(list(d.mean), list(d.std))
    return _loader(cfg, batcher, train_part, True), _loader(cfg, batcher, valid, False)


def _csv(cfg: DictConfig) -> tuple[Any, Any]:
    from burnlike.data import TabularBatcher
    from burnlike.data.dataset import TabularDataset

    d = cfg.data
    if d.task not in ("classification", "regression"):
        raise _error(cfg, "data.task", "expected classification or regression")
    if d.normalize not in (None, "standard", "min_max"):
        raise _error(cfg, "data.normalize", "expected standard, min_max or null")
    if d.task == "regression" and "Accuracy" in cfg.learner.metrics:
        raise _error(cfg, "learner.metrics", "a regression (data.task=regression) has no Accuracy: use learner.metrics=[Loss] "
                     "optimized_metric=valid/Loss")
    features = None if d.features is None else list(d.features)
    train_path = Path(d.root) / d.train
    train = _guarded(cfg, "data.root data.train",
                     lambda: TabularDataset.from_csv(train_path, d.target, features, d.task, delimiter=d.delimiter))
    if d.valid is None:
        train_part, valid, indices = _split(cfg, train, "rows")
        fitted = train.features[indices]
    else:
        valid_path = Path(d.root) / d.valid
        valid = _guarded(cfg, "data.root data.valid", lambda: TabularDataset.from_csv(
            valid_path, d.target, train.feature_names, d.task, train.classes, delimiter=d.delimiter))
        train_part, fitted = train, train.features
    outputs = len(train.classes) if train.classes is not None else len(train.target_names)
    what = f"classes {train.classes}" if train.classes is not None else f"target column {train.target_names}"
    _check_model(cfg, {"num_features": (train.num_features(), f"feature columns {train.feature_names}"),
                       "num_outputs": (outputs, what)})
    batcher = TabularBatcher.fit(fitted, d.normalize) if d.normalize else TabularBatcher()
    return _loader(cfg, batcher, train_part, True), _loader(cfg, batcher, valid, False)


def _shakespeare_corpus(cfg: DictConfig) -> Any:
    from burnlike.data.dataset import DatasetError
    from burnlike.data.shakespeare import ShakespeareChar

    try:
        return ShakespeareChar.load(cfg.data.root, cfg.data.train_fraction)
    except DatasetError as e:
        raise _error(cfg, "data.root", str(e)) from e


def _shakespeare_char(cfg: DictConfig) -> tuple[Any, Any]:
    from burnlike.data import TokenWindowsBatcher

    d = cfg.data
    _check_model(cfg, {})  # a model that reads these batches, before its sizes
    if not 0.0 < d.train_fraction < 1.0:
        raise _error(cfg, "data.train_fraction", "expected a fraction in (0, 1)")
    model_block = cfg.model.get("block_size") if "block_size" in cfg.model else None
    block = d.block_size if d.block_size is not None else model_block
    if block is None or block < 1:
        raise _error(cfg, "data.block_size", "expected the characters a model reads at once (>= 1), or null with "
                     "a model that has a block_size")
    if model_block is not None and block > model_block:
        raise _error(cfg, "data.block_size model.block_size", "the windows are longer than the model's context: "
                     "set data.block_size=null (the model's)")
    corpus = _shakespeare_corpus(cfg)
    _check_model(cfg, {"vocab_size": (corpus.vocab.vocab_size(), f"{corpus.vocab.vocab_size()} characters in "
                                                                 f"{corpus.path}")})
    train = _guarded(cfg, "data.root data.block_size", lambda: corpus.train(block + 1))
    valid = _guarded(cfg, "data.root data.block_size", lambda: corpus.valid(block + 1))
    batcher = TokenWindowsBatcher()  # a pass is ~80k batches: drop its short last one, nanoGPT has none
    return _loader(cfg, batcher, train, True, drop_last=True), _loader(cfg, batcher, valid, True)


def generated_sample(cfg: DictConfig, model: Any) -> str | None:
    """The text the trained `model` writes after `data.sample_prompt` (a `data=shakespeare_char` run
    whose model has `generate`), seeded by `seed`; None for other runs.

    Args:
        cfg: The run's composed config (`data`, `seed`).
        model: The trained model.
    """
    if OmegaConf.get_type(cfg.data) is not ShakespeareCharDataConfig or cfg.data.sample_length <= 0:
        return None
    generate = getattr(model, "generate", None)
    if not callable(generate):
        return None
    import torch

    vocab = _shakespeare_corpus(cfg).vocab
    try:
        prompt = vocab.encode(cfg.data.sample_prompt)
    except ValueError as e:
        raise _error(cfg, "data.sample_prompt", str(e)) from e
    device = next(model.parameters()).device
    generator = torch.Generator(device=device).manual_seed(int(cfg.seed))
    tokens = generate(prompt, int(cfg.data.sample_length), temperature=float(cfg.data.temperature),
                      top_k=cfg.data.top_k, generator=generator)
    text: str = vocab.decode(tokens)
    return text


# data config class -> (builder, option name, the shipped models that read its batches)
_OPTIONS: dict[type, tuple[Any, str, tuple[str, ...]]] = {
    DataConfig: (_mnist, "mnist", ("mnist", "mlp")),
    ImageFolderDataConfig: (_image_folder, "image_folder", ("cnn",)),
    CsvDataConfig: (_csv, "csv", ("tabular",)),
    ShakespeareCharDataConfig: (_shakespeare_char, "shakespeare_char", ("gpt",)),
}


def _shipped_models() -> dict[type, type]:
    """burnlike's own model configs -> the data config whose batches they read."""
    from burnlike.models.cnn import CnnConfig
    from burnlike.models.gpt import GptConfig
    from burnlike.models.mlp import MlpConfig
    from burnlike.models.mnist import ModelConfig
    from burnlike.models.tabular import TabularMlpConfig

    return {ModelConfig: DataConfig, MlpConfig: DataConfig, CnnConfig: ImageFolderDataConfig,
            TabularMlpConfig: CsvDataConfig, GptConfig: ShakespeareCharDataConfig}


def _check_model(cfg: DictConfig, wanted: dict[str, tuple[int, str]]) -> None:
    """A shipped model must read this data's batches and match its sizes; another repo's model
    (`_target_` or its own config) is trusted, but a size field it shares is still checked."""
    model_type = OmegaConf.get_type(cfg.model)
    data_type = OmegaConf.get_type(cfg.data)
    reads = _shipped_models().get(model_type)  # type: ignore[arg-type]
    if reads is not None and reads is not data_type:
        _, option, models = _OPTIONS[data_type]  # type: ignore[index]
        raise DataConfigError(f"model: {model_type.__name__} reads the batches of data={_OPTIONS[reads][1]}, "  # type: ignore[union-attr]
                              f"not data={option}: use " + " or ".join(f"model={m}" for m in models))
    for field, (value, what) in wanted.items():
        if field in cfg.model and cfg.model[field] != value:
            raise _error(cfg, f"model.{field}", f"the data has {what}: set model.{field}={value}")


def build_loaders(cfg: DictConfig) -> tuple[Any, Any]:
    """`(train_loader, valid_loader)` for `cfg.data`, after checking `cfg.model` fits the data.

    Args:
        cfg: The run's composed config (`data`, `model`).

    Raises:
        DataConfigError: `cfg.data` is no data option of the app, or the model doesn't fit the data.
    """
    data_type = OmegaConf.get_type(cfg.data)
    if data_type not in _OPTIONS:
        raise DataConfigError(f"data: {getattr(data_type, '__name__', data_type)} is not a data option this app "
                              f"knows: expected one of {[o[1] for o in _OPTIONS.values()]}")
    if data_type is DataConfig:
        _check_model(cfg, {})
    loaders: tuple[Any, Any] = _OPTIONS[data_type][0](cfg)
    return loaders
