"""`burnlike.train.metric.dists`: Burn 0.21's `Dists`/`DistsConfig` (burn-train
`src/metric/vision/dists/`) and burnlike's `DistsMetric`.

The distance is checked against Burn's formula computed here over torchvision's VGG16 layers,
loaded from the same ImageNet-layout file, with the paper's L2 pooling (a 3×3 Hanning window,
padding 1), in float64. The epoch value follows Burn's aggregate of numeric entries (burn-train
`src/metric/store/aggregate.rs`: Σ value·count / Σ count), each batch's entry being its mean
distance and its size."""

import pytest
import torch
import torch.nn.functional as F
import torchvision
from torch import nn

from burnlike.train.metric import Dists, DistsConfig, DistsMetric, WeightsError
from burnlike.train.metric.dists import bundled_weights
from burnlike.train.output import IMAGE
from tests.train.helpers import feed_epoch
from tests.train.metric.helpers import (
    Images,
    assert_each_refused,
    he_initialised,
    images,
    save_as_torchvision,
)

MEAN = torch.tensor([0.485, 0.456, 0.406], dtype=torch.float64).reshape(1, 3, 1, 1)
STD = torch.tensor([0.229, 0.224, 0.225], dtype=torch.float64).reshape(1, 3, 1, 1)
TOTAL = 3 + 64 + 128 + 256 + 512 + 512


@pytest.fixture(scope="module")
def weights(tmp_path_factory):
    """A seeded torchvision VGG16 `features` (He-initialised) saved as torchvision publishes it (plus
    a classifier DISTS ignores), and random positive α, β in the DISTS file's layout with Σ α = Σ β."""
    folder = tmp_path_factory.mktemp("dists")
    torch.manual_seed(0)
    features = he_initialised(torchvision.models.vgg.make_layers(torchvision.models.vgg.cfgs["D"]).double().eval())
    backbone = save_as_torchvision(features, folder / "vgg16.pth", {"classifier.0.weight": torch.zeros(4, 8)})
    g = torch.Generator().manual_seed(1)
    alpha = torch.rand(1, TOTAL, 1, 1, generator=g) + 0.05
    beta = alpha.flatten()[torch.randperm(TOTAL, generator=g)].reshape(1, TOTAL, 1, 1)
    ab = folder / "weights.pt"
    torch.save({"alpha": alpha, "beta": beta}, ab)
    return features, alpha.flatten().double(), beta.flatten().double(), backbone, ab


def reference(features, alpha, beta, x, y):
    """Burn's DISTS (dists/metric.rs), and the paper's score, in float64 over torchvision's layers:
    ImageNet-normalised input, VGG16 with L2 pooling √(3×3 Hanning sum of x², clamped at 1e-10)."""
    window = torch.tensor([0.5, 1.0, 0.5], dtype=torch.float64)
    kernel = torch.outer(window, window) / 4.0

    def stages(img):
        h = (img.double() - MEAN) / STD
        out = [h]
        for i, layer in enumerate(features[:30]):
            if isinstance(layer, nn.MaxPool2d):
                k = kernel.expand(h.shape[1], 1, 3, 3)
                h = F.conv2d(h * h, k, stride=2, padding=1, groups=h.shape[1]).clamp_min(1e-10).sqrt()
            else:
                h = layer(h)
            if i in (3, 8, 15, 22, 29):
                out.append(h)
        return out

    with torch.no_grad():
        s_terms, t_terms = [], []
        for fx, fy in zip(stages(x), stages(y)):
            mx, my = fx.mean((2, 3)), fy.mean((2, 3))
            vx, vy = ((fx - mx[..., None, None]) ** 2).mean((2, 3)), ((fy - my[..., None, None]) ** 2).mean((2, 3))
            cov = ((fx - mx[..., None, None]) * (fy - my[..., None, None])).mean((2, 3))
            s_terms.append((2 * mx * my + 1e-6) / (mx**2 + my**2 + 1e-6))
            t_terms.append((2 * cov + 1e-6) / (vx + vy + 1e-6))
        s, t = torch.cat(s_terms, 1), torch.cat(t_terms, 1)
        burn = ((1 - s) * alpha).sum(1) / alpha.sum() + ((1 - t) * beta).sum(1) / beta.sum()
        paper = 1 - ((s * alpha).sum(1) + (t * beta).sum(1)) / (alpha.sum() + beta.sum())
        return burn, paper


