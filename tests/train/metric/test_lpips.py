"""`burnlike.train.metric.lpips`: Burn 0.21's `Lpips`/`LpipsConfig`/`LpipsNet` (burn-train
`src/metric/vision/lpips/`) and burnlike's `LpipsMetric`.

Each backbone is checked against Burn's formula computed here over torchvision's own network,
loaded from the same ImageNet-layout file, and the linear layers from an LPIPS-layout file. The
epoch value follows Burn's aggregate of numeric entries (burn-train `src/metric/store/aggregate.rs`:
Σ value·count / Σ count), each batch's entry being its mean distance and its size."""

import pytest
import torch
import torchvision
from torch import nn

from burnlike.nn import Reduction
from burnlike.train.metric import (
    Lpips,
    LpipsConfig,
    LpipsMetric,
    LpipsNet,
    WeightsError,
    get_backbone_weights_url,
    get_lpips_weights_url,
)
from burnlike.train.metric.lpips import bundled_weights
from burnlike.train.output import IMAGE
from tests.train.helpers import feed_epoch
from tests.train.metric.helpers import (
    Images,
    assert_each_refused,
    he_initialised,
    images,
    save_as_torchvision,
)

SHIFT = torch.tensor([-0.030, -0.088, -0.188]).reshape(1, 3, 1, 1)
SCALE = torch.tensor([0.458, 0.448, 0.450]).reshape(1, 3, 1, 1)
# torchvision's `features`, and the layers after which LPIPS reads each backbone (Burn's extractors)
BACKBONES = {
    LpipsNet.Alex: (lambda: torchvision.models.alexnet(weights=None).features, (1, 4, 7, 9, 11)),
    LpipsNet.Squeeze: (lambda: torchvision.models.squeezenet1_1(weights=None).features, (1, 4, 7, 9, 10, 11, 12)),
    LpipsNet.Vgg: (lambda: torchvision.models.vgg.make_layers(torchvision.models.vgg.cfgs["D"]),
                   (3, 8, 15, 22, 29)),
}


def write_weights(tmp_path, net, seed=0):
    """A seeded torchvision backbone (He-initialised) saved as torchvision publishes it (`features.*`,
    plus a classifier LPIPS ignores), and random positive linear layers in the LPIPS file's layout."""
    torch.manual_seed(seed)
    make, taps = BACKBONES[net]
    features = he_initialised(make().eval())
    backbone = save_as_torchvision(features, tmp_path / f"{net.value}_backbone.pth",
                                   {"classifier.1.weight": torch.zeros(10, 4)})
    channels = [features[i - 1].out_channels if isinstance(features[i - 1], nn.Conv2d) else
                features[i].expand1x1.out_channels * 2 for i in taps]
    g = torch.Generator().manual_seed(seed + 1)
    lins = {f"lin{k}.model.1.weight": torch.rand(1, c, 1, 1, generator=g) for k, c in enumerate(channels)}
    lin_path = tmp_path / f"{net.value}_lin.pth"
    torch.save(lins, lin_path)
    return features, lins, backbone, lin_path


def burn_lpips(features, taps, lins, x, y):
    """Burn's LPIPS (lpips/metric.rs): [0, 1] → [-1, 1], shift and scale, unit-normalise each layer's
    features over the channels (norm clamped at 1e-10), weight the squared difference by the
    layer's 1×1 convolution, average over the pixels, sum over the layers; in float64."""

    def taps_of(img):
        h, out = (2 * img - 1 - SHIFT) / SCALE, []
        for i, layer in enumerate(features[: max(taps) + 1]):
            h = layer(h)
            if i in taps:
                out.append(h.double())
        return out

    with torch.no_grad():
        total = torch.zeros(x.shape[0], dtype=torch.float64)
        for k, (fx, fy) in enumerate(zip(taps_of(x), taps_of(y))):
            nx = fx / fx.pow(2).sum(1, keepdim=True).sqrt().clamp_min(1e-10)
            ny = fy / fy.pow(2).sum(1, keepdim=True).sqrt().clamp_min(1e-10)
            weighted = ((nx - ny) ** 2 * lins[f"lin{k}.model.1.weight"].double()).sum(1)
            total += weighted.mean(dim=(1, 2))
        return total


