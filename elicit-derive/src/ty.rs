//! Syntactic classification of field types.
//!
//! Like clap and serde, the macro sees tokens, not resolved types: `Option<T>`, `Vec<T>`, the
//! primitives and the well-known format types are recognised by name. Anything else is taken to be
//! a unit enum deriving `Elicit`; the generated code then requires the matching trait, whose
//! diagnostic explains what a field may be, so a mistaken guess still ends in a clear error.

use syn::{GenericArgument, PathArguments, Type};

/// What a field holds, as far as the schema is concerned.
// `Debug` for the unit tests only: syn's `Debug` impls are its `extra-traits` feature, which
// only the tests turn on.
#[derive(Clone)]
#[cfg_attr(test, derive(Debug))]
pub(crate) enum Kind {
    /// A string; `format` is the format the type itself implies (`Email`, dates, `Url`).
    String {
        format: Option<Format>,
        plain: bool,
    },
    /// An integer type, with its range.
    Integer {
        name: String,
        min: i128,
        max: i128,
    },
    /// `f32` or `f64`.
    Float {
        name: String,
    },
    Bool,
    /// A type the derive cannot classify by name: a unit enum deriving `Elicit`, a newtype, a
    /// foreign type. Its `FieldValue` impl (a trait bound) says what it is, and the field's
    /// attributes are checked against that at constant evaluation.
    Other,
    /// A list or set of unit enums; `element` is the enum type.
    MultiSelect {
        element: Type,
    },
}

/// A classified field type.
#[derive(Clone)]
#[cfg_attr(test, derive(Debug))]
pub(crate) struct FieldType {
    pub(crate) kind: Kind,
    /// The type without `Option`.
    pub(crate) inner: Type,
}

fn last_segment(ty: &Type) -> Option<&syn::PathSegment> {
    match ty {
        Type::Path(path) if path.qself.is_none() => path.path.segments.last(),
        Type::Group(group) => last_segment(&group.elem),
        Type::Paren(paren) => last_segment(&paren.elem),
        _ => None,
    }
}

/// `T` when `ty` is written `Option<T>`.
pub(crate) fn option_argument(ty: &Type) -> Option<&Type> {
    let segment = last_segment(ty).filter(|s| s.ident == "Option")?;
    single_argument(segment)
}

/// The single type argument of `Name<T>`, if `ty` is written that way.
fn single_argument(segment: &syn::PathSegment) -> Option<&Type> {
    let PathArguments::AngleBracketed(args) = &segment.arguments else { return None };
    let mut types = args.args.iter().filter_map(|a| match a {
        GenericArgument::Type(t) => Some(t),
        _ => None,
    });
    let first = types.next()?;
    // `HashSet<E, S>` has a hasher argument; it does not change the element.
    Some(first)
}

fn integer_range(name: &str) -> Option<(i128, i128)> {
    Some(match name {
        "i8" => (i8::MIN.into(), i8::MAX.into()),
        "i16" => (i16::MIN.into(), i16::MAX.into()),
        "i32" => (i32::MIN.into(), i32::MAX.into()),
        "i64" => (i64::MIN.into(), i64::MAX.into()),
        "i128" => (i128::MIN, i128::MAX),
        // The widths of isize/usize differ by target; the 64-bit range is what the schema states,
        // and the runtime rejects what the target cannot hold.
        "isize" => (i64::MIN.into(), i64::MAX.into()),
        "u8" => (0, u8::MAX.into()),
        "u16" => (0, u16::MAX.into()),
        "u32" => (0, u32::MAX.into()),
        "u64" => (0, u64::MAX.into()),
        "u128" => (0, i128::MAX),
        "usize" => (0, u64::MAX.into()),
        _ => return None,
    })
}

/// `NonZero` integers: the inner type's range without 0 (the schema states `minimum` 1 for the
/// unsigned ones).
fn non_zero_range(name: &str) -> Option<(String, i128, i128)> {
    let inner = name.strip_prefix("NonZero")?.to_ascii_lowercase();
    let (min, max) = integer_range(&inner)?;
    Some((name.to_owned(), if min == 0 { 1 } else { min }, max))
}

/// String types other than `String`, held through a pointer: `Box<str>`, `Arc<str>`, `Rc<str>`,
/// `Cow<'static, str>`.
fn is_pointer_to_str(name: &str, segment: &syn::PathSegment) -> bool {
    matches!(name, "Box" | "Arc" | "Rc" | "Cow")
        && single_argument(segment).and_then(last_segment).is_some_and(|s| s.ident == "str")
}

