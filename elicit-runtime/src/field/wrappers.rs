//! Field types that hold another: `NonZero` integers, and boxed, shared or borrowed-or-owned
//! strings.

use std::borrow::Cow;
use std::num::{
    NonZeroI8, NonZeroI16, NonZeroI32, NonZeroI64, NonZeroI128, NonZeroIsize, NonZeroU8, NonZeroU16, NonZeroU32,
    NonZeroU64, NonZeroU128, NonZeroUsize,
};
use std::rc::Rc;
use std::sync::Arc;

use super::InvalidValue;
use super::*;

macro_rules! string_field {
    ($($ty:ty),*) => {$(
        impl FieldValue for $ty {
            const SHAPE: FieldShape = FieldShape::String;

            fn schema(rules: &FieldRules) -> PrimitiveSchema {
                string_schema(rules, rules.format)
            }

            fn parse(value: &Value, rules: &FieldRules) -> Result<Self, InvalidValue> {
                parse_str(value, rules, rules.format).map(|text| <$ty>::from(text.to_owned()))
            }

            fn to_value(&self) -> Option<Value> {
                Some(Value::String(String::from(&**self)))
            }
        }
    )*};
}

string_field!(Box<str>, Arc<str>, Rc<str>, Cow<'static, str>);

/// Unsigned: the schema's `minimum` becomes at least 1, so schema and parser agree on 0.
macro_rules! non_zero_unsigned {
    ($($ty:ty => $int:ty),*) => {$(
        impl FieldValue for $ty {
            const SHAPE: FieldShape = FieldShape::Integer;
            const RANGE: Option<(i128, i128)> = match <$int>::RANGE {
                Some((_, max)) => Some((1, max)),
                None => None,
            };

            fn schema(rules: &FieldRules) -> PrimitiveSchema {
                <$int>::schema(&at_least_one(rules))
            }

            fn parse(value: &Value, rules: &FieldRules) -> Result<Self, InvalidValue> {
                let n = <$int>::parse(value, &at_least_one(rules))?;
                <$ty>::new(n).ok_or_else(|| InvalidValue::from("must be at least 1"))
            }

            fn to_value(&self) -> Option<Value> {
                self.get().to_value()
            }
        }
    )*};
}

non_zero_unsigned!(NonZeroU8 => u8, NonZeroU16 => u16, NonZeroU32 => u32, NonZeroU64 => u64, NonZeroU128 => u128, NonZeroUsize => usize);

/// The rules with a `minimum` of at least 1.
fn at_least_one(rules: &FieldRules) -> FieldRules {
    let minimum = match rules.minimum {
        Some(Bound::Int(i)) if i >= 1 => Bound::Int(i),
        Some(Bound::Float(f)) if f >= 1.0 => Bound::Float(f),
        _ => Bound::Int(1),
    };
    FieldRules { minimum: Some(minimum), ..*rules }
}

/// Signed: a schema cannot exclude one value inside a range, so 0 is refused by the parser alone
/// (declare `minimum = 1` or `maximum = -1` to state it in the schema too).
macro_rules! non_zero_signed {
    ($($ty:ty => $int:ty),*) => {$(
        impl FieldValue for $ty {
            const SHAPE: FieldShape = FieldShape::Integer;
            const RANGE: Option<(i128, i128)> = <$int>::RANGE;

            fn schema(rules: &FieldRules) -> PrimitiveSchema {
                <$int>::schema(rules)
            }

            fn parse(value: &Value, rules: &FieldRules) -> Result<Self, InvalidValue> {
                <$ty>::new(<$int>::parse(value, rules)?).ok_or_else(|| InvalidValue::from("must not be 0"))
            }

            fn to_value(&self) -> Option<Value> {
                self.get().to_value()
            }
        }
    )*};
}

non_zero_signed!(NonZeroI8 => i8, NonZeroI16 => i16, NonZeroI32 => i32, NonZeroI64 => i64, NonZeroI128 => i128, NonZeroIsize => isize);
