"""An S3 server (moto) on loopback for object-store tests: fsspec, boto and child processes reach it
through the environment it sets."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.helpers.net import free_port


@contextmanager
def moto_s3(bucket: str = "runs") -> Iterator[dict[str, str]]:
    """Start the server, point this process's environment (and so its children's) at it, make
    `bucket`; yields the variables set, restored afterwards."""
    pytest.importorskip("s3fs")
    server_module = pytest.importorskip("moto.server")
    port = free_port()
    server = server_module.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    import urllib.request

    # moto's backends live in this process, shared by every server started here: start empty
    urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}/moto-api/reset", method="POST")).close()
    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
           "FSSPEC_S3_ENDPOINT_URL": f"http://127.0.0.1:{port}",  # s3fs (fsspec's config)
           "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}"}  # any boto client (TensorBoard's S3 writer)
    before = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    import fsspec.config

    fsspec.config.set_conf_env(fsspec.config.conf)  # this process's s3fs reads the endpoint too
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()
    s3fs.S3FileSystem().mkdir(bucket)
    try:
        yield env
    finally:
        server.stop()
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        fsspec.config.conf.pop("s3", None)
        s3fs.S3FileSystem.clear_instance_cache()
