//! Decoding of `cp.async.bulk.tensor`: the tile-mode load of a box from a tensor in global
//! memory into shared memory, completing on an mbarrier, to one CTA or (`.multicast::cluster`)
//! to every CTA of a mask in the cluster (stores are `tensor_store.rs`). The other forms
//! (im2col, reductions into global memory) are reported as unsupported, by name.

use super::memory::spaces;
use super::operands::{Frame, Kind, Symbol};
use crate::error::Error;
use crate::program::{MapSource, Op, Space, TensorCopy, W};
use ptx_parser::{Instruction, Modifier, Operand, StateSpace};

/// The bytes of a tensor map.
const MAP_BYTES: u32 = 128;

/// `cp.async.bulk.tensor.Nd.shared::{cluster,cta}.global{.tile}.mbarrier::complete_tx::bytes
/// {.L2::cache_hint} [dst], [tmap, {c0, ..}], [mbar]{, policy};`
pub(crate) fn tensor_copy(frame: &mut Frame, inst: &Instruction) -> Result<Op, Error> {
    use StateSpace::{Global, Shared, SharedCluster, SharedCta};
    match spaces(inst).as_slice() {
        [Shared | SharedCta | SharedCluster, Global] => {}
        [Global, ..] => return super::tensor_store::tensor_store(frame, inst),
        _ => {
            return Err(frame.unsupported(
                "state spaces other than `.shared::cluster.global` or `.shared::cta.global`",
            ))
        }
    }
    let rank = words(frame, inst)?;
    let ops = &inst.operands;
    let (Some(dst), Some(Operand::TensorCoords { map, coords }), Some(mbar)) =
        (ops.first(), ops.get(1), ops.get(2))
    else {
        return Err(frame.malformed("expected `[dst], [tmap, {c0, ..}], [mbar]`"));
    };
    if coords.len() != rank {
        return Err(frame.malformed(format!(
            "`.{rank}d` takes {rank} coordinates, but {} are given",
            coords.len()
        )));
    }
    // The cache policy operand is only a hint: checked, then ignored, like the cache hints of
    // `ld` and `st`.
    let mut next = 3;
    let multicast = if has_word(inst, "multicast::cluster") {
        let mask = ops
            .get(next)
            .ok_or_else(|| frame.malformed("`.multicast::cluster` needs a CTA-mask operand"))?;
        next += 1;
        Some(frame.src(mask, Kind::Int(W::B16))?)
    } else {
        None
    };
    if has_word(inst, "L2::cache_hint") {
        let policy = ops
            .get(next)
            .ok_or_else(|| frame.malformed("`.L2::cache_hint` needs a cache-policy operand"))?;
        frame.src(policy, Kind::Int(W::B64))?;
    } else if ops.len() > next {
        return Err(frame.malformed("too many operands"));
    }
    let copy = TensorCopy {
        // Offsets in this CTA's shared memory, or (multicast) in each CTA's of the mask.
        dst: frame.address(dst, Space::Shared)?,
        map: map_source(frame, map)?,
        coords: coords
            .iter()
            .map(|c| frame.src(c, Kind::Int(W::B32)))
            .collect::<Result<_, _>>()?,
        mbar: frame.address(mbar, Space::Shared)?,
        multicast,
    };
    frame.tensor_copies.push(copy);
    Ok(Op::TensorCopy(frame.tensor_copies.len() as u32 - 1))
}

pub(super) fn has_word(inst: &Instruction, word: &str) -> bool {
    inst.modifiers
        .iter()
        .any(|m| matches!(m, Modifier::Other(w) if w == word))
}

/// Checks the dotted words and returns the rank `.Nd` names.
fn words(frame: &Frame, inst: &Instruction) -> Result<usize, Error> {
    let mut rank = None;
    for m in &inst.modifiers {
        let word = match m {
            Modifier::Space(_) => continue,
            Modifier::Other(w) => w.as_str(),
            other => return Err(frame.unsupported(format!("`.{other}`"))),
        };
        match word {
            "tile" | "mbarrier::complete_tx::bytes" | "L2::cache_hint" | "multicast::cluster" => {}
            "1d" | "2d" | "3d" | "4d" | "5d" => rank = Some((word.as_bytes()[0] - b'0') as usize),
            w if w.starts_with("im2col") => {
                return Err(
                    frame.unsupported(format!("the `.{w}` load mode; only `.tile` is emulated"))
                )
            }
            "bulk_group" => {
                return Err(frame.malformed(
                    "a load into shared memory completes on an mbarrier, not through `.bulk_group`",
                ))
            }
            other => return Err(frame.unsupported(format!("`.{other}`"))),
        }
    }
    if !has_word(inst, "mbarrier::complete_tx::bytes") {
        return Err(frame.unsupported(
            "loads without `.mbarrier::complete_tx::bytes`, the only completion emulated",
        ));
    }
    rank.ok_or_else(|| frame.malformed("missing the dimension word `.1d` .. `.5d`"))
}

/// The tensor map operand: a register holding its address, a kernel parameter, or a module
/// `.const`/`.global` variable.
pub(super) fn map_source(frame: &mut Frame, name: &str) -> Result<MapSource, Error> {
    if let Some(slot) = frame.lookup(name) {
        return Ok(MapSource::Address(slot));
    }
    match frame.symbols.get(name).copied() {
        Some(Symbol::Param { offset, bytes }) if bytes == MAP_BYTES => Ok(MapSource::Param {
            name: name.to_string(),
            offset,
        }),
        Some(Symbol::Param { bytes, .. }) => Err(frame.malformed(format!(
            "parameter `{name}` is {bytes} bytes, but a tensor map is {MAP_BYTES}; declare it \
             `.param .align 64 .b8 {name}[{MAP_BYTES}]`"
        ))),
        Some(Symbol::Const { offset }) => Ok(MapSource::Address(
            frame.konst(crate::exec::spaces::to_generic(Space::Const, offset as u64)),
        )),
        Some(Symbol::Global) => Ok(MapSource::Address(
            frame.src(&Operand::Symbol(name.to_string()), Kind::Int(W::B64))?,
        )),
        _ => Err(frame.malformed(format!(
            "the tensor map `{name}` is not a register, a kernel parameter, or a `.const` or \
             `.global` variable"
        ))),
    }
}
