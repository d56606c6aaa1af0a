//! Decoding of `cp.async.bulk.tensor` from shared to global memory: the tile-mode store of a
//! box, completing through the bulk async-group (`cp.async.bulk.commit_group` and
//! `cp.async.bulk.wait_group`, which the emulator runs as no-ops because the store completes
//! when issued).

use super::operands::{Frame, Kind};
use super::tensor_copy::{has_word, map_source};
use crate::error::Error;
use crate::program::{Op, Space, TensorStore, W};
use ptx_parser::{Instruction, Modifier, Operand};

/// `cp.async.bulk.tensor.Nd.global.shared::cta{.tile}.bulk_group{.L2::cache_hint}
/// [tmap, {c0, ..}], [src]{, policy};`
pub(crate) fn tensor_store(frame: &mut Frame, inst: &Instruction) -> Result<Op, Error> {
    let mut rank = None;
    for m in &inst.modifiers {
        let word = match m {
            Modifier::Space(_) => continue,
            Modifier::Other(w) => w.as_str(),
            other => return Err(frame.unsupported(format!("`.{other}` on a tensor store"))),
        };
        match word {
            "tile" | "bulk_group" | "L2::cache_hint" => {}
            "1d" | "2d" | "3d" | "4d" | "5d" => rank = Some((word.as_bytes()[0] - b'0') as usize),
            w if w.starts_with("im2col") => {
                return Err(
                    frame.unsupported(format!("the `.{w}` store mode; only `.tile` is emulated"))
                )
            }
            other => return Err(frame.unsupported(format!("`.{other}` on a tensor store"))),
        }
    }
    if !has_word(inst, "bulk_group") {
        return Err(frame.malformed("a tensor store completes through `.bulk_group`"));
    }
    let rank = rank.ok_or_else(|| frame.malformed("missing the dimension word `.1d` .. `.5d`"))?;
    let ops = &inst.operands;
    let (Some(Operand::TensorCoords { map, coords }), Some(src)) = (ops.first(), ops.get(1)) else {
        return Err(frame.malformed("expected `[tmap, {c0, ..}], [src]`"));
    };
    if coords.len() != rank {
        return Err(frame.malformed(format!(
            "`.{rank}d` takes {rank} coordinates, but {} are given",
            coords.len()
        )));
    }
    if has_word(inst, "L2::cache_hint") {
        let policy = ops
            .get(2)
            .ok_or_else(|| frame.malformed("`.L2::cache_hint` needs a cache-policy operand"))?;
        frame.src(policy, Kind::Int(W::B64))?;
    } else if ops.len() > 2 {
        return Err(frame.malformed("too many operands"));
    }
    let store = TensorStore {
        src: frame.address(src, Space::Shared)?,
        map: map_source(frame, map)?,
        coords: coords
            .iter()
            .map(|c| frame.src(c, Kind::Int(W::B32)))
            .collect::<Result<_, _>>()?,
    };
    frame.tensor_stores.push(store);
    Ok(Op::TensorStore(frame.tensor_stores.len() as u32 - 1))
}
