"""`burnlike.train.metric.fid`: Burn 0.21's `Fid`/`FidConfig` (burn-train
`src/metric/vision/fid/`) and burnlike's `FidMetric`.

The InceptionV3 is checked against torchvision's modules loaded from the same file, with
pytorch-fid's pooling applied by hand; the Fréchet distance against its symmetric form in numpy.
The epoch value follows Burn's aggregate (burn-train `src/metric/store/aggregate.rs`: the
count-weighted mean of an epoch's logged entries): `FidMetric` logs one entry per epoch, the FID of
all its images, so that mean is the FID itself, not a mean of per-batch distances."""

import math
import warnings
from dataclasses import dataclass
from functools import partial

import numpy as np
import pytest
import torch
import torch.nn.functional as F
import torchvision
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from burnlike.module import Module
from burnlike.optim import AdamConfig
from burnlike.train import LearnerBuilder, TrainOutput, TrainStep, ValidStep, backward
from burnlike.train.metric import Fid, FidConfig, FidMetric, WeightsError
from burnlike.train.metric.fid import INCEPTION_WEIGHTS_URL, InceptionV3FeatureExtractor
from burnlike.train.output import IMAGE, LOSS, NONE, Adaptor
from tests.helpers.toy import Batch, collate
from tests.train.helpers import feed_epoch
from tests.train.metric.helpers import Images, assert_each_refused, images

IMAGENET_MEAN = torch.tensor([0.485, 0.456, 0.406]).reshape(1, 3, 1, 1)
IMAGENET_STD = torch.tensor([0.229, 0.224, 0.225]).reshape(1, 3, 1, 1)


class Pooled(nn.Module):
    """A small real feature network: each channel's 2×2 average, 12 features."""

    num_features = 12

    def forward(self, x):
        return F.adaptive_avg_pool2d(x, 2).flatten(1)


def small_fid():
    return Fid(normalize=False, extractor=Pooled())


def frechet(a, b):
    """|μa - μb|² + tr(Σa + Σb - 2 (Σa^½ Σb Σa^½)^½) with symmetric eigendecompositions, float64."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    sa, sb = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
    w, v = np.linalg.eigh(sa)
    root = v @ np.diag(np.sqrt(np.clip(w, 0, None))) @ v.T
    cross = np.sqrt(np.clip(np.linalg.eigvalsh(root @ sb @ root), 0, None)).sum()
    return float(((a.mean(0) - b.mean(0)) ** 2).sum() + np.trace(sa) + np.trace(sb) - 2 * cross)


small_images = partial(images, size=8)  # the pooled network reads any size: 8×8 keeps these tests fast


# --- the Fréchet distance -------------------------------------------------------------------------
def test_compute_fid_is_the_frechet_distance_of_the_feature_sets():
    g = torch.Generator().manual_seed(0)
    real, gen = torch.randn(10, 4, generator=g), torch.randn(12, 4, generator=g) * 1.5 + 0.3
    fid = small_fid()
    assert float(fid.compute_fid(real, gen)) == pytest.approx(frechet(real, gen), rel=1e-4)
    assert float(fid.compute_fid(real, real)) == pytest.approx(0.0, abs=1e-4)
    # Burn's own check (metric.rs, test_fid_shifted_mean): a copy shifted by [2, 0, 0] is at |shift|² = 4
    shifted = real[:, :3] + torch.tensor([2.0, 0.0, 0.0])
    assert float(fid.compute_fid(real[:, :3], shifted)) == pytest.approx(4.0, abs=1e-4)


def test_compute_fid_needs_two_rows_of_the_same_width():
    fid = small_fid()
    with pytest.raises(ValueError, match=r"features_gen must be \[N, D\] with N >= 2, got \(1, 4\)"):
        fid.compute_fid(torch.zeros(3, 4), torch.zeros(1, 4))
    with pytest.raises(ValueError, match=r"\(3, 4\) and \(3, 5\) have different feature counts"):
        fid.compute_fid(torch.zeros(3, 4), torch.zeros(3, 5))



def test_calling_fid_on_two_image_batches_is_the_distance_of_their_features():
    fid = small_fid()
    real, gen = small_images(0, 6), small_images(1, 5) * 0.5
    expected = frechet(fid.extract_features(real), fid.extract_features(gen))
    assert float(fid(real, gen)) == pytest.approx(expected, rel=1e-4)
    assert expected > 1e-3  # two different sets: the generated images' features are not the real ones'


def test_init_keeps_the_configs_normalize():
    assert FidConfig(normalize=True).init().normalize is True
    assert FidConfig(normalize=False).init().normalize is False

# --- pytorch-fid's InceptionV3 from its weight file ----------------------------------------------
@pytest.fixture(scope="module")
def inception(tmp_path_factory):
    """torchvision's InceptionV3 laid out as pytorch-fid's weight file (1008 classes, no aux head),
    seeded, He-initialised with non-trivial batch-norm statistics (so the features depend on the
    input); the file, and burnlike's `Fid` read from it."""
    torch.manual_seed(0)
    reference = torchvision.models.inception_v3(weights=None, aux_logits=False, init_weights=False,
                                                num_classes=1008).eval()
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for module in reference.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, nonlinearity="relu", generator=g)
            elif isinstance(module, nn.BatchNorm2d):
                module.bias.copy_(0.1 * torch.randn(module.bias.shape, generator=g))
                module.running_mean.copy_(0.1 * torch.randn(module.running_mean.shape, generator=g))
                module.running_var.copy_(0.5 + torch.rand(module.running_var.shape, generator=g))
    path = tmp_path_factory.mktemp("fid") / "pt_inception.pth"
    # as files older than BatchNorm's counter: no num_batches_tracked (fc.* is the unused classifier)
    torch.save({k: v for k, v in reference.state_dict().items() if not k.endswith("num_batches_tracked")}, path)
    return reference, path, FidConfig().init_pretrained(path)


