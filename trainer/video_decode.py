"""CPU video decoding: a fixed number of frames sampled uniformly over a video, resized and normalised.

Decoding runs in DataLoader workers (one process each), so the decoder itself is single-threaded:
the workers are the parallelism, and letting every worker's codec spawn a thread per core would
oversubscribe the host CPUs that also feed the GPUs. PyAV (`av`, ffmpeg inside its wheel) is
imported lazily so the synthetic data path and the tuner never need it.
"""

from __future__ import annotations

from pathlib import Path

import torch

from autotune.errors import ConfigError

# SigLIP's image processor: rescale to [0, 1], then (x - 0.5) / 0.5, i.e. pixels in [-1, 1].
SIGLIP_MEAN = 0.5
SIGLIP_STD = 0.5


def uniform_frame_indices(frame_count: int, sample_count: int) -> list[int]:
    """`sample_count` indices spread evenly from the first to the last frame, both included.

    The same rule as LLaVA-Video's loader (np.linspace(0, n - 1, k).astype(int)); a video with fewer
    frames than asked for repeats frames, so every sample keeps the workload's frame count.
    """
    assert frame_count >= 1 and sample_count >= 1
    if sample_count == 1:
        return [0]
    step = (frame_count - 1) / (sample_count - 1)
    return [int(i * step) for i in range(sample_count)]


def normalise_pixels(frames_uint8: torch.Tensor) -> torch.Tensor:
    """uint8 [F, 3, H, W] -> float32 normalised as SigLIP expects."""
    return (frames_uint8.float() / 255.0 - SIGLIP_MEAN) / SIGLIP_STD


def require_decoder() -> None:
    """Fail in the launching process, not later in every DataLoader worker, when PyAV is missing."""
    try:
        import av  # noqa: F401
    except ImportError:
        raise ConfigError(
            "reading video files needs PyAV: pip install av (or drop --data to use synthetic samples)"
        ) from None


def _unreadable(path: Path, why: str) -> ConfigError:
    return ConfigError(
        f"video {path}: cannot be decoded ({why}); re-encode it (e.g. ffmpeg -i IN -c:v libx264 OUT.mp4) "
        "or drop its entry from the annotation file"
    )


def _count_frames(container, stream) -> int:
    """Frames in the stream: the container's count when it keeps one, else one pass over the packets.

    MP4 stores the count; Matroska/WebM often do not (0). Demuxing packets reads no pixels, so the
    fallback costs a file read, not a decode.
    """
    if stream.frames > 0:
        return stream.frames
    count = sum(1 for packet in container.demux(stream) if packet.size > 0)
    container.seek(0)
    return count


def decode_uniform_frames(path: Path, sample_count: int, size_px: int) -> torch.Tensor:
    """uint8 [sample_count, 3, size_px, size_px]: uniformly sampled frames, squashed to a square.

    Squash, not crop: SigLIP's processor resizes to size x size without keeping the aspect ratio.
    Decoding goes front to back and stops after the last wanted frame; only wanted frames are
    converted to RGB and resized (swscale, bicubic like SigLIP).
    """
    import av  # lazy: only real-data runs need ffmpeg

    try:
        with av.open(str(path)) as container:
            if not container.streams.video:
                raise _unreadable(path, "no video stream")
            stream = container.streams.video[0]
            stream.thread_type, stream.thread_count = "SLICE", 1
            frame_count = _count_frames(container, stream)
            if frame_count < 1:
                raise _unreadable(path, "no frames")
            wanted = uniform_frame_indices(frame_count, sample_count)
            picked = _decode_indices(container, stream, set(wanted), max(wanted), size_px)
    except av.FFmpegError as exc:
        raise _unreadable(path, str(exc).splitlines()[0]) from None
    if not picked:
        raise _unreadable(path, "no frame could be decoded")
    # The container's count can overstate what decodes (a truncated file): use the nearest good frame.
    return torch.stack([picked[index] if index in picked else picked[_nearest(picked, index)] for index in wanted])


def _nearest(picked: dict[int, torch.Tensor], index: int) -> int:
    return min(picked, key=lambda have: abs(have - index))


def _decode_indices(container, stream, wanted: set[int], last_index: int, size_px: int) -> dict[int, torch.Tensor]:
    picked: dict[int, torch.Tensor] = {}
    for index, frame in enumerate(container.decode(stream)):
        if index in wanted:
            rgb = frame.to_ndarray(width=size_px, height=size_px, format="rgb24", interpolation="BICUBIC")
            picked[index] = torch.from_numpy(rgb).permute(2, 0, 1).contiguous()
        if index >= last_index:
            break
    return picked
