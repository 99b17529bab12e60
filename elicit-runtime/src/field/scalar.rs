//! Strings, booleans, numbers and optional fields.

use super::InvalidValue;
use super::*;
use crate::content::IntegerError;
use crate::schema::MAX_SAFE_INTEGER;

impl FieldValue for String {
    const SHAPE: FieldShape = FieldShape::String;

    fn schema(rules: &FieldRules) -> PrimitiveSchema {
        string_schema(rules, rules.format)
    }

    fn parse(value: &Value, rules: &FieldRules) -> Result<Self, InvalidValue> {
        parse_str(value, rules, rules.format).map(str::to_owned)
    }

    fn to_value(&self) -> Option<Value> {
        Some(Value::String(self.clone()))
    }
}

/// The schema of a string field whose type may imply a format: for [`FieldValue`] implementations
/// of string-like types.
pub fn string_schema(rules: &FieldRules, format: Option<StringFormat>) -> PrimitiveSchema {
    PrimitiveSchema::String(StringSchema {
        title: rules.title(),
        description: rules.description(),
        min_length: rules.min_length,
        max_length: rules.max_length,
        format,
        default: rules.default_str(),
    })
}

/// Checks a string answer (type, length bounds, `format`) and returns its text: for [`FieldValue`]
/// implementations of string-like types.
pub fn parse_str<'v>(
    value: &'v Value,
    rules: &FieldRules,
    format: Option<StringFormat>,
) -> Result<&'v str, InvalidValue> {
    let text = value.as_str().ok_or_else(|| expected("a string", value))?;
    check_length(text, rules.min_length, rules.max_length)?;
    if let Some(format) = format {
        check_format(text, format)?;
    }
    Ok(text)
}

impl FieldValue for bool {
    const SHAPE: FieldShape = FieldShape::Boolean;

    fn schema(rules: &FieldRules) -> PrimitiveSchema {
        PrimitiveSchema::Boolean(BooleanSchema {
            title: rules.title(),
            description: rules.description(),
            default: match rules.default {
                Some(DefaultValue::Bool(b)) => Some(b),
                _ => None,
            },
        })
    }

    fn parse(value: &Value, _rules: &FieldRules) -> Result<Self, InvalidValue> {
        value.as_bool().ok_or_else(|| InvalidValue::new(expected("a boolean", value)))
    }

    fn to_value(&self) -> Option<Value> {
        Some(Value::Bool(*self))
    }
}

fn number_schema(rules: &FieldRules, integer: bool, min: Option<Bound>, max: Option<Bound>) -> PrimitiveSchema {
    let minimum = rules.minimum.or(min);
    let maximum = rules.maximum.or(max);
    let default = match rules.default {
        Some(DefaultValue::Number(n)) => Some(n),
        _ => None,
    };
    let (minimum, maximum, default) = if integer {
        (
            minimum.map(|b| interoperable_integer(b, false)),
            maximum.map(|b| interoperable_integer(b, true)),
            default.and_then(safe_integer),
        )
    } else {
        (
            minimum.map(|b| b.to_schema_number(false)),
            maximum.map(|b| b.to_schema_number(true)),
            default.map(Bound::to_number),
        )
    };
    PrimitiveSchema::Number(NumberSchema {
        integer,
        title: rules.title(),
        description: rules.description(),
        minimum,
        maximum,
        default,
    })
}

/// An integer schema's bound, clamped to `±(2^53 - 1)`: a wider bound (a `u64`'s, an `i128`'s)
/// would be rounded by a JavaScript peer and refused outright by an `i64` one. The schema then
/// asks for a narrower range than the field's; the parser still checks the field's own bound.
fn interoperable_integer(bound: Bound, is_maximum: bool) -> Number {
    let safe = i128::from(MAX_SAFE_INTEGER);
    let whole = match bound {
        Bound::Int(i) => i,
        // Only an integer inside the bound: round toward the allowed side.
        Bound::Float(f) if f.is_nan() => {
            return Number::from(if is_maximum { MAX_SAFE_INTEGER } else { -MAX_SAFE_INTEGER });
        }
        Bound::Float(f) => {
            let f = f.clamp(-(MAX_SAFE_INTEGER as f64), MAX_SAFE_INTEGER as f64);
            (if is_maximum { f.floor() } else { f.ceil() }) as i128
        }
    };
    // Inside ±(2^53 - 1) after the clamp, so the conversion cannot fail.
    Number::from(i64::try_from(whole.clamp(-safe, safe)).unwrap_or(0))
}

/// An integer default a JSON peer holds exactly, or none: a default past `±(2^53 - 1)` cannot be
/// offered without changing it.
fn safe_integer(default: Bound) -> Option<Number> {
    let whole = match default {
        Bound::Int(i) => i,
        Bound::Float(f) if f.fract() == 0.0 && f.abs() <= MAX_SAFE_INTEGER as f64 => f as i128,
        Bound::Float(_) => return None,
    };
    i64::try_from(whole).ok().filter(|i| i.unsigned_abs() <= MAX_SAFE_INTEGER.unsigned_abs()).map(Number::from)
}