@pytest.mark.parametrize("net", [LpipsNet.Alex, LpipsNet.Squeeze, LpipsNet.Vgg])
def test_lpips_is_burns_formula_over_the_files_backbone_and_linear_layers(tmp_path, net):
    features, lins, backbone, lin_path = write_weights(tmp_path, net)
    lpips = LpipsConfig().with_net(net).init_pretrained(backbone, lin_path)
    x, y = images(1), images(2)
    expected = burn_lpips(features, BACKBONES[net][1], lins, x, y)
    # one batch: (x, y), then (y, x) and (x, x) for Burn's checks (lpips/metric.rs): symmetric, 0 when identical
    distance = lpips.forward_no_reduction(torch.cat([x, y, x]), torch.cat([y, x, x]))
    torch.testing.assert_close(distance[:2].double(), expected, rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(distance[2:4], distance[:2])
    assert distance[4:].tolist() == [0.0, 0.0]


def test_normalize_false_takes_images_in_minus_one_to_one_and_reductions_are_burns(tmp_path):
    _, _, backbone, lin_path = write_weights(tmp_path, LpipsNet.Alex)
    x, y = images(3), images(4)
    unit = LpipsConfig(net=LpipsNet.Alex).init_pretrained(backbone, lin_path)
    signed = LpipsConfig(net=LpipsNet.Alex, normalize=False).init_pretrained(backbone, lin_path)
    per_image = unit.forward_no_reduction(x, y)
    torch.testing.assert_close(signed.forward_no_reduction(2 * x - 1, 2 * y - 1), per_image)
    # Burn's reductions: Mean (and Auto) the mean, Sum the sum; a 0-dim tensor here
    torch.testing.assert_close(unit(x, y), per_image.mean())
    torch.testing.assert_close(unit(x, y, Reduction.Auto), per_image.mean())
    torch.testing.assert_close(unit(x, y, "sum"), per_image.sum())


def test_without_a_weights_file_the_linear_layers_are_torchmetrics_copy(tmp_path):
    _, _, backbone, _ = write_weights(tmp_path, LpipsNet.Alex)
    lpips = LpipsConfig(net=LpipsNet.Alex).init_pretrained(backbone)
    published = torch.load(bundled_weights(LpipsNet.Alex), map_location="cpu", weights_only=True)
    assert torch.equal(lpips.model.lin4.model[1].weight, published["lin4.model.1.weight"])


def test_weights_errors_name_the_file_the_key_and_what_was_expected(tmp_path):
    _, lins, backbone, lin_path = write_weights(tmp_path, LpipsNet.Alex)
    nowhere = tmp_path / "alexnet.pth"
    with pytest.raises(FileNotFoundError, match=rf"^{nowhere}: no such file \(expected the AlexNet ImageNet weights "
                                                r"torchvision publishes \(https://download.pytorch.org/models/"
                                                r"alexnet-owt-4df8aa71.pth\); burnlike never downloads weights\)$"):
        LpipsConfig(net=LpipsNet.Alex).init_pretrained(nowhere, lin_path)
    lpips = LpipsConfig(net=LpipsNet.Alex).init()
    before = lpips.model.lin0.model[1].weight.clone()
    cases = {
        "missing": ({k: v for k, v in lins.items() if k != "lin4.model.1.weight"},
                    r"missing key 'lin4.model.1.weight' \(expected the LPIPS Alex linear layers, version 0.1 "
                    r"\(https://github.com/richzhang/PerceptualSimilarity/raw/master/lpips/weights/v0.1/alex.pth\)\)$"),
        "unexpected": ({**lins, "lin5.model.1.weight": torch.zeros(1, 512, 1, 1)}, r"unexpected key 'lin5.model.1.weight'"),
        "shape": ({**lins, "lin1.model.1.weight": torch.zeros(1, 64, 1, 1)},
                  r"key 'lin1.model.1.weight' has shape \(1, 64, 1, 1\), expected \(1, 192, 1, 1\)"),
    }
    assert_each_refused(tmp_path, cases, lambda file: lpips.load_weights(backbone, file))
    # a SqueezeNet file given as AlexNet's backbone: its first missing key, in torchvision's names
    _, _, squeeze_backbone, _ = write_weights(tmp_path, LpipsNet.Squeeze)
    with pytest.raises(WeightsError, match=rf"^{squeeze_backbone}: missing keys 'features.3.weight', "
                                           r"'features.3.bias', 'features.6.weight', 'features.6.bias', 'features.8.weight' and 3 more "
                                           r"\(expected the AlexNet"):
        lpips.load_weights(squeeze_backbone, lin_path)
    assert torch.equal(lpips.model.lin0.model[1].weight, before)  # the backbone alone was fine: nothing copied


def test_urls_are_burns():
    assert get_lpips_weights_url(LpipsNet.Vgg) == \
        "https://github.com/richzhang/PerceptualSimilarity/raw/master/lpips/weights/v0.1/vgg.pth"
    assert get_backbone_weights_url(LpipsNet.Squeeze) == "https://download.pytorch.org/models/squeezenet1_1-f364aa15.pth"
    assert LpipsConfig() == LpipsConfig(net=LpipsNet.Vgg, normalize=True)
    assert LpipsConfig.from_dict({"net": "Squeeze", "normalize": False}).net is LpipsNet.Squeeze


def test_building_and_loading_downloads_nothing(tmp_path, no_downloads):
    _, _, backbone, lin_path = write_weights(tmp_path, LpipsNet.Squeeze)
    metric = LpipsMetric(LpipsConfig(net=LpipsNet.Squeeze).init_pretrained(backbone))
    metric.update(Images(images(0), images(1)), None)
    LpipsConfig(net=LpipsNet.Alex).init()
    assert list(no_downloads.iterdir()) == []


# --- the metric -----------------------------------------------------------------------------------
def test_the_epoch_value_is_the_batch_size_weighted_mean_of_the_distances(tmp_path):
    _, _, backbone, lin_path = write_weights(tmp_path, LpipsNet.Alex)
    lpips = LpipsConfig(net=LpipsNet.Alex).init_pretrained(backbone, lin_path)
    x, y = images(5, n=3), images(6, n=3)
    metric = LpipsMetric(lpips)
    value, lines = feed_epoch(metric, Images(x[:2], y[:2]), Images(x[2:], y[2:]))
    per_image = lpips.forward_no_reduction(x, y).double()
    assert lines == [pytest.approx((float(per_image[:2].mean()), 2.0)), pytest.approx((float(per_image[2]), 1.0))]
    assert value == pytest.approx(float(per_image.mean()), rel=1e-6)  # not the mean of the two batch means
    assert (metric.name, metric.input, metric.higher_is_better) == ("LPIPS (Alex)", IMAGE, False)


def test_the_metric_refuses_images_the_backbone_cannot_take_naming_itself():
    metric = LpipsMetric(LpipsConfig(net=LpipsNet.Alex).init()).with_name("perceptual")
    with pytest.raises(ValueError, match=r"^perceptual: images \(16, 16\) are smaller than the backbone's 31×31"):
        metric.update(Images(images(0, size=16), images(1, size=16)), None)
    with pytest.raises(ValueError, match=r"^perceptual: expects RGB images \[batch, 3, height, width\], "
                                         r"got \(2, 1, 32, 32\)"):
        metric.update(Images(torch.zeros(2, 1, 32, 32), torch.zeros(2, 1, 32, 32)), None)
    with pytest.raises(ValueError, match=r"images \(2, 3, 32, 32\) and \(1, 3, 32, 32\) differ in shape"):
        metric.update(Images(images(0), images(1, n=1)), None)
    with pytest.raises(TypeError, match="LpipsMetric expects an Lpips module"):
        LpipsMetric(nn.Identity())


def test_the_network_stays_out_of_the_metric_and_in_eval_mode():
    lpips = Lpips(LpipsNet.Alex)
    metric = LpipsMetric(lpips)
    assert list(metric.parameters()) == [] and metric.state_dict() == {}
    lpips.train()
    assert not lpips.training and not any(p.requires_grad for p in lpips.parameters())
    clone = metric.clone()
    assert clone.lpips is lpips and clone.name == metric.name and not clone.updated


def test_the_network_moves_with_the_metric_but_keeps_its_dtype():
    """As the training module's device changes (Lightning moves it before the first step, and before
    a CUDA-graph capture)."""
    metric = LpipsMetric(Lpips(LpipsNet.Alex))
    metric.half()
    assert metric.lpips.model.lin0.model[1].weight.dtype == torch.float32
    metric.to("meta")
    assert metric.lpips.model.lin0.model[1].weight.device.type == "meta"
