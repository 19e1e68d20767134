//! A serde deserializer over a parsed [`toml::Value`] whose errors know
//! where they happened: the key path, the value found there, and what went
//! wrong as data (unknown key, missing key, unknown name, wrong type), so the
//! descriptor's messages keep their wording instead of serde's.
//!
//! Strings, identifiers (a pattern's `kind`) and structs are strict: only a
//! TOML string, respectively table, is accepted, so a datetime is never read
//! as a string nor an array as a struct.

use std::fmt;

use serde::de::value::BorrowedStrDeserializer;
use serde::de::{self, DeserializeSeed, Expected, MapAccess, SeqAccess, Unexpected, Visitor};
use toml::Value;

use super::*;

/// A value of the document and its key path (`package.metadata.sparserl.kernel[0]`).
struct Node<'de> {
    value: &'de Value,
    path: String,
}

/// Reads a `T` from `value`, which is at key path `path`.
pub(super) fn deserialize_at<'de, T: serde::Deserialize<'de>>(
    value: &'de Value,
    path: String,
) -> Result<T, RawError> {
    read(std::marker::PhantomData::<T>, value, path)
}

/// Every value is read through here, so every error leaves with its
/// location: the innermost value it was raised in. (Locating inside the
/// [`Node`] methods would not do: serde reads an internally tagged enum's
/// variant after the deserializer has returned.)
fn read<'de, T: DeserializeSeed<'de>>(
    seed: T,
    value: &'de Value,
    path: String,
) -> Result<T::Value, RawError> {
    seed.deserialize(Node {
        value,
        path: path.clone(),
    })
    .map_err(|mut e| {
        if e.at.is_none() {
            e.at = Some(At {
                path,
                found: found_typed(value),
            });
        }
        e
    })
}

fn mismatch(expected: &dyn Expected) -> RawError {
    RawError::problem(Problem::Mismatch(expected.to_string()))
}

