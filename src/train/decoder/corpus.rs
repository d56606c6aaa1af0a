//! The text a decoder trains on, as byte-level tokens, and the windows each step samples from
//! it. The windows of step `s` depend only on the seed and `s`, so a resumed run sees the
//! same batches as an uninterrupted one.

use crate::model::tokenizer;
use crate::train::TrainError;

/// The project's own documentation, which ships in the repository: the default corpus.
const BUILTIN: [&str; 3] = [
    include_str!("../../../README.md"),
    include_str!("../../../ARCHITECTURE.md"),
    include_str!("../../../docs/line-info.md"),
];

/// A text's tokens.
#[derive(Clone, Debug)]
pub struct Corpus {
    tokens: Vec<u32>,
}

/// A step's batch: `seqs × seq_len` token ids and, for each, the next token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenBatch {
    pub ids: Vec<u32>,
    pub targets: Vec<i32>,
}

/// splitmix64: a well-mixed hash of one word.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Corpus {
    /// README.md, ARCHITECTURE.md and docs/*.md, concatenated.
    ///
    /// ```
    /// assert!(ptxkit::train::decoder::Corpus::builtin().len() > 10_000);
    /// ```
    pub fn builtin() -> Corpus {
        Corpus::from_bytes(BUILTIN.join("\n").as_bytes())
    }

    /// The tokens of any text.
    pub fn from_bytes(text: &[u8]) -> Corpus {
        Corpus {
            tokens: tokenizer::encode(text),
        }
    }

    /// Tokens in the text.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Whether the text is empty.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// Checks the text holds at least one window of `seq_len` tokens and its next token.
    pub fn check(&self, seq_len: usize) -> Result<(), TrainError> {
        if self.tokens.len() <= seq_len {
            return Err(TrainError::Config(format!(
                "the training text has {} tokens (bytes), fewer than one window of {} plus its next token; give a longer text",
                self.tokens.len(),
                seq_len
            )));
        }
        Ok(())
    }

    /// Step `step`'s batch: `seqs` windows at positions drawn from `seed` and `step`.
    ///
    /// ```
    /// use ptxkit::train::decoder::Corpus;
    /// let c = Corpus::from_bytes(b"abcdefghijklmnopqrstuvwxyz");
    /// let b = c.batch(7, 3, 2, 4);
    /// assert_eq!(b.ids.len(), 8);
    /// assert_eq!(b.targets[0], b.ids[1] as i32); // the next byte
    /// assert_eq!(b, c.batch(7, 3, 2, 4));
    /// ```
    pub fn batch(&self, seed: u64, step: u32, seqs: usize, seq_len: usize) -> TokenBatch {
        let starts = self.tokens.len().saturating_sub(seq_len).max(1) as u64;
        let mut ids = Vec::with_capacity(seqs * seq_len);
        let mut targets = Vec::with_capacity(seqs * seq_len);
        for s in 0..seqs {
            let key = mix(seed ^ mix(u64::from(step) << 20 | s as u64));
            let start = (key % starts) as usize;
            for i in start..start + seq_len {
                ids.push(self.tokens.get(i).copied().unwrap_or(tokenizer::PAD));
                targets.push(self.tokens.get(i + 1).map_or(-100, |&t| t as i32));
            }
        }
        TokenBatch { ids, targets }
    }
}
