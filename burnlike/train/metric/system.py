"""Machine metrics (Burn's `Input = ()`): CUDA memory and utilisation, CPU temperature.

Without CUDA the CUDA metrics record nothing (their log stays empty and the summary skips them);
the CPU temperature is NaN where the OS does not expose one, as in Burn.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

import torch

from burnlike.train.metric.base import Metric, MetricContext, Number
from burnlike.train.output import NONE

log = logging.getLogger("burnlike.train")


class _Cuda(Metric):
    """Records only where CUDA (and what the metric reads) is available."""

    input = NONE
    higher_is_better = None

    def __init__(self) -> None:
        super().__init__()
        self.available = torch.cuda.is_available() and self.probe()
        """Whether it records: CUDA (and what the metric reads) is there."""
        if not self.available:
            log.warning("%s: no CUDA device or NVML, nothing will be recorded", type(self).__name__)

    def probe(self) -> bool:
        """Whether what the metric reads answers here (with CUDA there)."""
        return True

    def update(self, item: Any, ctx: MetricContext) -> None:
        if self.available:
            super().update(item, ctx)


class CudaMetric(_Cuda):
    """`Cuda`: memory in use on the current CUDA device, in GB (all processes, as NVML counts it)."""

    name = "Cuda"
    unit = "GB"

    def batch_value(self, item: Any, ctx: MetricContext) -> tuple[Number, Number]:
        free, total = torch.cuda.mem_get_info()
        return (total - free) / 1e9, 1


class CudaUtilization(_Cuda):
    """`Cuda Usage`: the current CUDA device's utilisation in % (needs NVML: nvidia-ml-py)."""

    name = "Cuda Usage"
    unit = "%"

    def probe(self) -> bool:
        try:
            torch.cuda.utilization()
        except Exception:  # torch raises when pynvml is missing or NVML fails
            return False
        return True

    def batch_value(self, item: Any, ctx: MetricContext) -> tuple[Number, Number]:
        return float(torch.cuda.utilization()), 1


# hwmon drivers that report the CPU package/die temperature
_CPU_SENSORS = ("coretemp", "k10temp", "zenpower", "cpu_thermal", "cpu-thermal", "soc_thermal")


def cpu_temperature(sys_root: str | Path = "/sys") -> float:
    """The CPU temperature in °C from Linux sysfs (hwmon, then thermal zones), NaN if none is exposed.

    Args:
        sys_root: Where sysfs is mounted.
    """
    root = Path(sys_root) / "class"
    for hwmon in sorted((root / "hwmon").glob("hwmon*")):
        name = _read(hwmon / "name")
        celsius = _celsius(hwmon / "temp1_input") if name in _CPU_SENSORS else None
        if celsius is not None:
            return celsius
    for zone in sorted((root / "thermal").glob("thermal_zone*")):
        kind = (_read(zone / "type") or "").lower()
        celsius = _celsius(zone / "temp") if any(k in kind for k in ("x86_pkg", "cpu", "soc")) else None
        if celsius is not None:
            return celsius
    return math.nan


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except (OSError, ValueError):
        return None


def _celsius(path: Path) -> float | None:
    """sysfs temperatures are integers in millidegrees."""
    text = _read(path)
    try:
        return int(text) / 1000.0 if text is not None else None
    except ValueError:
        return None


class CpuTemperature(Metric):
    """`CPU Temperature` in °C (NaN where the OS exposes none).

    Args:
        sys_root: Where sysfs is mounted (Linux's hwmon and thermal zones are read).
    """

    name = "CPU Temperature"
    input = NONE
    unit = "°C"
    higher_is_better = False

    def __init__(self, sys_root: str | Path = "/sys") -> None:
        super().__init__()
        self.sys_root = Path(sys_root)
        """Where sysfs is mounted."""

    def batch_value(self, item: Any, ctx: MetricContext) -> tuple[Number, Number]:
        return cpu_temperature(self.sys_root), 1
