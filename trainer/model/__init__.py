"""The multimodal model: plain PyTorch, architecture only (no parallelism, no runtime wiring).

`build_model(spec)` gives a `MultimodalModel` whose parameter count is exactly `spec.params()`;
`trainer.engine.apply_deepspeed` wraps it for training from outside.
"""

from trainer.model.multimodal import MultimodalModel, PackedSequence, build_model

__all__ = ["MultimodalModel", "PackedSequence", "build_model"]