const MAPS: &[&str] = &["HashMap", "BTreeMap", "IndexMap", "Map", "Value"];
const LISTS: &[&str] = &["Vec", "BTreeSet", "HashSet"];
const OTHER_COLLECTIONS: &[&str] = &["VecDeque", "LinkedList", "BinaryHeap", "IndexSet"];

/// Names that are certainly not unit enums, for a clear message on `Vec<String>` and the like.
fn is_scalar(ty: &Type) -> bool {
    match last_segment(ty) {
        Some(seg) => {
            let name = seg.ident.to_string();
            matches!(
                name.as_str(),
                "String" | "str" | "bool" | "f32" | "f64" | "char" | "Email" | "NaiveDate" | "DateTime" | "Url"
            ) || integer_range(&name).is_some()
                || LISTS.contains(&name.as_str())
                || MAPS.contains(&name.as_str())
                || name == "Option"
        }
        None => true,
    }
}

/// Classifies `ty`, or says why it cannot be a field.
pub(crate) fn classify(ty: &Type) -> Result<FieldType, String> {
    let Some(segment) = last_segment(ty) else {
        return Err(match ty {
            Type::Reference(_) => "references cannot be form fields: use an owned type such as `String`".into(),
            Type::Tuple(_) => "tuples cannot be form fields: the protocol's requestedSchema is flat; use one field per value".into(),
            Type::Array(_) | Type::Slice(_) => {
                "arrays cannot be form fields: a list field must be a `Vec`, `BTreeSet` or `HashSet` of a unit enum".into()
            }
            _ => "this type cannot be a form field: use a string, bool, integer, f32/f64, `Email`, a unit enum, or a `Vec` of a unit enum".into(),
        });
    };
    let name = segment.ident.to_string();
    if name == "Option" {
        let inner = single_argument(segment).ok_or("`Option` needs a type argument")?;
        if last_segment(inner).is_some_and(|s| s.ident == "Option") {
            return Err("`Option<Option<T>>` cannot be a form field: a property is either answered or not".into());
        }
        // The schema of `Option<T>` is T's; only `required` differs, which the runtime knows.
        return classify(inner);
    }
    let kind = match name.as_str() {
        "String" => Kind::String { format: None, plain: true },
        "Email" => Kind::String { format: Some(Format::Email), plain: false },
        "NaiveDate" => Kind::String { format: Some(Format::Date), plain: false },
        "DateTime" => Kind::String { format: Some(Format::DateTime), plain: false },
        "Url" => Kind::String { format: Some(Format::Uri), plain: false },
        "bool" => Kind::Bool,
        "f32" | "f64" => Kind::Float { name },
        _ if is_pointer_to_str(&name, segment) => Kind::String { format: None, plain: true },
        "str" => return Err("`str` cannot be a form field: use `String`".into()),
        "char" => return Err("`char` cannot be a form field: use `String` with `max_length = 1`".into()),
        _ if integer_range(&name).is_some() => {
            let (min, max) = integer_range(&name).unwrap_or((0, 0));
            Kind::Integer { name, min, max }
        }
        _ if non_zero_range(&name).is_some() => {
            let (name, min, max) = non_zero_range(&name).unwrap_or_default();
            Kind::Integer { name, min, max }
        }
        _ if MAPS.contains(&name.as_str()) => {
            return Err(format!(
                "`{name}` cannot be a form field: the protocol's requestedSchema is a flat object of strings, numbers, booleans and enums, with no nested objects or maps"
            ));
        }
        _ if OTHER_COLLECTIONS.contains(&name.as_str()) => {
            return Err(format!(
                "`{name}` cannot be a form field: a multi-select is a `Vec`, `BTreeSet` or `HashSet` of a unit enum"
            ));
        }
        _ if LISTS.contains(&name.as_str()) => {
            let element = single_argument(segment).ok_or_else(|| format!("`{name}` needs a type argument"))?;
            if is_scalar(element) {
                return Err(format!(
                    "a list field must hold a unit enum deriving `Elicit`: the protocol's only arrays are multi-selects of fixed choices, so `{name}` of strings, numbers, booleans, lists or options cannot be expressed"
                ));
            }
            Kind::MultiSelect { element: element.clone() }
        }
        _ => Kind::Other,
    };
    Ok(FieldType { kind, inner: ty.clone() })
}

/// A string format of the protocol: the runtime's `StringFormat`, as the derive knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Email,
    Uri,
    Date,
    DateTime,
}

impl Format {
    pub(crate) const ALL: [Format; 4] = [Format::Email, Format::Uri, Format::Date, Format::DateTime];

