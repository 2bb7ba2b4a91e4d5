"""What a study is about (model, hardware, workload, GPUs per node, space), kept in the study itself
so a resumed run can check it is the same study and `report`/`export` can rebuild candidates.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from autotune.candidate import Candidate, Knobs
from autotune.errors import UserError
from autotune.hardware import HardwareProfile, load_hardware
from autotune.models import ModelSpec, model_from_json
from autotune.space import SearchSpace
from autotune.workload import Workload


@dataclass(frozen=True)
class StudySettings:
    model: ModelSpec
    hardware: HardwareProfile
    workload: Workload
    gpus_per_node: int
    space: SearchSpace

    def candidate(self, params: dict) -> Candidate:
        return Candidate(Knobs(**params), self.model, self.hardware, self.workload, self.gpus_per_node)

    def to_dict(self) -> dict:
        space = asdict(self.space)
        space.pop("source")
        return {
            "model": self.model.to_json(),
            "hardware": self.hardware.source or self.hardware.name,
            "hardware_name": self.hardware.name,
            "workload": self.workload.to_dict(),
            "gpus_per_node": self.gpus_per_node,
            "space": {k: list(v) for k, v in space.items()},
        }

    @classmethod
    def from_dict(cls, data: dict) -> "StudySettings":
        return cls(
            model=model_from_json(data["model"]),
            hardware=load_hardware(data["hardware"]),
            workload=Workload(**data["workload"]),
            gpus_per_node=int(data["gpus_per_node"]),
            space=SearchSpace(**{k: tuple(v) for k, v in data["space"].items()}),
        )

    def check_same_as(self, stored: dict, where: str) -> None:
        """A resumed study must be the same question; otherwise say how to start a new one."""
        current = self.to_dict()
        differs = [key for key in ("model", "hardware_name", "workload", "gpus_per_node", "space") if current[key] != stored.get(key)]
        if differs:
            raise UserError(
                f"{where} holds a study with a different {', '.join(differs)}; "
                "pass --out NEW_DIR (in a shared --storage, --study-name NEW) to start a new study, or repeat the original options to resume"
            )