def pytorch_fid_features(net, x):
    """pytorch-fid's forward over torchvision's modules: its A, C and E blocks average-pool without
    counting the padding, the last block max-pools."""

    def block(b, h, max_pool=False):
        branches = b._forward(h)  # the pool branch comes last
        pooled = F.max_pool2d(h, 3, 1, 1) if max_pool else F.avg_pool2d(h, 3, 1, 1, count_include_pad=False)
        branches[-1] = b.branch_pool(pooled)
        return torch.cat(branches, 1)

    with torch.no_grad():
        h = net.maxpool1(net.Conv2d_2b_3x3(net.Conv2d_2a_3x3(net.Conv2d_1a_3x3(x))))
        h = net.maxpool2(net.Conv2d_4a_3x3(net.Conv2d_3b_1x1(h)))
        h = block(net.Mixed_5d, block(net.Mixed_5c, block(net.Mixed_5b, h)))
        h = net.Mixed_6a(h)
        for name in ("Mixed_6b", "Mixed_6c", "Mixed_6d", "Mixed_6e"):
            h = block(getattr(net, name), h)
        h = block(net.Mixed_7c, block(net.Mixed_7b, net.Mixed_7a(h)), max_pool=True)
        return h.mean(dim=(2, 3))


def test_features_are_pytorch_fids_inception_after_burns_normalisation_and_resize(inception):
    """Burn normalises with ImageNet's mean and std, then resizes to 299×299 bilinearly with aligned
    corners (fid/metric.rs, fid/inception.rs)."""
    reference, _, fid = inception
    x = images(3, 1, size=64)
    expected = pytorch_fid_features(reference, F.interpolate((x - IMAGENET_MEAN) / IMAGENET_STD, size=(299, 299),
                                                             mode="bilinear", align_corners=True))
    features = fid.extract_features(x)
    assert features.shape == (1, 2048)
    torch.testing.assert_close(features, expected, rtol=1e-4, atol=1e-5)
    assert fid.extractor.Mixed_7c.branch_pool.bn.running_var.abs().sum() > 0 and not fid.training


def test_weights_errors_name_the_file_the_key_and_what_was_expected(inception, tmp_path):
    reference, path, fid = inception
    before = fid.extractor.Conv2d_1a_3x3.conv.weight.clone()
    missing = tmp_path / "nowhere.pth"
    with pytest.raises(FileNotFoundError, match=rf"^{missing}: no such file \(expected pytorch-fid's InceptionV3 "
                                                rf"weights \({INCEPTION_WEIGHTS_URL}\); burnlike never downloads"):
        FidConfig().init_pretrained(missing)
    keys = [k for k in reference.state_dict() if not k.endswith("num_batches_tracked")]
    tiny = {k: torch.zeros(1) for k in keys}  # keys are checked before shapes: small files do
    cases = {
        "missing": ({k: v for k, v in tiny.items() if k != "Mixed_7c.branch_pool.bn.running_var"},
                    r"missing key 'Mixed_7c.branch_pool.bn.running_var' \(expected pytorch-fid's InceptionV3"),
        "unexpected": ({**tiny, "Mixed_8a.conv.weight": torch.zeros(1)}, r"unexpected key 'Mixed_8a.conv.weight'"),
        "shape": (tiny, r"key 'Conv2d_1a_3x3.conv.weight' has shape \(1,\), expected \(32, 3, 3, 3\)"),
    }
    assert_each_refused(tmp_path, cases, fid.load_weights)
    text = tmp_path / "notes.pth"
    text.write_text("not weights")
    with pytest.raises(WeightsError, match=rf"^{text}: neither a PyTorch state dict \(.pt/.pth\) nor a safetensors"):
        fid.load_weights(text)
    assert torch.equal(fid.extractor.Conv2d_1a_3x3.conv.weight, before)  # a refused file changes nothing