def test_dists_is_burns_formula_over_the_files_vgg16_and_weights(weights):
    features, alpha, beta, backbone, ab = weights
    dists = DistsConfig().init_pretrained(backbone, ab)
    x, y = images(1), (images(1) * 0.7 + 0.3 * images(2))
    burn, paper = reference(features, alpha, beta, x, y)
    # one batch: (x, y), then (y, x) and (x, x) for Burn's checks (dists/metric.rs): symmetric, 0 when identical
    distance = dists.forward_no_reduction(torch.cat([x, y, x]), torch.cat([y, x, x]))
    torch.testing.assert_close(distance[:2].double(), burn, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(distance[2:4], distance[:2])
    torch.testing.assert_close(distance[4:], torch.zeros(2), rtol=0, atol=1e-5)
    # with Σ α = Σ β, Burn's distance is twice the paper's score
    torch.testing.assert_close(burn, 2 * paper)


def test_init_is_burns_and_normalize_false_takes_normalised_images(weights):
    dists = DistsConfig().init()
    assert torch.equal(dists.alpha, torch.full((TOTAL,), 0.1)) and torch.equal(dists.beta, dists.alpha)
    plain = Dists(normalize=False)
    plain.load_state_dict(dists.state_dict())
    x, y = images(3), images(4)
    mean, std = MEAN.float(), STD.float()
    per_image = dists.forward_no_reduction(x, y)
    torch.testing.assert_close(plain.forward_no_reduction((x - mean) / std, (y - mean) / std), per_image)
    torch.testing.assert_close(dists(x, y), per_image.mean())
    torch.testing.assert_close(dists(x, y, "sum"), per_image.sum())


def test_init_builds_the_network_on_the_device_asked_for():
    dists = DistsConfig().init(device="meta")
    assert {t.device.type for t in [*dists.parameters(), *dists.buffers()]} == {"meta"}


def test_weights_in_burns_flat_layout_or_torchmetrics_copy_load(weights, tmp_path):
    _, alpha, beta, backbone, _ = weights
    flat = tmp_path / "flat.pt"
    torch.save({"alpha": alpha.float(), "beta": beta.float()}, flat)
    dists = DistsConfig().init_pretrained(backbone, flat)
    assert torch.equal(dists.alpha, alpha.float()) and torch.equal(dists.beta, beta.float())
    published = torch.load(bundled_weights(), map_location="cpu", weights_only=True)
    dists.load_weights(backbone)
    assert torch.equal(dists.beta, published["beta"].flatten())


def test_weights_errors_name_the_file_the_key_and_what_was_expected(weights, tmp_path):
    _, alpha, beta, backbone, ab = weights
    nowhere = tmp_path / "vgg16-397923af.pth"
    with pytest.raises(FileNotFoundError, match=rf"^{nowhere}: no such file \(expected the VGG16 ImageNet weights "
                                                r"torchvision publishes \(https://download.pytorch.org/models/"
                                                r"vgg16-397923af.pth\); burnlike never downloads weights\)$"):
        DistsConfig().init_pretrained(nowhere, ab)
    dists = DistsConfig().init()
    cases = {
        "missing": ({"alpha": alpha.float()}, r"missing key 'beta' \(expected the DISTS alpha and beta "
                                              r"\(https://github.com/dingkeyan93/DISTS/raw/master/DISTS_pytorch/"
                                              r"weights.pt\)\)$"),
        "unexpected": ({"alpha": alpha.float(), "beta": beta.float(), "gamma": torch.zeros(3)},
                       r"unexpected key 'gamma'"),
        "shape": ({"alpha": alpha.float()[:100], "beta": beta.float()},
                  r"key 'alpha' has shape \(100,\), expected \(1475,\)"),
    }
    assert_each_refused(tmp_path, cases, lambda file: dists.load_weights(backbone, file), suffix=".pt")
    conv = tmp_path / "conv.pth"
    torch.save({"features.0.weight": torch.zeros(64, 3, 3, 3)}, conv)
    with pytest.raises(WeightsError, match=rf"^{conv}: missing keys 'features.0.bias', 'features.2.weight'"):
        dists.load_weights(conv, ab)
    # the backbone was fine but its α and β were not: nothing was copied
    assert torch.equal(dists.alpha, torch.full((TOTAL,), 0.1))


def test_building_and_loading_downloads_nothing(weights, no_downloads):
    _, _, _, backbone, ab = weights
    metric = DistsMetric(DistsConfig().init_pretrained(backbone, ab))
    metric.update(Images(images(0, n=1, size=16), images(1, n=1, size=16)), None)
    assert list(no_downloads.iterdir()) == []


# --- the metric -----------------------------------------------------------------------------------
def test_the_epoch_value_is_the_batch_size_weighted_mean_of_the_distances(weights):
    _, _, _, backbone, ab = weights
    dists = DistsConfig().init_pretrained(backbone, ab)
    x, y = images(5, n=3, size=16), images(6, n=3, size=16)
    metric = DistsMetric(dists)
    value, lines = feed_epoch(metric, Images(x[:2], y[:2]), Images(x[2:], y[2:]))
    per_image = dists.forward_no_reduction(x, y).double()
    assert lines == [pytest.approx((float(per_image[:2].mean()), 2.0)), pytest.approx((float(per_image[2]), 1.0))]
    assert value == pytest.approx(float(per_image.mean()), rel=1e-6)  # not the mean of the two batch means
    assert (metric.name, metric.input, metric.higher_is_better) == ("DISTS", IMAGE, False)


def test_the_metric_refuses_what_is_not_an_rgb_batch_naming_itself():
    metric = DistsMetric(Dists()).with_name("texture")
    with pytest.raises(ValueError, match=r"^texture: expects RGB images \[batch, 3, height, width\], got \(2, 4, 8, 8\)"):
        metric.update(Images(torch.zeros(2, 4, 8, 8), torch.zeros(2, 4, 8, 8)), None)
    with pytest.raises(ValueError, match=r"^texture: images \(2, 3, 8, 8\) and \(2, 3, 9, 9\) differ in shape"):
        metric.update(Images(torch.zeros(2, 3, 8, 8), torch.zeros(2, 3, 9, 9)), None)
    with pytest.raises(TypeError, match="DistsMetric expects a Dists module"):
        DistsMetric(nn.Identity())


def test_the_network_stays_out_of_the_metric():
    dists = Dists()
    metric = DistsMetric(dists)
    assert list(metric.parameters()) == [] and metric.state_dict() == {}
    assert not any(p.requires_grad for p in dists.parameters())
    clone = metric.clone()
    assert clone.dists is dists and clone.name == "DISTS"


def test_the_network_moves_with_the_metric_but_keeps_its_dtype():
    """As the training module's device changes (Lightning moves it before the first step, and before
    a CUDA-graph capture)."""
    metric = DistsMetric(Dists())
    metric.half()
    assert metric.dists.alpha.dtype == torch.float32
    metric.to("meta")
    assert metric.dists.alpha.device.type == "meta"