fn check_bounds(value: f64, rules: &FieldRules) -> Result<(), String> {
    if let Some(min) = rules.minimum
        && min.cmp_value(value) == Ordering::Less
    {
        return Err(format!("must be at least {}", min.to_schema_number(false)));
    }
    if let Some(max) = rules.maximum
        && max.cmp_value(value) == Ordering::Greater
    {
        return Err(format!("must be at most {}", max.to_schema_number(true)));
    }
    Ok(())
}

/// 2^63: from this magnitude an integral float may be a rounded integer past the 64-bit ones.
const TWO_TO_63: f64 = 9_223_372_036_854_775_808.0;

/// Reads a JSON number as an integer, the way JSON Schema's `integer` type means it: any number
/// with no fractional part, so `3.0` is the integer 3.
pub(crate) fn integer_of(value: &Value) -> Result<i128, IntegerError> {
    let Value::Number(n) = value else {
        return Err(IntegerError::NotANumber { found: crate::content::json_type_name(value) });
    };
    if let Some(i) = n.as_i64() {
        return Ok(i128::from(i));
    }
    if let Some(u) = n.as_u64() {
        return Ok(i128::from(u));
    }
    match n.as_f64() {
        Some(f) if f.fract() != 0.0 => Err(IntegerError::Fraction),
        // Past the 64-bit integers a JSON number is read as an `f64`, already rounded: the integer
        // the client meant is not known, so it is refused rather than taken rounded. From 2^63 a
        // float may be the rounding of one past them (`-9223372036854775809` reads as -2^63);
        // every integer a 64-bit type holds arrives as an integer, not a float.
        Some(f) if f.abs() >= TWO_TO_63 => Err(IntegerError::Inexact),
        // Inside [-2^127, 2^127) the conversion is exact; beyond it no integer type can hold the
        // value (and `as` would saturate, silently changing it).
        Some(f) if cmp_f64_i128(f, i128::MIN).is_ge() && cmp_f64_i128(f, i128::MAX).is_le() => Ok(f as i128),
        _ => Err(IntegerError::OutOfRange),
    }
}

/// The range of an integer type as bounds; `u128` is capped at `i128::MAX`, as the derive states.
fn type_range<T: TryInto<i128> + Copy>(min: T, max: T) -> (Bound, Bound) {
    (Bound::Int(min.try_into().unwrap_or(i128::MIN)), Bound::Int(max.try_into().unwrap_or(i128::MAX)))
}

macro_rules! integer_field {
    ($($ty:ty),*) => {$(
        impl FieldValue for $ty {
            const SHAPE: FieldShape = FieldShape::Integer;
            // `u128` is capped at `i128::MAX`, as the derive states it.
            #[allow(clippy::cast_possible_wrap, reason = "the maximum of `u128` is capped below")]
            const RANGE: Option<(i128, i128)> = Some((
                <$ty>::MIN as i128,
                if <$ty>::MAX as u128 > i128::MAX as u128 { i128::MAX } else { <$ty>::MAX as i128 },
            ));

            fn schema(rules: &FieldRules) -> PrimitiveSchema {
                let (min, max) = type_range(<$ty>::MIN, <$ty>::MAX);
                number_schema(rules, true, Some(min), Some(max))
            }

            fn parse(value: &Value, rules: &FieldRules) -> Result<Self, InvalidValue> {
                let (type_min, type_max) = type_range(<$ty>::MIN, <$ty>::MAX);
                let min = rules.minimum.unwrap_or(type_min);
                let max = rules.maximum.unwrap_or(type_max);
                let i = match integer_of(value) {
                    Ok(i) => i,
                    // Integral but beyond any integer type (`1e308`): state the bound it breaks.
                    Err(reason) => {
                        return Err(InvalidValue::new(match value.as_f64() {
                            Some(f) if f.fract() == 0.0 && max.cmp_value(f) == Ordering::Greater => {
                                format!("must be at most {}", max.to_schema_number(true))
                            }
                            Some(f) if f.fract() == 0.0 && min.cmp_value(f) == Ordering::Less => {
                                format!("must be at least {}", min.to_schema_number(false))
                            }
                            _ => reason.to_string(),
                        }));
                    }
                };
                // Exact integer comparison where the bound is an integer; f64 would blur 64-bit bounds.
                let below = |bound: Bound| match bound {
                    Bound::Int(b) => i < b,
                    Bound::Float(b) => cmp_f64_i128(b, i) == Ordering::Greater,
                };
                let above = |bound: Bound| match bound {
                    Bound::Int(b) => i > b,
                    Bound::Float(b) => cmp_f64_i128(b, i) == Ordering::Less,
                };
                if below(min) {
                    return Err(InvalidValue::new(format!("must be at least {}", min.to_schema_number(false))));
                }
                if above(max) {
                    return Err(InvalidValue::new(format!("must be at most {}", max.to_schema_number(true))));
                }
                <$ty>::try_from(i).map_err(|_| InvalidValue::from("is out of range"))
            }

            fn to_value(&self) -> Option<Value> {
                // Only a `u128` above `i128::MAX` falls back to a (rounded) float.
                let number = match i128::try_from(*self) {
                    Ok(i) => Bound::Int(i).to_number(),
                    Err(_) => float_number(*self as f64),
                };
                Some(Value::Number(number))
            }
        }
    )*};
}

