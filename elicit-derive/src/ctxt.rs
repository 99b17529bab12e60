//! Collects every error of one derive, so that one build reports them all.

use std::cell::RefCell;
use std::fmt::Display;

use proc_macro2::Span;

/// The error sink of one derive. It must be consumed with [`Ctxt::check`]; dropping it unchecked
/// is a bug in the macro (errors would be lost), so it panics in that case.
pub(crate) struct Ctxt {
    errors: RefCell<Option<Vec<syn::Error>>>,
}

impl Ctxt {
    pub(crate) fn new() -> Self {
        Ctxt { errors: RefCell::new(Some(Vec::new())) }
    }

    /// Records an error at `span`.
    pub(crate) fn error(&self, span: Span, message: impl Display) {
        self.push(syn::Error::new(span, message));
    }

    /// Records an error spanning the tokens of `tokens`.
    pub(crate) fn error_spanned_by(&self, tokens: impl quote::ToTokens, message: impl Display) {
        self.push(syn::Error::new_spanned(tokens, message));
    }

    /// Records an error from syn.
    pub(crate) fn push(&self, error: syn::Error) {
        if let Some(errors) = self.errors.borrow_mut().as_mut() {
            errors.push(error);
        }
    }

    /// Consumes the sink: `Err` with every error combined, if there were any.
    pub(crate) fn check(self) -> Result<(), syn::Error> {
        let errors = self.errors.borrow_mut().take().unwrap_or_default();
        let mut errors = errors.into_iter();
        let Some(mut combined) = errors.next() else { return Ok(()) };
        for error in errors {
            combined.combine(error);
        }
        Err(combined)
    }
}

impl Drop for Ctxt {
    // As in serde_derive: a panic in the macro is reported by rustc as an error on the derive,
    // which is the right outcome for a bug that would otherwise silently drop user errors.
    #[allow(clippy::panic, reason = "a macro bug must not lose the user's errors silently")]
    fn drop(&mut self) {
        // A macro bug, never a user error: every path must call `check`.
        if !std::thread::panicking() && self.errors.borrow().is_some() {
            panic!("elicit-derive: Ctxt dropped without check()");
        }
    }
}
