//! NCCL collectives over two GPUs: every operation against host arithmetic on f32 and bf16,
//! an all-reduce replayed from a captured graph, and a killed rank in a multi-process run
//! making its peer fail within the timeout. Each test skips with one line where fewer than two
//! GPUs or no libnccl are present.

use kernel_runtime::{
    nccl_available, Bf16, Buffer, CollectiveElem, Communicator, Device, Error, ReduceOp, UniqueId,
    NCCL_ID_ENV,
};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TIMEOUT: Duration = Duration::from_secs(60);

/// CUDA devices 0 and 1, or `None` after one line saying why not.
fn two_gpus() -> Option<Vec<Device>> {
    if let Err(e) = nccl_available() {
        println!("skipping: {e}");
        return None;
    }
    match (Device::cuda(0), Device::cuda(1)) {
        (Ok(a), Ok(b)) => Some(vec![a, b]),
        (Err(e), _) | (_, Err(e)) => {
            println!("skipping: fewer than 2 GPUs ({e})");
            None
        }
    }
}

/// Runs `body(rank, comm)` on one thread per communicator and returns each rank's result.
fn per_rank<R: Send>(comms: Vec<Communicator>, body: impl Fn(&Communicator) -> R + Sync) -> Vec<R> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = comms
            .iter()
            .map(|comm| scope.spawn(|| body(comm)))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// Rank `r`'s values: small integers, exact in bf16 and in any summation order.
fn rank_values(rank: usize, n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| ((i % 17) as f32 - 8.0) * (rank + 1) as f32)
        .collect()
}

fn collectives_match_the_host<T: CollectiveElem>(from: fn(f32) -> T, to: fn(T) -> f32) {
    let Some(devices) = two_gpus() else { return };
    let comms = Communicator::per_device(&devices).unwrap();
    let n = 1 << 16;
    let world = 2usize;
    let all: Vec<Vec<f32>> = (0..world).map(|r| rank_values(r, n)).collect();
    let sum: Vec<f32> = (0..n).map(|i| all[0][i] + all[1][i]).collect();
    per_rank(comms, |comm| {
        let r = comm.rank();
        let s = comm.device().stream().unwrap();
        let up = |v: &[f32]| {
            Buffer::from_host(&s, &v.iter().map(|&x| from(x)).collect::<Vec<_>>()).unwrap()
        };
        let down = |b: &Buffer<T>| {
            b.to_host(&s)
                .unwrap()
                .into_iter()
                .map(to)
                .collect::<Vec<f32>>()
        };

        let mut x = up(&all[r]);
        comm.all_reduce(&s, &mut x, ReduceOp::Sum).unwrap();
        comm.wait(&s, TIMEOUT).unwrap();
        assert_eq!(down(&x), sum, "all_reduce sum, rank {r}");

        let mut x = up(&all[r]);
        comm.all_reduce(&s, &mut x, ReduceOp::Average).unwrap();
        comm.wait(&s, TIMEOUT).unwrap();
        let mean: Vec<f32> = sum.iter().map(|v| v / 2.0).collect();
        assert_eq!(down(&x), mean, "all_reduce average, rank {r}");

        let send = up(&all[r]);
        let mut recv = up(&vec![0.0; n / world]);
        comm.reduce_scatter(&s, &send, &mut recv, ReduceOp::Sum)
            .unwrap();
        comm.wait(&s, TIMEOUT).unwrap();
        let block = r * n / world..(r + 1) * n / world;
        assert_eq!(down(&recv), sum[block], "reduce_scatter, rank {r}");

        let send = up(&all[r][..n / world]);
        let mut recv = up(&vec![0.0; n]);
        comm.all_gather(&s, &send, &mut recv).unwrap();
        comm.wait(&s, TIMEOUT).unwrap();
        let gathered: Vec<f32> = [&all[0][..n / world], &all[1][..n / world]].concat();
        assert_eq!(down(&recv), gathered, "all_gather, rank {r}");

        let mut x = up(&all[r]);
        comm.broadcast(&s, &mut x, 1).unwrap();
        comm.wait(&s, TIMEOUT).unwrap();
        assert_eq!(down(&x), all[1], "broadcast from 1, rank {r}");

        // A wrong length is refused on every rank before anything is queued.
        let err = comm
            .all_gather(&s, &send, &mut up(&vec![0.0; n - 1]))
            .unwrap_err();
        assert!(matches!(err, Error::CollectiveLength { .. }), "{err}");
    });
}

#[test]
fn gpu_collectives_on_two_ranks_match_the_host_f32() {
    collectives_match_the_host(|x| x, |x| x);
}

#[test]
fn gpu_collectives_on_two_ranks_match_the_host_bf16() {
    collectives_match_the_host(Bf16::from_f32, Bf16::to_f32);
}