def test_safetensors_weights_load_as_the_pth_file(inception, tmp_path):
    safetensors = pytest.importorskip("safetensors.torch")
    reference, path, fid = inception
    other = tmp_path / "inception.safetensors"
    state = {k: v.contiguous() for k, v in reference.state_dict().items()}
    state["Mixed_6e.branch7x7dbl_5.conv.weight"] = state["Mixed_6e.branch7x7dbl_5.conv.weight"] + 1.0
    safetensors.save_file(state, other)
    try:
        fid.load_weights(other)
        torch.testing.assert_close(fid.extractor.Mixed_6e.branch7x7dbl_5.conv.weight,
                                   state["Mixed_6e.branch7x7dbl_5.conv.weight"], rtol=0, atol=0)
    finally:
        fid.load_weights(path)


def test_building_and_loading_downloads_nothing(inception, no_downloads):
    _, path, _ = inception
    FidMetric(FidConfig().with_normalize(False).init_pretrained(path))
    assert list(no_downloads.iterdir()) == []


def test_init_pretrained_puts_the_network_on_the_device_asked_for(inception):
    """Burn's `init_pretrained(device)`; the meta device stands for any other than the CPU."""
    _, path, _ = inception
    fid = FidConfig().init_pretrained(path, device="meta")
    assert {t.device.type for t in (*fid.parameters(), *fid.buffers())} == {"meta"}


# --- the epoch's FID ------------------------------------------------------------------------------
def test_the_epoch_value_is_the_fid_of_all_the_epochs_images():
    real = [small_images(10 + i, n) for i, n in enumerate((4, 4, 3))]
    gen = [(r + 0.2 * small_images(20 + i, r.shape[0])).clamp(0, 1) for i, r in enumerate(real)]
    metric = FidMetric(small_fid())
    value, lines = feed_epoch(metric, *(Images(g, r) for g, r in zip(gen, real)))
    pool = Pooled()
    expected = frechet(pool(torch.cat(real)), pool(torch.cat(gen)))
    assert value == pytest.approx(expected, rel=1e-4)
    assert lines == [pytest.approx((expected, 11.0), rel=1e-4)]  # one entry: Burn's mean of it is the value
    # the next epoch starts from nothing: the same images on both sides are at distance 0
    value, lines = feed_epoch(metric, Images(real[0], real[0]), Images(real[1], real[1]))
    assert value == pytest.approx(0.0, abs=1e-5) and lines[0][1] == 8.0


def test_an_epoch_of_fewer_than_two_images_is_nan():
    metric = FidMetric(small_fid())
    value, lines = metric.finish_epoch()
    assert math.isnan(value) and lines == []
    value, lines = feed_epoch(metric, Images(small_images(0, 1), small_images(1, 1)))
    assert math.isnan(value) and lines[0][1] == 1.0


def test_in_a_process_group_the_epoch_state_is_summed_over_the_ranks(one_rank_group):
    metric = FidMetric(small_fid())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "compute before update" warning: a rank fed nothing still joins the sum
        value, lines = metric.finish_epoch()
    assert math.isnan(value) and lines == []
    real, gen = small_images(5, 6), small_images(6, 6)
    value, _ = feed_epoch(metric, Images(gen, real))
    assert value == pytest.approx(frechet(Pooled()(real), Pooled()(gen)), rel=1e-4)