impl<'de> de::Deserializer<'de> for Node<'de> {
    type Error = RawError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, RawError> {
        match self.value {
            Value::String(s) => visitor.visit_borrowed_str(s),
            Value::Integer(i) => visitor.visit_i64(*i),
            Value::Float(f) => visitor.visit_f64(*f),
            Value::Boolean(b) => visitor.visit_bool(*b),
            // The datetime protocol `toml::Value` understands, so a loose
            // leaf stays a datetime.
            Value::Datetime(d) => {
                visitor.visit_map(toml_datetime::de::DatetimeDeserializer::new(*d))
            }
            Value::Array(items) => visitor.visit_seq(Items {
                items: items.iter().enumerate(),
                path: &self.path,
            }),
            Value::Table(table) => visitor.visit_map(Entries {
                entries: table.iter(),
                path: &self.path,
                value: None,
            }),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, RawError> {
        // A key that is present has a value; absent keys never get here.
        visitor.visit_some(self)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, RawError> {
        match self.value {
            Value::String(s) => visitor.visit_borrowed_str(s),
            _ => Err(mismatch(&visitor)),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, RawError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, RawError> {
        match self.value {
            Value::String(s) => visitor.visit_borrowed_str(s),
            _ => Err(mismatch(&"a string")),
        }
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, RawError> {
        match self.value {
            Value::Table(_) => self.deserialize_any(visitor),
            _ => Err(mismatch(&visitor)),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, RawError> {
        self.deserialize_map(visitor)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, RawError> {
        match self.value {
            Value::Array(_) => self.deserialize_any(visitor),
            _ => Err(mismatch(&visitor)),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, RawError> {
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char bytes byte_buf
        unit unit_struct newtype_struct tuple tuple_struct enum
    }
}

/// The entries of a table, each value a [`Node`] at `path.key`.
struct Entries<'de, 'p> {
    entries: toml::map::Iter<'de, String, Value>,
    path: &'p str,
    value: Option<(&'de str, &'de Value)>,
}

impl<'de> MapAccess<'de> for Entries<'de, '_> {
    type Error = RawError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, RawError> {
        match self.entries.next() {
            None => Ok(None),
            Some((key, value)) => {
                self.value = Some((key.as_str(), value));
                seed.deserialize(BorrowedStrDeserializer::new(key.as_str()))
                    .map(Some)
            }
        }
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, RawError> {
        let (key, value) = self
            .value
            .take()
            .ok_or_else(|| de::Error::custom("a value was read before its key"))?;
        read(seed, value, join_key(self.path, key))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

/// The elements of an array, each a [`Node`] at `path[i]`.
struct Items<'de, 'p> {
    items: std::iter::Enumerate<std::slice::Iter<'de, Value>>,
    path: &'p str,
}

impl<'de> SeqAccess<'de> for Items<'de, '_> {
    type Error = RawError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, RawError> {
        match self.items.next() {
            None => Ok(None),
            Some((i, value)) => read(seed, value, format!("{}[{i}]", self.path)).map(Some),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

/// A deserialization error of the descriptor model: where and what.
#[derive(Debug)]
pub(super) struct RawError {
    /// Set by the innermost value the error passes through.
    at: Option<At>,
    problem: Problem,
}

#[derive(Debug)]
struct At {
    /// Key path of the value being read (for a key problem: of its table).
    path: String,
    /// The value there, with its type (`integer 3`, `a table`).
    found: String,
}

#[derive(Debug)]
enum Problem {
    /// A key the table does not allow, and the keys it allows.
    UnknownKey {
        key: String,
        allowed: &'static [&'static str],
    },
    /// A required key (only the `kind` tag is required by the model).
    MissingKey(&'static str),
    /// A name not in the list (a pattern's `kind`).
    UnknownName {
        found: String,
        allowed: &'static [&'static str],
    },
    /// A value of the wrong type, and what was expected.
    Mismatch(String),
    /// Anything else serde says.
    Other(String),
}

/// How a tagged table's tag key reads in messages: its name and what it
/// expects (`("kind", "one of \"matrix-market\", ...")`).
pub(super) type TagKey<'a> = (&'static str, &'a str);

impl RawError {
    fn problem(problem: Problem) -> Self {
        RawError { at: None, problem }
    }

    /// The descriptor error of `manifest` this is. `tag` names the tag key of
    /// a tagged table: serde leaves it out of the allowed keys it reports.
    pub(super) fn into_descriptor_error(
        self,
        manifest: &Path,
        tag: Option<TagKey<'_>>,
    ) -> DescriptorError {
        let At { path, found } = self.at.unwrap_or(At {
            path: String::new(),
            found: "a value".to_string(),
        });
        let (key_path, message) = match self.problem {
            Problem::UnknownKey { key, allowed } => {
                let allowed: Vec<&str> = tag
                    .map(|(t, _)| t)
                    .into_iter()
                    .chain(allowed.iter().copied())
                    .collect();
                (
                    join_key(&path, &key),
                    format!(
                        "unknown key \"{key}\"; allowed keys: {}",
                        allowed.join(", ")
                    ),
                )
            }
            Problem::MissingKey(key) => {
                let expected = match tag {
                    Some((t, expected)) if t == key => format!(", expected {expected}"),
                    _ => String::new(),
                };
                (
                    join_key(&path, key),
                    format!("missing required key \"{key}\"{expected}"),
                )
            }
            Problem::UnknownName { found, allowed } => (
                path,
                format!("found {}, expected {}", quote(&found), one_of(allowed)),
            ),
            Problem::Mismatch(expected) => (path, format!("found {found}, expected {expected}")),
            Problem::Other(message) => (path, format!("found {found}: {message}")),
        };
        DescriptorError::new(manifest, key_path, message)
    }
}

impl fmt::Display for RawError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(at) = &self.at {
            write!(f, "at {}: ", at.path)?;
        }
        match &self.problem {
            Problem::UnknownKey { key, .. } => write!(f, "unknown key \"{key}\""),
            Problem::MissingKey(key) => write!(f, "missing required key \"{key}\""),
            Problem::UnknownName { found, .. } => write!(f, "unknown name {found:?}"),
            Problem::Mismatch(expected) => write!(f, "expected {expected}"),
            Problem::Other(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for RawError {}

impl de::Error for RawError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        RawError::problem(Problem::Other(msg.to_string()))
    }

    fn invalid_type(_: Unexpected<'_>, expected: &dyn Expected) -> Self {
        RawError::problem(Problem::Mismatch(expected.to_string()))
    }

    fn invalid_value(_: Unexpected<'_>, expected: &dyn Expected) -> Self {
        RawError::problem(Problem::Mismatch(expected.to_string()))
    }

    fn invalid_length(_: usize, expected: &dyn Expected) -> Self {
        RawError::problem(Problem::Mismatch(expected.to_string()))
    }

    fn unknown_variant(variant: &str, expected: &'static [&'static str]) -> Self {
        RawError::problem(Problem::UnknownName {
            found: variant.to_string(),
            allowed: expected,
        })
    }

    fn unknown_field(field: &str, expected: &'static [&'static str]) -> Self {
        RawError::problem(Problem::UnknownKey {
            key: field.to_string(),
            allowed: expected,
        })
    }

    fn missing_field(field: &'static str) -> Self {
        RawError::problem(Problem::MissingKey(field))
    }
}
