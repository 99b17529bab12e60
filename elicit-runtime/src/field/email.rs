//! The `Email` field type.

use super::InvalidValue;
use super::*;

/// An e-mail address: a string field with `format: "email"`, checked on parse.
///
/// ```
/// use elicit_runtime::Email;
///
/// let email: Email = "ada@example.com".parse().unwrap();
/// assert_eq!(email.as_str(), "ada@example.com");
/// assert!("not an address".parse::<Email>().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Email(String);

impl Email {
    /// The address as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The address as an owned string.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl std::str::FromStr for Email {
    type Err = crate::content::FormatError;
    fn from_str(s: &str) -> Result<Self, crate::content::FormatError> {
        check_format(s, StringFormat::Email)?;
        Ok(Email(s.to_owned()))
    }
}

impl std::fmt::Display for Email {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl FieldValue for Email {
    const SHAPE: FieldShape = FieldShape::String;

    fn schema(rules: &FieldRules) -> PrimitiveSchema {
        string_schema(rules, Some(StringFormat::Email))
    }

    fn parse(value: &Value, rules: &FieldRules) -> Result<Self, InvalidValue> {
        parse_str(value, rules, Some(StringFormat::Email)).map(|s| Email(s.to_owned()))
    }

    fn to_value(&self) -> Option<Value> {
        Some(Value::String(self.0.clone()))
    }
}
