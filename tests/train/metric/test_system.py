"""`burnlike.train.metric.system`: the machine metrics. Without CUDA the CUDA metrics record nothing
(their log stays empty) and say so once, naming themselves; the CPU temperature comes from sysfs, a
coretemp hwmon first, else a CPU thermal zone, and never from a sensor of another device (a disk,
the board): NaN where the machine exposes none, as in Burn."""

import logging
import math
from pathlib import Path

import pytest
import torch

from burnlike.train.metric import CpuTemperature, CudaMetric, CudaUtilization, MetricContext
from burnlike.train.metric.system import cpu_temperature
from tests.train.helpers import feed_epoch


def sensor(root: Path, kind: str, folder_name: str, **files: str) -> None:
    """A sysfs sensor folder `root/class/<kind>/<folder_name>` holding `files` (name -> text)."""
    folder = root / "class" / kind / folder_name
    folder.mkdir(parents=True)
    for file, text in files.items():
        (folder / file).write_text(text + "\n")


# --- CUDA -----------------------------------------------------------------------------------------
def test_cuda_memory_records_nothing_without_cuda():
    value, lines = feed_epoch(CudaMetric(), None, None)
    if torch.cuda.is_available():
        assert len(lines) == 2 and value > 0
    else:
        assert lines == [] and math.isnan(value)  # no CUDA: nothing recorded


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the answers of a machine without CUDA")
def test_cuda_metrics_probe_what_they_read_and_record_nothing_without_it():
    memory, usage = CudaMetric(), CudaUtilization()
    assert memory.probe() is True  # memory needs CUDA only
    assert usage.probe() is False  # utilisation needs NVML, which can't answer here
    assert not memory.available and not usage.available
    for metric in (memory, usage):
        metric.update(None, MetricContext())
        assert not metric.updated


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the answers of a machine without CUDA")
def test_cuda_metrics_say_once_why_they_record_nothing(caplog):
    with caplog.at_level(logging.WARNING, logger="burnlike.train"):
        memory, usage = CudaMetric(), CudaUtilization()
    assert memory.available is False and usage.available is False
    assert [r.getMessage() for r in caplog.records] == [
        "CudaMetric: no CUDA device or NVML, nothing will be recorded",
        "CudaUtilization: no CUDA device or NVML, nothing will be recorded",
    ]


def test_cuda_metrics_record_what_torch_reads_where_a_gpu_answers(monkeypatch):
    """On a GPU machine (torch's answers given here: 5 of 8 GB in use, 42 % busy), each step records
    the reading as one value: memory in use (total - free) in GB, the utilisation in %."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (3e9, 8e9))
    monkeypatch.setattr(torch.cuda, "utilization", lambda device=None: 42)
    assert feed_epoch(CudaMetric(), None, None) == (5.0, [(5.0, 1.0), (5.0, 1.0)])
    assert feed_epoch(CudaUtilization(), None) == (42.0, [(42.0, 1.0)])


# --- CPU temperature ------------------------------------------------------------------------------
def test_cpu_temperature_prefers_coretemp_then_a_cpu_thermal_zone(tmp_path):
    assert math.isnan(feed_epoch(CpuTemperature(tmp_path), None)[0])  # no sensor at all
    sensor(tmp_path, "thermal", "thermal_zone0", type="x86_pkg_temp", temp="47000")
    assert feed_epoch(CpuTemperature(tmp_path), None)[0] == 47.0
    sensor(tmp_path, "hwmon", "hwmon3", name="coretemp", temp1_input="52500")
    assert feed_epoch(CpuTemperature(tmp_path), None)[0] == 52.5
    assert CpuTemperature().name == "CPU Temperature" and CpuTemperature().unit == "°C"


def test_cpu_temperature_reads_only_cpu_sensors(tmp_path):
    sensor(tmp_path, "hwmon", "hwmon0", name="nvme", temp1_input="61000")  # a disk: not the CPU
    sensor(tmp_path, "hwmon", "hwmon1", name="coretemp")  # a CPU driver without a reading
    sensor(tmp_path, "thermal", "thermal_zone0", type="acpitz", temp="30000")  # the board
    sensor(tmp_path, "thermal", "thermal_zone1", temp="35000")  # no type
    assert math.isnan(cpu_temperature(tmp_path))
    sensor(tmp_path, "thermal", "thermal_zone2", type="CPU-therm", temp="44500")  # case-insensitive
    assert cpu_temperature(tmp_path) == 44.5
    soc = tmp_path / "soc"
    sensor(soc, "thermal", "thermal_zone0", type="soc_thermal", temp="51000")
    assert cpu_temperature(soc) == 51.0
    value, lines = feed_epoch(CpuTemperature(soc), None)
    assert value == 51.0 and lines == [(51.0, 1.0)]


def test_cpu_temperature_reads_the_machines_sysfs_by_default():
    assert CpuTemperature().sys_root == Path("/sys")
    default, machine = cpu_temperature(), cpu_temperature("/sys")  # NaN both where /sys has no CPU sensor
    assert default == machine or (math.isnan(default) and math.isnan(machine))
