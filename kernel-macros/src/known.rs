//! The `#[device]` functions, `#[device] const` items and `#[kernel]`s this compilation has
//! expanded so far. A kernel names a module-level constant through this list. rustc
//! expands a crate's items in source order, and a helper must be defined before the kernels
//! that call it (see `expand.rs`), so a called name that is not here is no helper: the kernel
//! reports "unknown function" with the nearest names, or says that kernels cannot call
//! kernels, instead of asking rustc for a helper macro that does not exist.
//!
//! rust-analyzer expands macros one at a time, in no set order, so there the list is not
//! trusted and calls are resolved through the helpers' macros as always.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

struct Seen {
    devices: BTreeSet<String>,
    kernels: BTreeSet<String>,
    /// `#[device] const` items by name, as source text (tokens cannot cross expansions).
    consts: BTreeMap<String, String>,
}

static SEEN: Mutex<Seen> = Mutex::new(Seen {
    devices: BTreeSet::new(),
    kernels: BTreeSet::new(),
    consts: BTreeMap::new(),
});

fn with<T>(f: impl FnOnce(&mut Seen) -> T) -> T {
    // A poisoned lock only means another expansion panicked; the sets are still whole.
    let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    f(&mut seen)
}

/// Records a `#[device]` function (or an op type's method, by its device name).
pub fn note_device(name: &str) {
    with(|s| s.devices.insert(name.to_string()));
}

/// Records a module-level `#[device] const`, which kernels defined below it may name.
pub fn note_const(item: &syn::ItemConst) {
    let text = quote::ToTokens::to_token_stream(item).to_string();
    with(|s| s.consts.insert(item.ident.to_string(), text));
}

/// The `#[device] const` item named `name`, if one was expanded before.
pub fn module_const(name: &str) -> Option<syn::ItemConst> {
    let text = with(|s| s.consts.get(name).cloned())?;
    syn::parse_str(&text).ok()
}

/// Records a `#[kernel]`.
pub fn note_kernel(name: &str) {
    with(|s| s.kernels.insert(name.to_string()));
}

/// Whether the order of expansion can be relied on (rustc, not an IDE).
pub fn trusted() -> bool {
    std::env::var_os("RUST_ANALYZER_INTERNALS_DO_NOT_USE").is_none()
}

/// What a called name that is neither an intrinsic nor a helper the kernel holds stands for.
pub enum Callee {
    /// A `#[device]` function expanded earlier: fetch it through its macro.
    Device,
    /// A `#[kernel]`.
    Kernel,
    /// Nothing this compilation knows, with the nearest known names.
    Unknown(Vec<String>),
}

/// Classifies `name`.
pub fn callee(name: &str) -> Callee {
    with(|s| {
        if s.devices.contains(name) {
            Callee::Device
        } else if s.kernels.contains(name) {
            Callee::Kernel
        } else {
            let intrinsics = kernel_dsl::intrinsics::INTRINSICS.iter().map(|i| i.name);
            let math = crate::lower::MATH_UNARY.iter().copied();
            let devices = s.devices.iter().map(String::as_str);
            Callee::Unknown(nearest(name, intrinsics.chain(math).chain(devices)))
        }
    })
}

/// Up to three of `candidates` within a third of `name`'s length in edits (at least one),
/// nearest first.
fn nearest<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> Vec<String> {
    let limit = (name.chars().count() / 3).max(1);
    let mut near: Vec<(usize, &str)> = candidates
        .filter(|c| !c.starts_with("__"))
        .map(|c| (edit_distance(name, c), c))
        .filter(|&(d, _)| d <= limit)
        .collect();
    near.sort();
    near.dedup();
    near.into_iter()
        .take(3)
        .map(|(_, c)| c.to_string())
        .collect()
}

/// Levenshtein distance in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let next = (diag + (ca != cb) as usize)
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            diag = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_insertions_deletions_and_substitutions() {
        assert_eq!(edit_distance("exp", "exp"), 0);
        assert_eq!(edit_distance("ex", "exp"), 1);
        assert_eq!(edit_distance("sqrtt", "sqrt"), 1);
        assert_eq!(edit_distance("tanh", "tahn"), 2);
        assert_eq!(edit_distance("", "abc"), 3);
    }

    #[test]
    fn nearest_names_are_within_a_third_of_the_length_and_nearest_first() {
        let names = ["warp_reduce_sum", "warp_reduce_max", "exp", "sqrt"];
        assert_eq!(
            nearest("warp_reduce_sun", names.into_iter()),
            vec!["warp_reduce_sum", "warp_reduce_max"]
        );
        assert_eq!(nearest("sqr", names.into_iter()), vec!["sqrt"]);
        assert!(nearest("gelu", names.into_iter()).is_empty());
    }
}
