//! A diagnostic: a message and the range of tokens it is about. Every error the macro reports
//! becomes one `compile_error!` whose first and last tokens carry the range's ends, so rustc
//! underlines the whole offending expression.

use proc_macro2::{Span, TokenStream};
use quote::{quote_spanned, ToTokens};

/// The first and last token of a piece of source (stable Rust cannot join spans).
#[derive(Clone, Copy, Debug)]
pub struct SpanRange {
    pub start: Span,
    pub end: Span,
}

impl From<Span> for SpanRange {
    fn from(s: Span) -> SpanRange {
        SpanRange { start: s, end: s }
    }
}

/// The range of tokens `node` spans.
pub fn range(node: &impl ToTokens) -> SpanRange {
    let mut tokens = node.to_token_stream().into_iter();
    let Some(first) = tokens.next() else {
        return Span::call_site().into();
    };
    let start = first.span();
    let end = tokens.last().map(|t| t.span()).unwrap_or(start);
    SpanRange { start, end }
}

#[derive(Clone, Debug)]
pub struct Diag {
    pub span: SpanRange,
    pub message: String,
}

impl Diag {
    pub fn new(span: impl Into<SpanRange>, message: impl Into<String>) -> Diag {
        Diag {
            span: span.into(),
            message: message.into(),
        }
    }

    /// `compile_error!("…")` covering the offending tokens.
    pub fn to_compile_error(&self) -> TokenStream {
        let msg = &self.message;
        let head = quote_spanned!(self.span.start=> ::core::compile_error!);
        let body = quote_spanned!(self.span.end=> (#msg););
        let mut out = head;
        out.extend(body);
        out
    }
}

impl From<syn::Error> for Diag {
    fn from(e: syn::Error) -> Diag {
        Diag::new(e.span(), e.to_string())
    }
}

pub type DResult<T> = Result<T, Diag>;

/// Shorthand for an error at `span`.
pub fn err<T>(span: impl Into<SpanRange>, message: impl Into<String>) -> DResult<T> {
    Err(Diag::new(span, message))
}
