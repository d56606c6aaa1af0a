"""CUDA-event timing shared by the PyTorch comparison scripts (`*_torch.py`), which import it
from this folder when run as `python3 scripts/<name>.py`."""
import torch


def median_ms(fn, reps=20, warmup=5):
    """Median milliseconds of `fn` on the current stream, timed with CUDA events after
    `warmup` untimed calls."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]
