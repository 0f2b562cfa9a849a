"""Another project's training script: its own model and conf dir, burnlike's groups and public API."""

from __future__ import annotations

import json
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from burnlike.app import register_configs

register_configs()  # the structured schemas behind burnlike's optimizer/learner/trainer groups


@hydra.main(version_base="1.3", config_path="conf", config_name="config")
def main(cfg: DictConfig) -> float:
    import burnlike
    from burnlike.data import DataLoaderBuilder, MnistBatcher, MnistDataset
    from burnlike.record import CompactRecorder
    from burnlike.train import LearnerBuilder
    from burnlike.train.metric import AccuracyMetric, LossMetric

    artifact_dir = HydraConfig.get().runtime.output_dir
    burnlike.seed(cfg.seed)

    def loader(dataset: MnistDataset) -> DataLoaderBuilder:
        return (DataLoaderBuilder(MnistBatcher()).batch_size(cfg.data.batch_size).shuffle(cfg.data.shuffle_seed)
                .build(dataset))

    optimizer = OmegaConf.to_object(cfg.optimizer)  # burnlike's AdamConfig, plus the app's `lr`
    learner = (
        LearnerBuilder(artifact_dir)
        .metric_train_numeric(AccuracyMetric()).metric_valid_numeric(AccuracyMetric())
        .metric_valid_numeric(LossMetric())
        .with_file_checkpointer(CompactRecorder())
        .devices(["cpu"]).num_epochs(cfg.learner.num_epochs).summary().progress_bar(False)
        .build(instantiate(cfg.model).init("cpu"), optimizer.init(), optimizer.lr)
    )
    result = learner.fit(loader(MnistDataset.train(cfg.data.root)), loader(MnistDataset.test(cfg.data.root)))
    result.model.save_file(f"{artifact_dir}/model", CompactRecorder())
    best = result.summary.get("valid", "Accuracy").max_value
    Path(artifact_dir, "best.json").write_text(json.dumps({"valid/Accuracy": best}))
    return best


if __name__ == "__main__":
    main()
