"""Text to token ids of a fixed length: a byte-level stand-in tokenizer and the truncate/pad rule.

No tokenizer ships offline with the probe, and a probe measures cost, which depends on the number of
tokens, not on which ids they are. So the default is a deterministic byte-level tokenizer: UTF-8
bytes, each id = byte % vocab. It is not Qwen's tokenizer: the same text gives more tokens, and the
ids mean nothing to a pretrained model. A real one fits the same seam: any callable str -> list[int]
(e.g. `lambda text: hf_tokenizer(text, add_special_tokens=False)["input_ids"]`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from autotune.errors import ConfigError

Tokenizer = Callable[[str], Sequence[int]]

# Byte 0 (NUL) never occurs in annotation text, so id 0 marks padding unambiguously for byte ids.
BYTE_PAD_ID = 0


class ByteTokenizer:
    """UTF-8 bytes -> ids modulo `vocab` (identity when vocab >= 256)."""

    def __init__(self, vocab: int):
        self.vocab = vocab

    def __call__(self, text: str) -> list[int]:
        return [byte % self.vocab for byte in text.encode("utf-8")]


def fit_ids(ids: Sequence[int], length: int, pad_id: int, pad_left: bool) -> torch.Tensor:
    """Exactly `length` ids: cut the tail when too long, pad when short.

    The prompt is padded on the left so its text sits next to the video that follows it; the answer
    on the right, as a causal LM would see padding after the end of the text.
    """
    kept = list(ids[:length])
    padding = [pad_id] * (length - len(kept))
    return torch.tensor(padding + kept if pad_left else kept + padding, dtype=torch.long)


def check_ids(ids: Sequence[int], vocab: int, origin: str) -> None:
    """A user tokenizer whose ids exceed the model's embedding table would crash deep in the model."""
    if ids and (min(ids) < 0 or max(ids) >= vocab):
        raise ConfigError(
            f"{origin}: tokenizer gave id {max(ids) if max(ids) >= vocab else min(ids)} outside the model's "
            f"vocabulary [0, {vocab}); use a tokenizer that matches the model, or the default byte tokenizer"
        )
