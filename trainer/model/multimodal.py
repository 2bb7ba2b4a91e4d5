"""The whole model: vision tower -> projector -> [prompt | video | answer] -> decoder -> loss.

`pack` builds the decoder input (embeddings, 3D positions, labels, where the LM head runs) for the
full sequence; `forward` is the single-device training loss. Sequence parallelism (applied from
outside) packs, shards the packed sequence and calls the decoder itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from autotune.models import ModelSpec
from trainer.model.llm import IGNORE_INDEX, Decoder
from trainer.model.projector import Projector
from trainer.model.rope import sequence_positions
from trainer.model.vision import VisionTransformer


@dataclass
class PackedSequence:
    embeddings: torch.Tensor  # [b, s, hidden]
    positions: torch.Tensor  # [3, s]
    labels: torch.Tensor  # [b, s], IGNORE_INDEX where there is no target
    text_mask: torch.Tensor  # [s] bool, the LM head's positions

    @property
    def target_count(self) -> int:
        return int((self.labels != IGNORE_INDEX).sum())

    def shard(self, rank: int, world: int) -> "PackedSequence":
        """Contiguous slice `rank` of `world` along the sequence (the length must divide)."""
        length = self.positions.shape[1]
        assert length % world == 0, f"sequence {length} not padded to a multiple of {world}"
        piece = slice(rank * length // world, (rank + 1) * length // world)
        return PackedSequence(
            self.embeddings[:, piece], self.positions[:, piece], self.labels[:, piece], self.text_mask[piece]
        )


def text_labels(prompt_ids: torch.Tensor, answer_ids: torch.Tensor, visual_tokens: int, padding: int) -> torch.Tensor:
    """Next-token targets at text positions; none where the next token is visual, padding or absent."""
    batch, device = prompt_ids.shape[0], prompt_ids.device

    def ignored(n: int) -> torch.Tensor:
        return torch.full((batch, n), IGNORE_INDEX, dtype=torch.long, device=device)

    def shifted(ids: torch.Tensor) -> torch.Tensor:
        return torch.cat([ids[:, 1:], ignored(min(1, ids.shape[1]))], dim=1)

    return torch.cat([shifted(prompt_ids), ignored(visual_tokens), shifted(answer_ids), ignored(padding)], dim=1)


class MultimodalModel(nn.Module):
    def __init__(self, spec: ModelSpec):
        super().__init__()
        self.spec = spec
        v = spec.vision
        self.vision = VisionTransformer(v)
        self.projector = Projector(v.hidden, v.patches_per_side, v.pool, spec.llm.hidden)
        self.llm = Decoder(spec.llm)

    def pack(self, batch: dict, pad_to_multiple: int = 1) -> PackedSequence:
        """Encode the frames and lay out [prompt | video | answer | padding] for the decoder."""
        prompt, frames, answer = batch["prompt_ids"], batch["frames"], batch["answer_ids"]
        b, n_frames = frames.shape[:2]
        visual = self.projector(self.vision(frames.flatten(0, 1))).view(b, -1, self.spec.llm.hidden)
        visual_tokens = visual.shape[1]
        length = prompt.shape[1] + visual_tokens + answer.shape[1]
        padding = -length % pad_to_multiple
        parts = [self.llm.embed_tokens(prompt), visual, self.llm.embed_tokens(answer)]
        if padding:
            parts.append(visual.new_zeros(b, padding, visual.shape[2]))
        grid = self.spec.vision.patches_per_side // self.spec.vision.pool
        positions = sequence_positions(prompt.shape[1], n_frames, grid, answer.shape[1], padding)
        text_mask = torch.zeros(length + padding, dtype=torch.bool)
        text_mask[: prompt.shape[1]] = True
        text_mask[prompt.shape[1] + visual_tokens : length] = True
        return PackedSequence(
            embeddings=torch.cat(parts, dim=1),
            positions=positions.to(visual.device),
            labels=text_labels(prompt, answer, visual_tokens, padding),
            text_mask=text_mask.to(visual.device),
        )

    def forward(self, batch: dict) -> torch.Tensor:
        """Mean next-token loss over the text targets of the micro-batch."""
        seq = self.pack(batch)
        return self.llm(seq.embeddings, seq.positions, seq.labels, seq.text_mask) / max(seq.target_count, 1)


def build_model(spec: ModelSpec, seed: int = 0) -> MultimodalModel:
    """Same seed on every rank, so ranks start from the same weights without a broadcast."""
    torch.manual_seed(seed)
    return MultimodalModel(spec)
