//! Unit enums as single selects, and collections of them as multi-selects.

use super::InvalidValue;
use super::*;
use crate::content::counted;

/// One variant of a unit enum: its wire value and optional display title.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variant {
    /// The string sent on the wire.
    pub value: &'static str,
    /// The label shown to the user; any titled variant makes the whole select titled.
    pub title: Option<&'static str>,
}

/// A unit-only enum usable as a single select, or in a `Vec`/set as a multi-select.
///
/// Implemented by `#[derive(Elicit)]` on a unit-only enum.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a unit enum deriving `Elicit`",
    label = "a list field must hold a unit enum deriving `Elicit`",
    note = "the protocol's only arrays are multi-selects: `Vec`, `BTreeSet` or `HashSet` of a unit enum"
)]
pub trait ElicitEnum: Sized + 'static {
    /// The variants, in declaration order.
    const VARIANTS: &'static [Variant];

    /// The variant whose wire value is `value`.
    fn from_wire(value: &str) -> Option<Self>;

    /// This variant's wire value.
    fn to_wire(&self) -> &'static str;
}

/// `true` when `value` is the wire value of one of `variants` (usable in `const` checks).
pub const fn has_variant(variants: &[Variant], value: &str) -> bool {
    let mut i = 0;
    while i < variants.len() {
        if const_str_eq(variants[i].value, value) {
            return true;
        }
        i += 1;
    }
    false
}

/// `true` when every one of `values` names a variant (usable in `const` checks).
pub const fn has_variants(variants: &[Variant], values: &[&str]) -> bool {
    let mut i = 0;
    while i < values.len() {
        if !has_variant(variants, values[i]) {
            return false;
        }
        i += 1;
    }
    true
}

const fn const_str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

fn options<E: ElicitEnum>() -> (Vec<EnumOption>, bool) {
    let titled = E::VARIANTS.iter().any(|v| v.title.is_some());
    // In a titled select every option carries a title on the wire; an untitled variant shows its
    // value. Filling it in here keeps the model equal to what a client parses off the wire.
    let options = E::VARIANTS
        .iter()
        .map(|v| EnumOption {
            value: Text::Borrowed(v.value),
            title: if titled { Some(Text::Borrowed(v.title.unwrap_or(v.value))) } else { None },
        })
        .collect();
    (options, titled)
}

/// The schema of a single-select field of enum `E` (called by derived code).
pub fn single_select_schema<E: ElicitEnum>(rules: &FieldRules) -> PrimitiveSchema {
    let (options, titled) = options::<E>();
    PrimitiveSchema::SingleSelect(SingleSelectSchema {
        title: rules.title(),
        description: rules.description(),
        options,
        titled,
        default: rules.default_str(),
    })
}

fn choice_error<E: ElicitEnum>() -> String {
    let mut message = String::from("must be one of ");
    for (i, variant) in E::VARIANTS.iter().enumerate() {
        if i > 0 {
            message.push_str(", ");
        }
        message.push('`');
        message.push_str(variant.value);
        message.push('`');
    }
    message
}

/// Parses a single-select answer (called by derived code).
pub fn parse_single_select<E: ElicitEnum>(value: &Value) -> Result<E, InvalidValue> {
    let text = value.as_str().ok_or_else(|| expected("a string", value))?;
    E::from_wire(text).ok_or_else(|| InvalidValue::new(choice_error::<E>()))
}

fn multi_select_schema<E: ElicitEnum>(rules: &FieldRules) -> PrimitiveSchema {
    let (options, titled) = options::<E>();
    PrimitiveSchema::MultiSelect(MultiSelectSchema {
        title: rules.title(),
        description: rules.description(),
        min_items: rules.min_items,
        max_items: rules.max_items,
        options,
        titled,
        default: match rules.default {
            Some(DefaultValue::List(values)) => Some(values.iter().map(|v| Text::Borrowed(*v)).collect()),
            _ => None,
        },
    })
}

