//! The byte-level tokenizer: token `b` is byte `b`, and four specials follow the 256 bytes.
//! Text in any encoding round-trips exactly, and no vocabulary file is needed.

/// Beginning of a sequence.
pub const BOS: u32 = 256;
/// End of a sequence.
pub const EOS: u32 = 257;
/// Padding.
pub const PAD: u32 = 258;
/// Unused, reserved so the vocabulary is a multiple of four.
pub const UNUSED: u32 = 259;
/// Tokens in the vocabulary: 256 bytes and the four specials.
pub const VOCAB: usize = 260;

/// The tokens of `text`, one per byte, with no specials added.
pub fn encode(text: &[u8]) -> Vec<u32> {
    text.iter().map(|&b| u32::from(b)).collect()
}

/// The bytes of `tokens`; specials are dropped.
pub fn decode(tokens: &[u32]) -> Vec<u8> {
    tokens
        .iter()
        .filter_map(|&t| u8::try_from(t).ok())
        .collect()
}

/// How a special token is shown in printed output, or `None` for a byte.
pub fn special_name(token: u32) -> Option<&'static str> {
    match token {
        BOS => Some("<s>"),
        EOS => Some("</s>"),
        PAD => Some("<pad>"),
        UNUSED => Some("<unused>"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_round_trip_and_specials_are_dropped() {
        let text = "héllo\n\u{1F980}".as_bytes();
        let mut tokens = vec![BOS];
        tokens.extend(encode(text));
        tokens.push(EOS);
        assert_eq!(decode(&tokens), text);
        assert_eq!(special_name(EOS), Some("</s>"));
        assert_eq!(special_name(65), None);
    }
}