def test_fid_metric_names_itself_and_refuses_what_is_not_an_rgb_batch():
    metric = FidMetric(small_fid())
    assert (metric.name, metric.input, metric.higher_is_better) == ("FID", IMAGE, False)
    assert metric.with_name("FID (valid)").name == "FID (valid)"
    with pytest.raises(ValueError, match=r"^FID \(valid\): targets must be RGB images \[batch, 3, height, width\], "
                                         r"got \(2, 1, 8, 8\)"):
        metric.update(Images(small_images(0, 2), torch.zeros(2, 1, 8, 8)), None)
    with pytest.raises(TypeError, match="FidMetric expects an Fid module"):
        FidMetric(Pooled())
    with pytest.raises(TypeError, match="needs an int attribute num_features"):
        Fid(extractor=nn.Identity())


def test_a_clone_shares_the_network_and_keeps_its_own_images():
    metric = FidMetric(small_fid())
    clone = metric.clone()
    assert clone.fid is metric.fid and clone.name == metric.name
    metric.update(Images(small_images(0, 3), small_images(1, 3)), None)
    assert math.isnan(clone.finish_epoch()[0]) and not math.isnan(metric.finish_epoch()[0])


def test_the_network_is_not_a_submodule_of_the_metric(inception):
    """Lightning would train-mode it, checkpoint it and hand it to DDP."""
    metric = FidMetric(inception[2])
    assert list(metric.parameters()) == [] and metric.state_dict() == {}
    metric.train()
    assert not metric.fid.training and isinstance(metric.fid.extractor, InceptionV3FeatureExtractor)


def test_the_network_and_state_move_with_the_metric_but_keep_their_dtype():
    """As the training module's device changes (Lightning moves it before the first step)."""
    extractor = nn.Sequential(nn.Conv2d(3, 3, 1), Pooled())
    extractor.num_features = 12
    metric = FidMetric(Fid(extractor=extractor))
    metric.half()
    assert extractor[0].weight.dtype == torch.float32
    metric.to("meta")
    assert extractor[0].weight.device.type == "meta" and metric._state.module.device.type == "meta"
    with pytest.raises(TypeError, match=r"^FID has no per-batch value: it is the distance over all the epoch's "
                                        r"images"):
        metric.batch_value(Images(small_images(0, 2), small_images(1, 2)), None)


def test_fid_config_reads_burns_json():
    config = FidConfig.from_dict({"normalize": False, "num_iterations": 30})
    assert config == FidConfig(normalize=False, num_iterations=30) and not config.init().normalize


# --- in a fit -------------------------------------------------------------------------------------
@dataclass
class ImageOutput(Adaptor):
    loss: torch.Tensor
    output: torch.Tensor
    targets: torch.Tensor
    provides = frozenset({LOSS, IMAGE, NONE})


class Denoiser(Module, TrainStep[Batch, ImageOutput], ValidStep[Batch, ImageOutput]):
    """Images [B, 3, 8, 8] through a 1×1 convolution and a sigmoid, towards clean targets."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 1)

    def step(self, batch):
        out = torch.sigmoid(self.conv(batch.x))
        return ImageOutput(F.mse_loss(out, batch.y), out, batch.y)

    def train_step(self, batch):
        item = self.step(batch)
        return TrainOutput(self, backward(item.loss), item)

    def valid_step(self, batch):
        return self.step(batch)


def image_loader(n, seed):
    clean = small_images(seed, n)
    noisy = (clean + 0.3 * torch.randn(clean.shape, generator=torch.Generator().manual_seed(seed + 1))).clamp(0, 1)
    return DataLoader(TensorDataset(noisy, clean), batch_size=5, collate_fn=collate)


def test_a_fit_logs_the_fid_of_the_valid_epochs_images(tmp_path):
    torch.manual_seed(0)
    learner = (LearnerBuilder(tmp_path).metric_valid_numeric(FidMetric(small_fid())).devices(["cpu"]).num_epochs(1)
               .progress_bar(False).with_application_logger(False).build(Denoiser(), AdamConfig(), 1e-2))
    valid = image_loader(18, 1)  # batches of 5, 5, 5, 3
    result = learner.fit(image_loader(20, 0), valid)
    model, pool = result.model, Pooled()
    with torch.no_grad():
        outputs = torch.cat([model.step(batch).output for batch in valid])
    clean = torch.cat([batch.y for batch in valid])
    expected = frechet(pool(clean), pool(outputs))
    assert learner.module.store.epochs("valid", "FID") == {1: pytest.approx(expected, rel=1e-4)}
    assert float(result.trainer.callback_metrics["valid/FID"]) == pytest.approx(expected, rel=1e-4)
    [line] = (tmp_path / "valid" / "epoch-1" / "FID.log").read_text().splitlines()
    value, count = line.split(",")
    assert float(value) == pytest.approx(expected, rel=1e-4) and count == "18"
