"""Burn's `burn::vision` (the `burn-vision` crate) in torch: what Burn's examples use from it.

`Transform2D` is Burn's affine resampling (`burn_vision::transform::Transform2D`), the mnist
example's augmentation. The rest of burn-vision has torch/torchvision counterparts to use as they
are (see docs/burn.md): `torchvision.ops.nms` for `nms`, `torchvision.transforms.v2.RandomAffine`
for random affine augmentation drawn per image, `torchvision.utils.save_image` for `save_image`.
"""

from burnlike.vision.transform import Transform2D

__all__ = ["Transform2D"]
