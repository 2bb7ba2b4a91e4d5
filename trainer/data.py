"""Training samples: a seeded synthetic generator with the workload's shapes, and `make_dataset`,
which picks synthetic or a user's local video dataset (trainer/video_dataset.py) with the same shapes.

One sample is a dict with fixed shapes so batches stack:
  prompt_ids  LongTensor[P]          text before the video
  frames      FloatTensor[F, 3, H, W] normalised pixels (H = W = model.vision.image_size)
  answer_ids  LongTensor[A]          text after the video; P + A = workload.text_tokens
The LLM sequence is [prompt | F x tokens_per_frame visual tokens | answer]; the loss is on text.
"""

from __future__ import annotations

from pathlib import Path

import torch

from autotune.models import ModelSpec
from autotune.workload import Workload


def prompt_length(text_tokens: int) -> int:
    """Text before the video: a quarter of the text (at least one token when there are two or more)."""
    return min(max(1, text_tokens // 4), text_tokens - 1) if text_tokens > 1 else 0


class SyntheticVideoSamples(torch.utils.data.Dataset):
    """Deterministic random samples: sample i is the same on every rank and every run."""

    def __init__(self, model: ModelSpec, workload: Workload, length: int, seed: int = 0):
        self.model, self.workload, self.length, self.seed = model, workload, length, seed

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> dict:
        generator = torch.Generator().manual_seed(self.seed * 1_000_003 + index)
        text, vocab = self.workload.text_tokens, self.model.llm.vocab
        size = self.model.vision.image_size
        prompt = prompt_length(text)
        ids = torch.randint(0, vocab, (text,), generator=generator)
        return {
            "prompt_ids": ids[:prompt],
            "frames": torch.randn(self.workload.frames, 3, size, size, generator=generator),
            "answer_ids": ids[prompt:],
        }


def make_dataset(
    model: ModelSpec,
    workload: Workload,
    data: str | None,
    length: int,
    seed: int = 0,
    video_root: str | None = None,
    tokenizer=None,
) -> torch.utils.data.Dataset:
    """The probe's data source: synthetic when `data` is None, else a LLaVA-Video annotation file.

    `video_root` defaults to the annotation file's folder; `tokenizer` (str -> ids) defaults to the
    byte-level stand-in (trainer/text_ids.py). Both sources give the same shapes, so a probe's cost
    differs only by the real data's text and decode work. See docs/data.md.
    """
    if data is None:
        return SyntheticVideoSamples(model, workload, length, seed)
    # Lazy: the video path needs PyAV (ffmpeg), which synthetic-only installs do not have.
    from trainer.video_dataset import LocalVideoSamples

    return LocalVideoSamples(
        model, workload, Path(data), None if video_root is None else Path(video_root), length, seed, tokenizer
    )
