"""Only for the optional C accelerator; everything else is in pyproject.toml.

`optional=True`: without a C compiler the install still succeeds and burnlike uses its numpy path
(slower transposed Linear weights in records, same results)."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "burnlike.record._native",
            ["burnlike/record/_native.c"],
            py_limited_api=True,
            define_macros=[("Py_LIMITED_API", "0x030A0000")],
            extra_compile_args=["-O3"],
            optional=True,
        )
    ],
    options={"bdist_wheel": {"py_limited_api": "cp310"}},  # one wheel per platform for every Python >= 3.10
)
