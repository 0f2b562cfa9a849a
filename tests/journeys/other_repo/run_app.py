"""Another project reusing burnlike's whole app runner with its own model option and conf dir."""

from __future__ import annotations

import hydra
from omegaconf import DictConfig

from burnlike.app import register_configs

register_configs()


@hydra.main(version_base="1.3", config_path="conf", config_name="config")
def main(cfg: DictConfig) -> float:
    from burnlike.app.run import run

    return run(cfg)


if __name__ == "__main__":
    main()
