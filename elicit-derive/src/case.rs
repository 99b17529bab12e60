//! `rename_all`: serde's case conventions, applied to Rust field and variant names.

/// A case convention named in `rename_all`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RenameRule {
    Lower,
    Upper,
    Pascal,
    Camel,
    Snake,
    ScreamingSnake,
    Kebab,
    ScreamingKebab,
}

/// The spellings `rename_all` accepts, as serde spells them.
pub(crate) const RULE_NAMES: &[(&str, RenameRule)] = &[
    ("lowercase", RenameRule::Lower),
    ("UPPERCASE", RenameRule::Upper),
    ("PascalCase", RenameRule::Pascal),
    ("camelCase", RenameRule::Camel),
    ("snake_case", RenameRule::Snake),
    ("SCREAMING_SNAKE_CASE", RenameRule::ScreamingSnake),
    ("kebab-case", RenameRule::Kebab),
    ("SCREAMING-KEBAB-CASE", RenameRule::ScreamingKebab),
];

impl RenameRule {
    pub(crate) fn from_name(name: &str) -> Option<Self> {
        RULE_NAMES.iter().find(|(n, _)| *n == name).map(|(_, rule)| *rule)
    }

    /// Applies the rule to a field name, which Rust writes in snake_case.
    pub(crate) fn apply_to_field(self, field: &str) -> String {
        match self {
            RenameRule::Lower | RenameRule::Snake => field.to_owned(),
            RenameRule::Upper | RenameRule::ScreamingSnake => field.to_ascii_uppercase(),
            RenameRule::Pascal => {
                let mut out = String::new();
                let mut capitalize = true;
                for ch in field.chars() {
                    if ch == '_' {
                        capitalize = true;
                    } else if capitalize {
                        out.push(ch.to_ascii_uppercase());
                        capitalize = false;
                    } else {
                        out.push(ch);
                    }
                }
                out
            }
            RenameRule::Camel => {
                let pascal = RenameRule::Pascal.apply_to_field(field);
                let mut chars = pascal.chars();
                match chars.next() {
                    Some(first) => first.to_ascii_lowercase().to_string() + chars.as_str(),
                    None => pascal,
                }
            }
            RenameRule::Kebab => field.replace('_', "-"),
            RenameRule::ScreamingKebab => field.replace('_', "-").to_ascii_uppercase(),
        }
    }

    /// Applies the rule to a variant name, which Rust writes in PascalCase.
    pub(crate) fn apply_to_variant(self, variant: &str) -> String {
        match self {
            RenameRule::Pascal => variant.to_owned(),
            RenameRule::Lower => variant.to_ascii_lowercase(),
            RenameRule::Upper => variant.to_ascii_uppercase(),
            RenameRule::Camel => {
                let mut chars = variant.chars();
                match chars.next() {
                    Some(first) => first.to_ascii_lowercase().to_string() + chars.as_str(),
                    None => String::new(),
                }
            }
            RenameRule::Snake => {
                let mut out = String::new();
                for (i, ch) in variant.char_indices() {
                    if i > 0 && ch.is_uppercase() {
                        out.push('_');
                    }
                    out.push(ch.to_ascii_lowercase());
                }
                out
            }
            RenameRule::ScreamingSnake => RenameRule::Snake.apply_to_variant(variant).to_ascii_uppercase(),
            RenameRule::Kebab => RenameRule::Snake.apply_to_variant(variant).replace('_', "-"),
            RenameRule::ScreamingKebab => RenameRule::ScreamingSnake.apply_to_variant(variant).replace('_', "-"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::RenameRule::*;

    #[test]
    fn fields() {
        let cases = [
            (Lower, "departure_date"),
            (Upper, "DEPARTURE_DATE"),
            (Pascal, "DepartureDate"),
            (Camel, "departureDate"),
            (Snake, "departure_date"),
            (ScreamingSnake, "DEPARTURE_DATE"),
            (Kebab, "departure-date"),
            (ScreamingKebab, "DEPARTURE-DATE"),
        ];
        for (rule, expected) in cases {
            assert_eq!(rule.apply_to_field("departure_date"), expected, "{rule:?}");
        }
    }

    #[test]
    fn variants() {
        let cases = [
            (Lower, "firstclass"),
            (Upper, "FIRSTCLASS"),
            (Pascal, "FirstClass"),
            (Camel, "firstClass"),
            (Snake, "first_class"),
            (ScreamingSnake, "FIRST_CLASS"),
            (Kebab, "first-class"),
            (ScreamingKebab, "FIRST-CLASS"),
        ];
        for (rule, expected) in cases {
            assert_eq!(rule.apply_to_variant("FirstClass"), expected, "{rule:?}");
        }
    }
}
