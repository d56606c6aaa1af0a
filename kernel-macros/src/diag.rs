//! A diagnostic: a message and the span of the tokens it is about. Every error the macro
//! reports becomes one `compile_error!` at that span.

use proc_macro2::{Span, TokenStream};
use quote::quote_spanned;

#[derive(Clone, Debug)]
pub struct Diag {
    pub span: Span,
    pub message: String,
}

impl Diag {
    pub fn new(span: Span, message: impl Into<String>) -> Diag {
        Diag {
            span,
            message: message.into(),
        }
    }

    /// `compile_error!("…")` pointing at the offending tokens.
    pub fn to_compile_error(&self) -> TokenStream {
        let msg = &self.message;
        quote_spanned!(self.span=> ::core::compile_error!(#msg);)
    }
}

impl From<syn::Error> for Diag {
    fn from(e: syn::Error) -> Diag {
        Diag::new(e.span(), e.to_string())
    }
}

pub type DResult<T> = Result<T, Diag>;

/// Shorthand for an error at `span`.
pub fn err<T>(span: Span, message: impl Into<String>) -> DResult<T> {
    Err(Diag::new(span, message))
}
