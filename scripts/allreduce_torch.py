"""All-reduce bus bandwidth through torch.distributed's NCCL backend, at the sizes and in the
columns of runtime/examples/bench_allreduce.rs, so the two can be compared on one machine.

    torchrun --nproc_per_node N scripts/allreduce_torch.py
"""

import os
import time

import torch
import torch.distributed as dist

MIN_BYTES = 1 << 20
MAX_BYTES = 1 << 30
WARMUP = 5


def iterations(nbytes: int) -> int:
    return max(10, min(200, (1 << 34) // nbytes))


def main() -> None:
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    buf = torch.zeros(MAX_BYTES // 4, dtype=torch.float32, device="cuda")
    if rank == 0:
        print(f"torch {torch.__version__}, NCCL {'.'.join(map(str, torch.cuda.nccl.version()))}, "
              f"{world} GPU(s): {torch.cuda.get_device_name()}")
        print(f"{'bytes':>12} {'elements':>12} {'iters':>6} {'time (us)':>12} "
              f"{'algbw GB/s':>12} {'busbw GB/s':>12}")
    nbytes = MIN_BYTES
    while nbytes <= MAX_BYTES:
        elems = nbytes // 4
        view = buf[:elems]
        iters = iterations(nbytes)
        for _ in range(WARMUP):
            dist.all_reduce(view, op=dist.ReduceOp.SUM)
        torch.cuda.synchronize()
        dist.barrier()
        start = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(view, op=dist.ReduceOp.SUM)
        torch.cuda.synchronize()
        seconds = (time.perf_counter() - start) / iters
        dist.barrier()
        if rank == 0:
            algbw = nbytes / seconds / 1e9
            busbw = algbw * 2 * (world - 1) / world
            print(f"{nbytes:>12} {elems:>12} {iters:>6} {seconds * 1e6:>12.1f} "
                  f"{algbw:>12.2f} {busbw:>12.2f}")
        nbytes *= 2
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
