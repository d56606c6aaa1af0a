//! A macro for enums that stand for a fixed set of PTX words, so each word is written once.

/// Declares a `Copy` enum whose variants map one-to-one onto PTX words, with `as_str`,
/// `from_word` and `Display`.
macro_rules! keyword_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $($(#[$vmeta:meta])* $variant:ident => $word:literal,)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$vmeta])* #[doc = concat!("`", $word, "`")] $variant,)*
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];

            /// The PTX word, without the leading dot.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $word,)*
                }
            }

            /// The variant written as `word` (without the leading dot), if any.
            pub fn from_word(word: &str) -> Option<Self> {
                match word {
                    $($word => Some($name::$variant),)*
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

pub(crate) use keyword_enum;