fn parse_multi_select<E: ElicitEnum, C: FromIterator<E>>(value: &Value, rules: &FieldRules) -> Result<C, String> {
    let items = value.as_array().ok_or_else(|| expected("an array", value))?;
    if let Some(min) = rules.min_items
        && (items.len() as u64) < min
    {
        return Err(format!("must have at least {} selected", counted(min, "item")));
    }
    if let Some(max) = rules.max_items
        && items.len() as u64 > max
    {
        return Err(format!("must have at most {} selected", counted(max, "item")));
    }
    items.iter().map(|item| parse_single_select::<E>(item).map_err(|reason| format!("item {reason}"))).collect()
}

/// A set holds each choice once, so an answer repeating a choice (`["meal", "meal"]`) makes a set
/// smaller than the array: `min_items` is checked again on what the set holds, or a set declared
/// with `min_items = 2` would parse from two copies of one choice into one element (and its
/// content would then fail its own schema). The restricted schema cannot state `uniqueItems`, so
/// for repeated choices, and only for them, the parser of a set is stricter than its schema.
fn parse_set<E: ElicitEnum, C: FromIterator<E>>(
    value: &Value,
    rules: &FieldRules,
    len: impl Fn(&C) -> usize,
) -> Result<C, String> {
    let set: C = parse_multi_select(value, rules)?;
    match rules.min_items {
        Some(min) if (len(&set) as u64) < min => {
            Err(format!("must have at least {} selected", counted(min, "different item")))
        }
        _ => Ok(set),
    }
}

fn multi_select_value<'a, E: ElicitEnum>(items: impl Iterator<Item = &'a E>) -> Option<Value> {
    Some(Value::Array(items.map(|e| Value::String(e.to_wire().to_owned())).collect()))
}

impl<E: ElicitEnum> FieldValue for Vec<E> {
    const SHAPE: FieldShape = FieldShape::MultiSelect(E::VARIANTS);

    fn schema(rules: &FieldRules) -> PrimitiveSchema {
        multi_select_schema::<E>(rules)
    }

    fn parse(value: &Value, rules: &FieldRules) -> Result<Self, InvalidValue> {
        parse_multi_select(value, rules).map_err(InvalidValue::from)
    }

    fn absent() -> Option<Self> {
        // Left out, a multi-select without `min_items` is no choice (attributes.md).
        Some(Self::default())
    }

    fn to_value(&self) -> Option<Value> {
        multi_select_value(self.iter())
    }
}

impl<E: ElicitEnum + Ord> FieldValue for BTreeSet<E> {
    const SHAPE: FieldShape = FieldShape::MultiSelect(E::VARIANTS);

    fn schema(rules: &FieldRules) -> PrimitiveSchema {
        multi_select_schema::<E>(rules)
    }

    fn parse(value: &Value, rules: &FieldRules) -> Result<Self, InvalidValue> {
        parse_set(value, rules, BTreeSet::len).map_err(InvalidValue::from)
    }

    fn absent() -> Option<Self> {
        // Left out, a multi-select without `min_items` is no choice (attributes.md).
        Some(Self::default())
    }

    fn to_value(&self) -> Option<Value> {
        multi_select_value(self.iter())
    }
}

impl<E: ElicitEnum + Eq + Hash, S: std::hash::BuildHasher + Default> FieldValue for HashSet<E, S> {
    const SHAPE: FieldShape = FieldShape::MultiSelect(E::VARIANTS);

    fn schema(rules: &FieldRules) -> PrimitiveSchema {
        multi_select_schema::<E>(rules)
    }

    fn parse(value: &Value, rules: &FieldRules) -> Result<Self, InvalidValue> {
        parse_set(value, rules, HashSet::len).map_err(InvalidValue::from)
    }

    fn absent() -> Option<Self> {
        Some(Self::default())
    }

    fn to_value(&self) -> Option<Value> {
        // Declaration order, so the answer does not depend on the hasher.
        let mut items: Vec<&E> = self.iter().collect();
        items.sort_by_key(|e| E::VARIANTS.iter().position(|v| v.value == e.to_wire()));
        multi_select_value(items.into_iter())
    }
}
