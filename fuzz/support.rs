//! What the three fuzz targets share: a seeded generator, the case count, the corpus on disk,
//! and a runner that turns each panic into a named failure instead of stopping at the first.
//!
//! Each target includes this file with `#[path = "…/fuzz/support.rs"] mod support;`, so the
//! fuzzers run under plain `cargo test` on stable: no nightly, no `cargo fuzz`.
//!
//! - `PTXKIT_FUZZ_CASES=N` runs N generated cases instead of the target's default (run longer
//!   locally: `PTXKIT_FUZZ_CASES=100000 cargo test -p ptx-parser --test fuzz --release`).
//! - `PTXKIT_FUZZ_SEED=S` starts the generator elsewhere; every failure prints the seed and the
//!   case index that reproduce it, and the input itself, to be added to `fuzz/corpus/<target>/`.

#![allow(dead_code)]

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// SplitMix64: small, fast, and the same sequence on every machine for one seed.
#[derive(Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// True with probability `1 / n`.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// The seed of a run: `PTXKIT_FUZZ_SEED` or the target's fixed default.
pub fn seed(default: u64) -> u64 {
    std::env::var("PTXKIT_FUZZ_SEED")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(default)
}

/// The number of generated cases: `PTXKIT_FUZZ_CASES` or the target's CI default.
pub fn cases(default: usize) -> usize {
    std::env::var("PTXKIT_FUZZ_CASES")
        .ok()
        .and_then(|s| s.trim().replace('_', "").parse().ok())
        .unwrap_or(default)
}

/// `fuzz/corpus/<target>/` at the repository root, from a crate one level below it.
pub fn corpus_dir(manifest_dir: &str, target: &str) -> PathBuf {
    Path::new(manifest_dir)
        .join("..")
        .join("fuzz")
        .join("corpus")
        .join(target)
}

/// Every file of the corpus, sorted by name, as `(name, text)`.
pub fn corpus(manifest_dir: &str, target: &str) -> Vec<(String, String)> {
    let dir = corpus_dir(manifest_dir, target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("the corpus {} cannot be read: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&p)
                .unwrap_or_else(|e| panic!("{} cannot be read: {e}", p.display()));
            (name, text)
        })
        .collect()
}

/// One case that panicked or broke the target's property.
pub struct Failure {
    pub case: String,
    pub message: String,
    pub input: String,
}

/// Runs cases, catching panics, and reports them all at the end.
pub struct Runner {
    target: &'static str,
    failures: Vec<Failure>,
    ran: usize,
    started: Instant,
    slowest: (Duration, String),
}

impl Runner {
    pub fn new(target: &'static str) -> Runner {
        Runner {
            target,
            failures: Vec::new(),
            ran: 0,
            started: Instant::now(),
            slowest: (Duration::ZERO, String::new()),
        }
    }

    /// Runs `check` on `input`; a panic or an `Err` is recorded under `case`.
    pub fn run(&mut self, case: String, input: &str, check: impl FnOnce() -> Result<(), String>) {
        self.ran += 1;
        let t0 = Instant::now();
        let outcome = catch_unwind(AssertUnwindSafe(check));
        let took = t0.elapsed();
        if took > self.slowest.0 {
            self.slowest = (took, case.clone());
        }
        let message = match outcome {
            Ok(Ok(())) => return,
            Ok(Err(m)) => m,
            Err(payload) => {
                let text = payload
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "a panic with a non-text payload".into());
                format!("panicked: {text}")
            }
        };
        self.failures.push(Failure {
            case,
            message,
            input: input.to_string(),
        });
    }

    /// Prints the count and time, then fails with every failure and its input.
    pub fn finish(self) {
        let elapsed = self.started.elapsed();
        eprintln!(
            "fuzz {}: {} cases in {:.1} s (slowest {:.2} s: {}), {} failed",
            self.target,
            self.ran,
            elapsed.as_secs_f64(),
            self.slowest.0.as_secs_f64(),
            self.slowest.1,
            self.failures.len()
        );
        if self.failures.is_empty() {
            return;
        }
        let mut report = String::new();
        for f in self.failures.iter().take(10) {
            report.push_str(&format!(
                "\n--- {}: {}\n{}\n",
                f.case,
                f.message,
                truncate(&f.input, 4000)
            ));
        }
        panic!(
            "{} of {} fuzz cases of `{}` failed (fix the bug, then add the input to fuzz/corpus/{}/ as a regression case):{report}",
            self.failures.len(),
            self.ran,
            self.target,
            self.target
        );
    }
}

fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}
