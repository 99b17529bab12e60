//! The one wrapper around everything the derive generates.

use proc_macro2::TokenStream;
use quote::quote;

/// `const _: () = { .. };` around `items`: helper constants stay out of the user's namespace, and
/// the lints that generated code must not trip in a user's crate are allowed in one place.
pub(crate) fn wrap_in_const(items: TokenStream) -> TokenStream {
    quote! {
        #[doc(hidden)]
        #[allow(
            // Paths are absolute (`::core::option::Option::Some`) so that user items cannot shadow
            // them; a crate that denies needless qualification must not see them.
            unused_qualifications,
            clippy::absolute_paths,
            // A bound or length given as a constant is cast to the rules' type, which it may
            // already have.
            trivial_numeric_casts,
            reason = "absolute paths keep user items from shadowing them; constant bounds are cast to the rules' type"
        )]
        const _: () = {
            #items
        };
    }
}
