"""Burn's `Transform2D` (burn-vision `transform/transform2d.rs`, 0.21): a 2×3 affine matrix over
normalised coordinates, resampled bilinearly with border padding.

The matrix maps each output pixel's position, in [-1, 1] with the corner pixels' centres at ±1
(Burn's `affine_grid_2d`, torch's `affine_grid(..., align_corners=True)`), to where it is sampled in
the input: `transform(images)` is `grid_sample(images, affine_grid(A), "bilinear", "border",
align_corners=True)`, Burn's `GridSampleOptions` for it. `composed([a, b, c])` is `I·a·b·c`, so the
last transform in the list acts first on the positions.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import torch
import torch.nn.functional as F  # noqa: N812 - torch's convention

Matrix = tuple[tuple[float, float, float], tuple[float, float, float]]


class Transform2D:
    """`Transform2D.rotation(theta, cx, cy)`, `.scale(sx, sy, cx, cy)`, `.translation(tx, ty)`,
    `.shear(shx, shy, cx, cy)`, `.identity()`, `.composed(transforms)`; `.transform(images)` on
    `[batch, channels, height, width]` float images returns the resampled images, same shape.

    Positions are normalised: (-1, -1) is the top-left pixel's centre, (1, 1) the bottom-right one's,
    so a centre (cx, cy) of (0, 0) is the image's middle whatever its size.

    Args:
        transform: The 2×3 matrix `((a, b, tx), (c, d, ty))` mapping an output position to where it
            is sampled in the input.
    """

    def __init__(self, transform: Matrix) -> None:
        self.matrix = transform
        """The 2×3 affine matrix, rows of (x, y, offset)."""

    def __repr__(self) -> str:
        return f"Transform2D({self.matrix})"

    @classmethod
    def identity(cls) -> Transform2D:
        """The transform that leaves images as they are."""
        return cls(((1.0, 0.0, 0.0), (0.0, 1.0, 0.0)))

    @classmethod
    def rotation(cls, theta: float, cx: float, cy: float) -> Transform2D:
        """A rotation around (cx, cy).

        Args:
            theta: The angle in radians.
            cx: The centre's x, normalised (0 is the middle).
            cy: The centre's y, normalised.
        """
        c, s = math.cos(theta), math.sin(theta)
        return cls(((c, -s, cx - c * cx + s * cy), (s, c, cy - s * cx - c * cy)))

    @classmethod
    def scale(cls, sx: float, sy: float, cx: float, cy: float) -> Transform2D:
        """A scaling around (cx, cy). A factor above 1 samples a wider area, so the content shrinks.

        Args:
            sx: The factor along x.
            sy: The factor along y.
            cx: The centre's x, normalised (0 is the middle).
            cy: The centre's y, normalised.
        """
        return cls(((sx, 0.0, cx - sx * cx), (0.0, sy, cy - sy * cy)))

    @classmethod
    def translation(cls, tx: float, ty: float) -> Transform2D:
        """A shift of the sampled positions by (tx, ty), normalised: 2 is the image's whole width or
        height, and the content moves the other way.

        Args:
            tx: The shift along x.
            ty: The shift along y.
        """
        return cls(((1.0, 0.0, tx), (0.0, 1.0, ty)))

    @classmethod
    def shear(cls, shx: float, shy: float, cx: float, cy: float) -> Transform2D:
        """A shear around (cx, cy).

        Args:
            shx: The shear along x (x moves by `shx` times the distance to cy).
            shy: The shear along y (y moves by `shy` times the distance to cx).
            cx: The centre's x, normalised (0 is the middle).
            cy: The centre's y, normalised.
        """
        return cls(((1.0, shx, -shx * cy), (shy, 1.0, -shy * cx)))

    @classmethod
    def composed(cls, transforms: Iterable[Transform2D]) -> Transform2D:
        """The product `identity · t1 · t2 · …` (Burn's `composed`): the last one acts first on
        the positions.

        Args:
            transforms: The transforms, in Burn's order.
        """
        result = cls.identity()
        for t in transforms:
            result = result.mul(t)
        return result

    def mul(self, other: Transform2D) -> Transform2D:
        """The affine product `self · other` (2×3 matrices as 3×3 with a last row 0 0 1).

        Args:
            other: The transform applied to the positions first.
        """
        (a, b, c), (d, e, f) = self.matrix
        (g, h, i), (j, k, m) = other.matrix
        return Transform2D(((a * g + b * j, a * h + b * k, a * i + b * m + c),
                            (d * g + e * j, d * h + e * k, d * i + e * m + f)))

    def transform(self, img: torch.Tensor) -> torch.Tensor:
        """Resample images through this transform: bilinear, the border pixels repeated outside.

        Args:
            img: Float images `[batch, channels, height, width]`.

        Returns:
            The resampled images, same shape, dtype and device.

        Raises:
            ValueError: `img` is not a 4-d float tensor.
        """
        if img.dim() != 4 or not img.is_floating_point():
            raise ValueError(f"Transform2D.transform expects float images [batch, channels, height, width], "
                             f"got a {img.dim()}-d {img.dtype} tensor of shape {list(img.shape)}")
        theta = torch.tensor(self.matrix, dtype=img.dtype, device=img.device).expand(img.shape[0], 2, 3)
        grid = F.affine_grid(theta, list(img.shape), align_corners=True)
        return F.grid_sample(img, grid, mode="bilinear", padding_mode="border", align_corners=True)