#[test]
fn gpu_all_reduce_replays_from_a_captured_graph() {
    let Some(devices) = two_gpus() else { return };
    let comms = Communicator::per_device(&devices).unwrap();
    per_rank(comms, |comm| {
        let s = comm.device().stream().unwrap();
        let mut x = Buffer::from_host(&s, &vec![1.0f32 + comm.rank() as f32; 4096]).unwrap();
        let graph = s
            .capture(|st| {
                comm.all_reduce_range(st, &mut x, 0..2048, ReduceOp::Sum)?;
                comm.all_reduce_range(st, &mut x, 2048..4096, ReduceOp::Sum)
            })
            .unwrap();
        // Capture queues nothing: the values are still each rank's own.
        assert_eq!(x.to_host(&s).unwrap()[0], 1.0 + comm.rank() as f32);
        graph.replay().unwrap();
        graph.replay().unwrap();
        comm.wait(&s, TIMEOUT).unwrap();
        // 1 and 2 sum to 3; the second replay sums 3 and 3.
        assert_eq!(x.to_host(&s).unwrap(), vec![6.0f32; 4096]);
    });
}

#[test]
fn gpu_a_graph_keeps_its_communicator_alive_after_the_communicator_is_dropped() {
    let Some(devices) = two_gpus() else { return };
    let comms = Communicator::per_device(&devices).unwrap();
    std::thread::scope(|scope| {
        for comm in comms {
            scope.spawn(move || {
                let s = comm.device().stream().unwrap();
                let mut x = Buffer::from_host(&s, &vec![1.0f32; 1024]).unwrap();
                let graph = s
                    .capture(|st| comm.all_reduce(st, &mut x, ReduceOp::Sum))
                    .unwrap();
                graph.replay().unwrap();
                comm.wait(&s, TIMEOUT).unwrap();
                // The graph still holds the communicator: it replays, and dropping the graph
                // afterwards tears the communicator down without waiting on itself.
                drop(comm);
                graph.replay().unwrap();
                s.synchronize().unwrap();
                assert_eq!(x.to_host(&s).unwrap(), vec![4.0f32; 1024]);
                drop(graph);
            });
        }
    });
}

const ROLE_ENV: &str = "PTXKIT_COLLECTIVE_RANK";
const DETECTED: &str = "peer failure detected:";
const HELPER: &str = "collectives::gpu_rank_process_for_the_killed_rank_test";

/// Not a test on its own: the process body of one rank of
/// `gpu_a_killed_rank_makes_its_peer_fail_within_the_timeout`, which runs this binary again
/// with `--ignored` and this test's name.
#[test]
#[ignore]
fn gpu_rank_process_for_the_killed_rank_test() {
    let Ok(rank) = std::env::var(ROLE_ENV) else {
        return;
    };
    let rank: usize = rank.parse().unwrap();
    let id = UniqueId::from_env().unwrap();
    let device = Device::cuda(rank).unwrap();
    let comm = Communicator::join(&device, rank, 2, &id).unwrap();
    let s = device.stream().unwrap();
    let mut x = Buffer::from_host(&s, &vec![1.0f32; 1 << 20]).unwrap();
    comm.all_reduce(&s, &mut x, ReduceOp::Sum).unwrap();
    comm.wait(&s, TIMEOUT).unwrap();
    if rank == 1 {
        // Dies without a word to its peer, as a killed process does.
        std::process::abort();
    }
    comm.all_reduce(&s, &mut x, ReduceOp::Sum).unwrap();
    match comm.wait(&s, Duration::from_secs(10)) {
        Ok(()) => panic!("the all-reduce finished although rank 1 is dead"),
        Err(e) => println!("{DETECTED} {e}"),
    }
}

#[test]
fn gpu_a_killed_rank_makes_its_peer_fail_within_the_timeout() {
    if two_gpus().is_none() {
        return;
    }
    let id = UniqueId::new().unwrap();
    let exe = std::env::current_exe().unwrap();
    let spawn = |rank: usize| {
        Command::new(&exe)
            .args([HELPER, "--exact", "--ignored", "--nocapture"])
            .env(ROLE_ENV, rank.to_string())
            .env(NCCL_ID_ENV, id.to_hex())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap()
    };
    let mut survivor = spawn(0);
    let mut victim = spawn(1);
    let start = Instant::now();
    let deadline = Duration::from_secs(90);
    let status = loop {
        if let Some(status) = survivor.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > deadline {
            let _ = survivor.kill();
            let _ = victim.kill();
            panic!("rank 0 still runs {deadline:?} after its peer died: it hangs");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = victim.kill();
    let _ = victim.wait();
    let out = std::io::read_to_string(survivor.stdout.take().unwrap()).unwrap();
    println!("{out}");
    assert!(status.success(), "rank 0 failed: {status}");
    assert!(
        out.contains(DETECTED),
        "rank 0 did not report its dead peer"
    );
}
