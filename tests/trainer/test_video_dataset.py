"""The local video dataset on a tiny LLaVA-Video-style dataset written here with PyAV itself.

Every frame of a test video is one flat grey level that encodes its index, so the decoded (resized,
normalised) frames tell which source frames the uniform sampler picked.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from autotune.errors import ConfigError
from autotune.models import PRESETS
from autotune.workload import make_workload
from trainer.data import SyntheticVideoSamples, make_dataset, prompt_length
from trainer.video_dataset import LocalVideoSamples, make_video_loader
from trainer.video_decode import decode_uniform_frames, uniform_frame_indices

av = pytest.importorskip("av")  # the trainer imports PyAV lazily; these tests write videos with it

MODEL = PRESETS["tiny"]  # image_size 56, vocab 256
GREY_BASE, GREY_STEP = 20, 30  # frame i is grey level 20 + 30 i: far apart enough to survive h264


def write_grey_video(path: Path, frame_count: int, width_px: int, height_px: int, codec: str = "libx264") -> None:
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream(codec, rate=8)
        stream.width, stream.height, stream.pix_fmt = width_px, height_px, "yuv420p"
        for index in range(frame_count):
            pixels = torch.full((height_px, width_px, 3), GREY_BASE + GREY_STEP * index, dtype=torch.uint8)
            frame = av.VideoFrame.from_ndarray(pixels.numpy(), format="rgb24")
            container.mux(stream.encode(frame))
        container.mux(stream.encode())  # flush the encoder's delayed frames


def frame_indices_seen(frames: torch.Tensor) -> list[int]:
    """Source frame index of each normalised frame, from its mean grey level."""
    grey = (frames.mean(dim=(1, 2, 3)) * 0.5 + 0.5) * 255
    return [round((level - GREY_BASE) / GREY_STEP) for level in grey.tolist()]


def conversation(question: str, answer: str) -> list[dict]:
    return [{"from": "human", "value": f"<image>\n{question}"}, {"from": "gpt", "value": answer}]


@pytest.fixture(scope="module")
def dataset_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("llava_video")
    (root / "videos").mkdir()
    write_grey_video(root / "videos" / "square.mp4", 8, 64, 64)
    write_grey_video(root / "videos" / "wide.mp4", 8, 96, 48)
    # Matroska keeps no frame count: exercises the packet-counting fallback.
    write_grey_video(root / "videos" / "short.mkv", 5, 64, 64, codec="mpeg4")
    annotations = [
        {"id": "a", "video": "videos/square.mp4", "conversations": conversation("Colour?", "Grey.")},
        {"id": "b", "video": "videos/wide.mp4", "conversations": conversation("Q" * 100, "A" * 100)},
        {"id": "c", "video": "videos/short.mkv", "conversations": conversation("Short?", "Yes.")},
    ]
    (root / "annotations.json").write_text(json.dumps(annotations))
    return root


def test_uniform_indices_span_first_to_last_frame():
    assert uniform_frame_indices(8, 4) == [0, 2, 4, 7]
    assert uniform_frame_indices(5, 8) == [0, 0, 1, 1, 2, 2, 3, 4]  # fewer frames than asked: repeats
    assert uniform_frame_indices(10, 1) == [0]


@pytest.mark.parametrize("name, expected", [("square.mp4", [0, 2, 4, 7]), ("short.mkv", [0, 1, 2, 4])])
def test_decoded_frames_are_the_uniformly_sampled_ones(dataset_dir, name, expected):
    frames = decode_uniform_frames(dataset_dir / "videos" / name, 4, MODEL.vision.image_size)
    assert frames.shape == (4, 3, 56, 56) and frames.dtype == torch.uint8
    assert frame_indices_seen(frames.float() / 127.5 - 1) == expected


def test_loader_gives_batches_in_the_trainer_format(dataset_dir):
    workload = make_workload(MODEL, frames=4)
    dataset = make_dataset(MODEL, workload, str(dataset_dir / "annotations.json"), length=4, seed=0)
    assert isinstance(dataset, LocalVideoSamples)
    batches = list(make_video_loader(dataset, batch_size=2, num_workers=1))
    assert len(batches) == 2
    prompt, answer = prompt_length(workload.text_tokens), workload.text_tokens - prompt_length(workload.text_tokens)
    for batch in batches:
        assert batch["prompt_ids"].shape == (2, prompt) and batch["prompt_ids"].dtype == torch.long
        assert batch["answer_ids"].shape == (2, answer) and batch["answer_ids"].dtype == torch.long
        assert batch["frames"].shape == (2, 4, 3, 56, 56) and batch["frames"].dtype == torch.float32
        assert batch["frames"].min() >= -1 and batch["frames"].max() <= 1
    # Sample 3 cycles back to the first entry of the seeded order: same video, same frames.
    frames = torch.cat([batch["frames"] for batch in batches])
    assert frame_indices_seen(frames[3]) == frame_indices_seen(frames[0])


def test_text_is_byte_ids_padded_and_truncated_to_the_workload(dataset_dir):
    workload = make_workload(MODEL, frames=2)
    dataset = make_dataset(MODEL, workload, str(dataset_dir / "annotations.json"), length=3)
    by_id = {dataset.entry(i).sample_id: dataset[i] for i in range(3)}
    prompt = prompt_length(workload.text_tokens)
    question = torch.tensor(list(b"Colour?"))  # 7 of the tiny workload's 8 prompt ids
    # The prompt is left-padded (text next to the video), the placeholder and newline dropped.
    assert torch.equal(by_id["a"]["prompt_ids"][-len(question) :], question)
    assert (by_id["a"]["prompt_ids"][: prompt - len(question)] == 0).all()
    assert by_id["a"]["answer_ids"].tolist() == list(b"Grey.") + [0] * (workload.text_tokens - prompt - 5)
    assert (by_id["b"]["answer_ids"] == ord("A")).all()  # long text is cut to fit
    for sample in by_id.values():
        assert len(sample["prompt_ids"]) + len(sample["answer_ids"]) == workload.text_tokens


def test_a_user_tokenizer_fits_the_seam_and_is_checked_against_the_vocab(dataset_dir):
    workload = make_workload(MODEL, frames=1)
    path = dataset_dir / "annotations.json"
    words = LocalVideoSamples(MODEL, workload, path, length=1, tokenizer=lambda text: [len(w) for w in text.split()])
    assert words[0]["answer_ids"].shape == (workload.text_tokens - prompt_length(workload.text_tokens),)
    too_big = LocalVideoSamples(MODEL, workload, path, length=1, tokenizer=lambda text: [MODEL.llm.vocab])
    with pytest.raises(ConfigError, match="outside the model's vocabulary"):
        too_big[0]


def test_no_data_means_synthetic_samples():
    workload = make_workload(MODEL)
    assert isinstance(make_dataset(MODEL, workload, None, length=2), SyntheticVideoSamples)


def test_missing_annotation_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match=r"annotation file .* not found"):
        make_dataset(MODEL, make_workload(MODEL), str(tmp_path / "nope.json"), length=1)


def test_missing_video_is_a_config_error_before_any_worker_starts(tmp_path):
    entry = {"id": "x", "video": "gone.mp4", "conversations": conversation("Q", "A")}
    (tmp_path / "annotations.json").write_text(json.dumps([entry]))
    with pytest.raises(ConfigError, match=r"gone.mp4 not found.*video root"):
        make_dataset(MODEL, make_workload(MODEL), str(tmp_path / "annotations.json"), length=1)


def test_entry_without_video_is_a_config_error(tmp_path):
    (tmp_path / "annotations.json").write_text(json.dumps([{"id": "x", "conversations": conversation("Q", "A")}]))
    with pytest.raises(ConfigError, match='entry 0: needs a "video" path'):
        make_dataset(MODEL, make_workload(MODEL), str(tmp_path / "annotations.json"), length=1)


def test_unreadable_video_is_a_config_error_from_the_worker(tmp_path):
    (tmp_path / "broken.mp4").write_bytes(b"not a video at all" * 10)
    entry = {"id": "x", "video": "broken.mp4", "conversations": conversation("Q", "A")}
    (tmp_path / "annotations.json").write_text(json.dumps([entry]))
    dataset = make_dataset(MODEL, make_workload(MODEL), str(tmp_path / "annotations.json"), length=1)
    # DataLoader re-raises the worker's exception with its type; the message names the file and fix.
    with pytest.raises(ConfigError, match=r"broken.mp4: cannot be decoded .*re-encode"):
        next(iter(make_video_loader(dataset, batch_size=1, num_workers=1)))


@pytest.mark.slow
def test_probe_trains_on_a_local_video_dataset(dataset_dir, tmp_path):
    """`python -m trainer.probe --data annotations.json`: a real 1-rank probe on decoded videos."""
    from tests.trainer.conftest import torchrun

    out = tmp_path / "result.json"
    flags = ["-m", "trainer.probe", "--model", "tiny", "--hardware", "cpu", "--warmup-steps", "1", "--steps", "2",
             "--global-batch", "2", "--data", str(dataset_dir / "annotations.json"), "--out", str(out)]
    done = torchrun(flags, nproc=1, cwd=tmp_path, timeout_s=180)
    result = json.loads(out.read_text())
    assert result["status"] == "ok", result.get("error", "") + done.stderr[-3000:]
    assert result["tflops"]["model_total"] > 0
    # Trial 67 #8: nothing in result.json said it trained on videos (steps 200x a synthetic probe's)
    assert result["data"] == {"annotations": str(dataset_dir / "annotations.json"), "video_root": None}