integer_field!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize);

impl FieldValue for f64 {
    const SHAPE: FieldShape = FieldShape::Number;

    fn schema(rules: &FieldRules) -> PrimitiveSchema {
        number_schema(rules, false, None, None)
    }

    fn parse(value: &Value, rules: &FieldRules) -> Result<Self, InvalidValue> {
        let f = value.as_f64().ok_or_else(|| expected("a number", value))?;
        check_bounds(f, rules)?;
        Ok(f)
    }

    fn to_value(&self) -> Option<Value> {
        Number::from_f64(*self).map(Value::Number)
    }
}

/// The shortest decimal that reads back as `value` (an `f32`), as an `f64`: what an `f32` field
/// states and writes (attributes.md, "Numbers").
fn f32_decimal(value: f32) -> f64 {
    // `Display` of a float is its shortest round-trip decimal; the parse cannot fail on it.
    value.to_string().parse().unwrap_or(f64::from(value))
}

/// A bound or default of an `f32` field at the field's own precision: the nearest `f32`, as its
/// shortest decimal. An integer an `f32` holds exactly stays an integer.
fn f32_bound(bound: Bound) -> Bound {
    let nearest = match bound {
        Bound::Int(i) => {
            let f = i as f32;
            if f.is_finite() && f as i128 == i {
                return bound;
            }
            f
        }
        Bound::Float(f) => f as f32,
    };
    Bound::Float(f32_decimal(nearest))
}

/// The rules of an `f32` field at its own precision, with the type's range as the default bounds.
fn f32_rules(rules: &FieldRules) -> FieldRules {
    FieldRules {
        minimum: Some(f32_bound(rules.minimum.unwrap_or(Bound::Float(f64::from(f32::MIN))))),
        maximum: Some(f32_bound(rules.maximum.unwrap_or(Bound::Float(f64::from(f32::MAX))))),
        default: match rules.default {
            Some(DefaultValue::Number(n)) => Some(DefaultValue::Number(f32_bound(n))),
            other => other,
        },
        ..*rules
    }
}

/// Bounds, default and answer at the field's own precision: the schema states each bound and the
/// default as the nearest `f32`'s shortest decimal, the parser checks the answer against exactly
/// those numbers (as any JSON Schema validator does) and keeps the nearest `f32`, and the writer
/// writes the shortest decimal that reads back as that `f32`, which lies within the stated bounds
/// whenever the answer did: so content written by `to_content` always parses back unchanged.
impl FieldValue for f32 {
    const SHAPE: FieldShape = FieldShape::Number;

    fn schema(rules: &FieldRules) -> PrimitiveSchema {
        // Bounds keep a client from sending what an f32 cannot hold.
        let rules = f32_rules(rules);
        number_schema(&rules, false, None, None)
    }

    fn parse(value: &Value, rules: &FieldRules) -> Result<Self, InvalidValue> {
        let f = value.as_f64().ok_or_else(|| expected("a number", value))?;
        check_bounds(f, &f32_rules(rules))?;
        Ok(f as f32)
    }

    fn from_default(default: DefaultValue, rules: &FieldRules) -> Result<Self, InvalidValue> {
        let default = match default {
            DefaultValue::Number(n) => DefaultValue::Number(f32_bound(n)),
            other => other,
        };
        Self::parse(&default.to_value(), rules)
    }

    fn to_value(&self) -> Option<Value> {
        Number::from_f64(f32_decimal(*self)).map(Value::Number)
    }
}

impl<T: FieldValue> FieldValue for Option<T> {
    const REQUIRED: bool = false;
    const SHAPE: FieldShape = T::SHAPE;
    const RANGE: Option<(i128, i128)> = T::RANGE;

    fn schema(rules: &FieldRules) -> PrimitiveSchema {
        T::schema(rules)
    }

    fn parse(value: &Value, rules: &FieldRules) -> Result<Self, InvalidValue> {
        // `null` is not "absent": the schema says the property holds a T, and a null is not one.
        T::parse(value, rules).map(Some)
    }

    fn absent() -> Option<Self> {
        Some(None)
    }

    fn from_default(default: DefaultValue, rules: &FieldRules) -> Result<Self, InvalidValue> {
        T::from_default(default, rules).map(Some)
    }

    fn to_value(&self) -> Option<Value> {
        self.as_ref().and_then(T::to_value)
    }
}