    /// As spelled in `format = ".."` and on the wire.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Format::Email => "email",
            Format::Uri => "uri",
            Format::Date => "date",
            Format::DateTime => "date-time",
        }
    }

    pub(crate) fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The runtime's `StringFormat` variant.
    pub(crate) fn variant(self) -> &'static str {
        match self {
            Format::Email => "Email",
            Format::Uri => "Uri",
            Format::Date => "Date",
            Format::DateTime => "DateTime",
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Kind {
    /// How the kind is named in "applies to" messages.
    pub(crate) fn describe(&self) -> String {
        match self {
            Kind::String { .. } => "a string field".into(),
            Kind::Integer { name, .. } => format!("an integer field (`{name}`)"),
            Kind::Float { name } => format!("a number field (`{name}`)"),
            Kind::Bool => "a boolean field".into(),
            Kind::Other => "a field of a type the derive checks through its `FieldValue` impl".into(),
            Kind::MultiSelect { .. } => "a multi-select field".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use syn::parse_quote;

    use super::{Format, Kind, classify};

    fn kind(ty: syn::Type) -> Kind {
        match classify(&ty) {
            Ok(ft) => ft.kind,
            Err(message) => unreachable!("{message}"),
        }
    }

    fn refusal(ty: syn::Type) -> String {
        match classify(&ty) {
            Ok(ft) => unreachable!("accepted as {:?}", ft.kind),
            Err(message) => message,
        }
    }

    #[test]
    fn scalars() {
        assert!(matches!(kind(parse_quote!(String)), Kind::String { format: None, plain: true }));
        assert!(matches!(kind(parse_quote!(::std::string::String)), Kind::String { plain: true, .. }));
        assert!(matches!(kind(parse_quote!(elicit_runtime::Email)), Kind::String { format: Some(Format::Email), .. }));
        assert!(matches!(
            kind(parse_quote!(chrono::DateTime<Utc>)),
            Kind::String { format: Some(Format::DateTime), .. }
        ));
        assert!(matches!(kind(parse_quote!(bool)), Kind::Bool));
        assert!(matches!(kind(parse_quote!(f32)), Kind::Float { .. }));
        assert!(matches!(kind(parse_quote!(u8)), Kind::Integer { min: 0, max: 255, .. }));
        assert!(matches!(kind(parse_quote!(i64)), Kind::Integer { min: -9223372036854775808, .. }));
    }

    #[test]
    fn option_is_transparent() {
        let ft = classify(&parse_quote!(Option<u8>)).expect("option of an integer");
        assert!(matches!(ft.kind, Kind::Integer { .. }));
        assert_eq!(ft.inner, parse_quote!(u8));
        assert!(matches!(kind(parse_quote!(::core::option::Option<Cabin>)), Kind::Other));
    }

    #[test]
    fn lists_of_enums_are_multi_selects() {
        for ty in [parse_quote!(Vec<Meal>), parse_quote!(BTreeSet<Meal>), parse_quote!(HashSet<Meal, S>)] {
            let Kind::MultiSelect { element } = kind(ty) else { unreachable!() };
            assert_eq!(element, parse_quote!(Meal));
        }
    }

    #[test]
    fn unknown_names_are_taken_for_enums() {
        assert!(matches!(kind(parse_quote!(Cabin)), Kind::Other));
        assert!(matches!(kind(parse_quote!(crate::forms::Cabin)), Kind::Other));
    }

    #[test]
    fn refusals_name_the_problem() {
        assert!(refusal(parse_quote!(HashMap<String, String>)).starts_with("`HashMap` cannot be a form field"));
        assert!(refusal(parse_quote!(serde_json::Value)).starts_with("`Value` cannot be a form field"));
        assert!(refusal(parse_quote!(Vec<String>)).starts_with("a list field must hold a unit enum"));
        assert!(refusal(parse_quote!(Vec<Option<Meal>>)).starts_with("a list field must hold a unit enum"));
        assert!(refusal(parse_quote!(VecDeque<Meal>)).contains("a multi-select is a `Vec`"));
        assert!(refusal(parse_quote!(Option<Option<u8>>)).starts_with("`Option<Option<T>>`"));
        assert!(refusal(parse_quote!(&'static str)).starts_with("references"));
        assert!(refusal(parse_quote!((u8, u8))).starts_with("tuples"));
        assert!(refusal(parse_quote!([Meal; 2])).starts_with("arrays"));
        assert!(refusal(parse_quote!(char)).contains("max_length = 1"));
        assert!(refusal(parse_quote!(Option)).contains("needs a type argument"));
    }
}
