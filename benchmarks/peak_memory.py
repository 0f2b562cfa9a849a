"""Peak memory of one operation on Linux: reset the process's peak-RSS mark (/proc/self/clear_refs),
run it, read the mark (VmHWM) back. Shared by the benchmarks that measure in a fresh child."""

from __future__ import annotations


def status_bytes(field: str) -> int:
    """A `/proc/self/status` size field (`VmRSS`, `VmHWM`) in bytes; 0 if the kernel has none."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def reset_peak() -> int:
    """Set the peak-RSS mark to the RSS now, and return that RSS (the baseline)."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return status_bytes("VmRSS")


def peak_above(baseline: int) -> int:
    """Bytes the peak RSS rose above `baseline` since `reset_peak`."""
    return status_bytes("VmHWM") - baseline
