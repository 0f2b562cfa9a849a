"""`burnlike.vision.transform`: Burn's `Transform2D`. Each of Burn's own unit tests
(burn-vision/src/transform/transform2d.rs, v0.21.0) gives the same images here: translation,
rotation and scaling (around the centre and a corner) and a composition, resampled bilinearly with
border padding over align-corners coordinates; the mnist example's augmentation keeps an image's
shape and, with no transform, its pixels."""

import math
import random

import pytest
import torch

from burnlike.vision import Transform2D

IMAGE = [[1.0, 2.0], [3.0, 4.0]]


@pytest.mark.parametrize(("transform", "image", "expected"), [
    (Transform2D.translation(0.0, 0.0), [[1.0, 0.0], [0.0, 2.0]], [[1.0, 0.0], [0.0, 2.0]]),  # ..._identity_translation
    (Transform2D.translation(1.0, 1.0), IMAGE, [[2.5, 3.0], [3.5, 4.0]]),  # transform_translation
    (Transform2D.rotation(math.pi / 2, 0.0, 0.0), IMAGE, [[2.0, 4.0], [1.0, 3.0]]),  # transform_rotation_90_degrees
    (Transform2D.rotation(math.pi / 2, 1.0, -1.0), IMAGE, [[2.0, 2.0], [1.0, 1.0]]),  # ..._rotation_around_corner
    (Transform2D.scale(0.5, 0.5, 0.0, 0.0), IMAGE, [[1.75, 2.25], [2.75, 3.25]]),  # transform_scale
    (Transform2D.scale(0.5, 0.5, 1.0, -1.0), IMAGE, [[1.5, 2.0], [2.5, 3.0]]),  # transform_scale_around_corner
    (Transform2D.composed([Transform2D.translation(0.2, -0.5), Transform2D.rotation(math.pi / 3, 0.0, 0.0)]),
     IMAGE, [[1.7830127, 2.8660254], [1.1339746, 3.2830124]]),  # transform_combined
])
def test_burns_transform2d_tests_give_burns_images(transform, image, expected):
    out = transform.transform(torch.tensor([[image]])).tolist()[0][0]
    assert out == [pytest.approx(row, abs=1e-5) for row in expected]


def test_shear_and_composition_are_burns_matrices():
    """`shear` is `[[1, shx, -shx*cy], [shy, 1, -shy*cx]]`; `composed([a, b])` is `I·a·b`."""
    assert Transform2D.shear(0.5, 0.25, 2.0, 4.0).matrix == ((1.0, 0.5, -2.0), (0.25, 1.0, -0.5))
    a, b = Transform2D.scale(2.0, 3.0, 0.0, 0.0), Transform2D.translation(1.0, 1.0)
    assert Transform2D.composed([a, b]).matrix == ((2.0, 0.0, 2.0), (0.0, 3.0, 3.0))  # scale after translate
    assert Transform2D.composed([]).matrix == Transform2D.identity().matrix


def test_the_mnist_examples_augmentation_keeps_shapes_and_the_identity_keeps_pixels():
    """examples/mnist/src/data.rs `mangle_image_batch`: random translate, shear, scale and rotation,
    composed, applied to `[1, 28, 28]` images unsqueezed to 4-d, then squeezed back."""
    rng = random.Random(0)
    images = torch.rand(3, 28, 28)
    transforms = [Transform2D.translation(rng.uniform(-0.2, 0.2), rng.uniform(-0.2, 0.2)),
                  Transform2D.shear(rng.uniform(-0.6, 0.6), rng.uniform(-0.6, 0.6), 0.0, 0.0),
                  Transform2D.scale(rng.uniform(0.6, 1.5), rng.uniform(0.6, 1.5), 0.0, 0.0),
                  Transform2D.rotation(rng.uniform(-math.pi / 4, math.pi / 4), 0.0, 0.0)]
    mangled = Transform2D.composed(transforms).transform(images.unsqueeze(1)).squeeze(1)
    assert mangled.shape == (3, 28, 28) and not torch.allclose(mangled, images)
    assert mangled.min() >= images.min() - 1e-6 and mangled.max() <= images.max() + 1e-6  # bilinear: no overshoot
    same = Transform2D.composed([]).transform(images.unsqueeze(1)).squeeze(1)
    assert torch.allclose(same, images, atol=1e-5)


def test_transform_refuses_what_is_not_a_batch_of_float_images():
    with pytest.raises(ValueError, match=r"^Transform2D\.transform expects float images \[batch, channels, height, "
                                         r"width\], got a 3-d torch\.float32 tensor of shape \[1, 28, 28\]$"):
        Transform2D.identity().transform(torch.zeros(1, 28, 28))
    with pytest.raises(ValueError, match=r"got a 4-d torch\.uint8 tensor"):
        Transform2D.identity().transform(torch.zeros(1, 1, 2, 2, dtype=torch.uint8))
