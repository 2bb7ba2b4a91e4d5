"""A local LLaVA-Video-style dataset: JSON annotations + video files, in the batch format of data.py.

Annotations (LLaVA-Video-178K): a JSON list (or JSON Lines, one object a line) of
    {"id": "...", "video": "relative/path.mp4",
     "conversations": [{"from": "human", "value": "<image>\\nQuestion"}, {"from": "gpt", "value": "Answer"}, ...]}
with video paths relative to a video root (default: the annotation file's folder).
The first human turn is the prompt, the rest of the conversation the answer, matching the
sequence [prompt | video | answer] the trainer builds; the `<image>`/`<video>` placeholder is where
the frames go, so it is dropped from the text. Frames are decoded in `__getitem__`, i.e. in the
DataLoader's worker processes (`make_video_loader`). See docs/data.md.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch

from autotune.errors import ConfigError
from autotune.models import ModelSpec
from autotune.workload import Workload
from trainer.data import prompt_length
from trainer.text_ids import BYTE_PAD_ID, ByteTokenizer, Tokenizer, check_ids, fit_ids
from trainer.video_decode import decode_uniform_frames, normalise_pixels, require_decoder

_PLACEHOLDERS = ("<image>", "<video>")


@dataclass(frozen=True)
class VideoEntry:
    sample_id: str
    video_path: Path
    prompt_text: str
    answer_text: str


def _entry(raw: object, position: int, video_root: Path, origin: str) -> VideoEntry:
    where = f"annotation file {origin}, entry {position}"
    if not isinstance(raw, dict) or not isinstance(raw.get("video"), str):
        raise ConfigError(f'{where}: needs a "video" path (image-only entries are not supported); remove it')
    turns = raw.get("conversations")
    if not isinstance(turns, list) or not all(isinstance(t, dict) and isinstance(t.get("value"), str) for t in turns):
        raise ConfigError(f'{where}: "conversations" must be a list of {{"from", "value"}} turns; fix the entry')
    first_human = next((i for i, t in enumerate(turns) if t.get("from") == "human"), None)
    if first_human is None or not any(t.get("from") == "gpt" for t in turns[first_human + 1 :]):
        raise ConfigError(f'{where}: needs a "human" turn followed by a "gpt" turn; fix the entry')
    prompt = turns[first_human]["value"]
    for placeholder in _PLACEHOLDERS:
        prompt = prompt.replace(placeholder, "")
    answer = "\n".join(t["value"] for t in turns[first_human + 1 :])
    return VideoEntry(str(raw.get("id", position)), video_root / raw["video"], prompt.strip(), answer)


def load_annotations(annotations_path: Path, video_root: Path | None = None) -> list[VideoEntry]:
    """Parse and check the annotation file; videos are not opened here (that is the workers' job). The probe calls it
    while it checks its flags too (trainer/probe.py), so a wrong --data is a usage line before DeepSpeed starts."""
    if not annotations_path.is_file():
        what = "is a folder" if annotations_path.is_dir() else "is not a file" if annotations_path.exists() else "not found"
        raise ConfigError(f"annotation file {annotations_path} {what}; pass the path of a LLaVA-Video JSON file")
    root = video_root if video_root is not None else annotations_path.parent
    if not root.is_dir():
        raise ConfigError(f"video root {root} is not a folder; pass the folder the annotation's video paths are under")
    try:
        text = annotations_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:  # no read permission; not UTF-8 (JSON is)
        raise ConfigError(f"annotation file {annotations_path} cannot be read ({getattr(exc, 'strerror', None) or exc}); pass a readable UTF-8 "
                          "LLaVA-Video JSON file") from None
    if not text.strip():
        raise ConfigError(f"annotation file {annotations_path} is empty; pass a LLaVA-Video JSON file with samples")
    try:
        if annotations_path.suffix == ".jsonl":
            raw_entries = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            raw_entries = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"annotation file {annotations_path}: not valid JSON ({exc}); fix the file") from None
    if not isinstance(raw_entries, list) or not raw_entries:
        raise ConfigError(f"annotation file {annotations_path}: expected a non-empty JSON list of samples")
    return [_entry(raw, i, root, str(annotations_path)) for i, raw in enumerate(raw_entries)]


class LocalVideoSamples(torch.utils.data.Dataset):
    """`length` samples drawn from the annotations in a seeded order (cycling when length > entries).

    The order is a permutation seeded by `seed`, so sample i is the same on every rank and run, and a
    short probe sees a mix of the file rather than its first (often similar) entries.
    """

    def __init__(
        self,
        model: ModelSpec,
        workload: Workload,
        annotations_path: Path,
        video_root: Path | None = None,
        length: int | None = None,
        seed: int = 0,
        tokenizer: Tokenizer | None = None,
        pad_id: int = BYTE_PAD_ID,
    ):
        require_decoder()
        self.model, self.workload = model, workload
        self.entries = load_annotations(Path(annotations_path), None if video_root is None else Path(video_root))
        self.length = len(self.entries) if length is None else length
        self.order = torch.randperm(len(self.entries), generator=torch.Generator().manual_seed(seed)).tolist()
        self.tokenizer = tokenizer if tokenizer is not None else ByteTokenizer(model.llm.vocab)
        self.pad_id = pad_id
        check_ids([pad_id], model.llm.vocab, "pad_id")
        self._check_videos_exist()

    def _check_videos_exist(self) -> None:
        """Fail before any worker starts; only the entries this run will read are checked (one stat each)."""
        used = {self.order[i % len(self.entries)] for i in range(min(self.length, len(self.entries)))}
        missing = [self.entries[i].video_path for i in sorted(used) if not self.entries[i].video_path.is_file()]
        if missing:
            raise ConfigError(
                f"video {missing[0]} not found ({len(missing)} of {len(used)} used videos missing); "
                "check the video root (--video-root) or remove those entries from the annotation file"
            )

    def __len__(self) -> int:
        return self.length

    def entry(self, index: int) -> VideoEntry:
        return self.entries[self.order[index % len(self.entries)]]

    def __getitem__(self, index: int) -> dict:
        entry = self.entry(index)
        frames = decode_uniform_frames(entry.video_path, self.workload.frames, self.model.vision.image_size)
        text = self.workload.text_tokens
        prompt_ids = list(self.tokenizer(entry.prompt_text))
        answer_ids = list(self.tokenizer(entry.answer_text))
        check_ids(prompt_ids + answer_ids, self.model.llm.vocab, f"sample {entry.sample_id}")
        return {
            "prompt_ids": fit_ids(prompt_ids, prompt_length(text), self.pad_id, pad_left=True),
            "frames": normalise_pixels(frames),
            "answer_ids": fit_ids(answer_ids, text - prompt_length(text), self.pad_id, pad_left=False),
        }


def _one_thread_per_worker(worker_id: int) -> None:
    # Workers already run in parallel; torch's default of one thread per core in each would oversubscribe.
    torch.set_num_threads(1)


def make_video_loader(
    dataset: torch.utils.data.Dataset,
    batch_size: int,
    num_workers: int = 2,
    sampler: torch.utils.data.Sampler | None = None,
    pin_memory: bool = False,
) -> torch.utils.data.DataLoader:
    """Batches decoded on CPU by `num_workers` processes (0 = in the calling process, for debugging)."""
    return torch.utils.data.DataLoader(
        dataset,
        batch_size=batch_size,
        sampler=sampler,
        num_workers=num_workers,
        worker_init_fn=_one_thread_per_worker if num_workers > 0 else None,
        persistent_workers=num_workers > 0,
        prefetch_factor=2 if num_workers > 0 else None,
        pin_memory=pin_memory,
    )
