//! Serialisation: fixed key order, absent options skipped.

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};

use super::model::*;

impl Serialize for RequestedSchema {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let any_required = self.properties.iter().any(|p| p.required);
        let mut map = serializer.serialize_map(Some(2 + usize::from(any_required)))?;
        map.serialize_entry("type", "object")?;
        map.serialize_entry("properties", &PropertiesMap(&self.properties))?;
        if any_required {
            map.serialize_entry("required", &RequiredList(&self.properties))?;
        }
        map.end()
    }
}

struct PropertiesMap<'a>(&'a [Property]);

impl Serialize for PropertiesMap<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for property in self.0 {
            map.serialize_entry(&*property.name, &property.schema)?;
        }
        map.end()
    }
}

struct RequiredList<'a>(&'a [Property]);

impl Serialize for RequiredList<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        for property in self.0.iter().filter(|p| p.required) {
            seq.serialize_element(&*property.name)?;
        }
        seq.end()
    }
}

struct Options<'a> {
    options: &'a [EnumOption],
    titled: bool,
}

impl Serialize for Options<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.options.len()))?;
        for option in self.options {
            if self.titled {
                seq.serialize_element(&TitledOption(option))?;
            } else {
                seq.serialize_element(&*option.value)?;
            }
        }
        seq.end()
    }
}

struct TitledOption<'a>(&'a EnumOption);

impl Serialize for TitledOption<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("const", &*self.0.value)?;
        // The protocol requires a title on every titled option; fall back to the value.
        map.serialize_entry("title", self.0.title.as_deref().unwrap_or(&self.0.value))?;
        map.end()
    }
}

struct Items<'a>(&'a MultiSelectSchema);

impl Serialize for Items<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let options = Options { options: &self.0.options, titled: self.0.titled };
        if self.0.titled {
            let mut map = serializer.serialize_map(Some(1))?;
            map.serialize_entry("anyOf", &options)?;
            map.end()
        } else {
            let mut map = serializer.serialize_map(Some(2))?;
            map.serialize_entry("type", "string")?;
            map.serialize_entry("enum", &options)?;
            map.end()
        }
    }
}

fn entry<M: SerializeMap, T: Serialize + ?Sized>(map: &mut M, key: &str, value: Option<&T>) -> Result<(), M::Error> {
    match value {
        Some(value) => map.serialize_entry(key, value),
        None => Ok(()),
    }
}

impl Serialize for PrimitiveSchema {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        match self {
            PrimitiveSchema::String(s) => {
                map.serialize_entry("type", "string")?;
                entry(&mut map, "title", s.title.as_deref())?;
                entry(&mut map, "description", s.description.as_deref())?;
                entry(&mut map, "minLength", s.min_length.as_ref())?;
                entry(&mut map, "maxLength", s.max_length.as_ref())?;
                entry(&mut map, "format", s.format.map(StringFormat::as_str))?;
                entry(&mut map, "default", s.default.as_deref())?;
            }
            PrimitiveSchema::Number(s) => {
                map.serialize_entry("type", if s.integer { "integer" } else { "number" })?;
                entry(&mut map, "title", s.title.as_deref())?;
                entry(&mut map, "description", s.description.as_deref())?;
                entry(&mut map, "minimum", s.minimum.as_ref())?;
                entry(&mut map, "maximum", s.maximum.as_ref())?;
                entry(&mut map, "default", s.default.as_ref())?;
            }
            PrimitiveSchema::Boolean(s) => {
                map.serialize_entry("type", "boolean")?;
                entry(&mut map, "title", s.title.as_deref())?;
                entry(&mut map, "description", s.description.as_deref())?;
                entry(&mut map, "default", s.default.as_ref())?;
            }
            PrimitiveSchema::SingleSelect(s) => {
                map.serialize_entry("type", "string")?;
                entry(&mut map, "title", s.title.as_deref())?;
                entry(&mut map, "description", s.description.as_deref())?;
                let options = Options { options: &s.options, titled: s.titled };
                map.serialize_entry(if s.titled { "oneOf" } else { "enum" }, &options)?;
                entry(&mut map, "default", s.default.as_deref())?;
            }
            PrimitiveSchema::MultiSelect(s) => {
                map.serialize_entry("type", "array")?;
                entry(&mut map, "title", s.title.as_deref())?;
                entry(&mut map, "description", s.description.as_deref())?;
                entry(&mut map, "minItems", s.min_items.as_ref())?;
                entry(&mut map, "maxItems", s.max_items.as_ref())?;
                map.serialize_entry("items", &Items(s))?;
                if let Some(default) = &s.default {
                    let values: Vec<&str> = default.iter().map(|v| &**v).collect();
                    map.serialize_entry("default", &values)?;
                }
            }
        }
        map.end()
    }
}
