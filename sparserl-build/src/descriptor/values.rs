//! Leaf values as written: the found/expected wording of every message and
//! the typed reads of loose [`toml::Value`] leaves of the model.

use super::*;

/// What the validation pass needs besides the model: the manifest (named in
/// errors) and its directory (anchoring relative `path` / `dir` keys).
pub(super) struct Cx<'a> {
    pub(super) manifest: &'a Path,
    pub(super) dir: PathBuf,
}

impl Cx<'_> {
    pub(super) fn err(&self, key_path: &str, message: impl Into<String>) -> DescriptorError {
        DescriptorError::new(self.manifest, key_path, message)
    }

    /// The value of a required key, or the error saying it is missing and
    /// what it expects; `table` is the key path of the table holding `key`.
    pub(super) fn required<'v, T>(
        &self,
        table: &str,
        key: &str,
        value: &'v Option<T>,
        expected: &str,
    ) -> Result<&'v T, DescriptorError> {
        value.as_ref().ok_or_else(|| {
            self.err(
                &join_key(table, key),
                format!("missing required key \"{key}\", expected {expected}"),
            )
        })
    }
}

pub(super) fn manifest_dir(manifest: &Path) -> PathBuf {
    match manifest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// A key as it appears in a key path: bare, or quoted when it needs quotes.
pub(super) fn key_segment(key: &str) -> String {
    if !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        key.to_string()
    } else {
        format!("{key:?}")
    }
}

/// `path.key`, or `key` at the top of the document.
pub(super) fn join_key(path: &str, key: &str) -> String {
    if path.is_empty() {
        key_segment(key)
    } else {
        format!("{path}.{}", key_segment(key))
    }
}

pub(super) fn no_kernels_message(found: &str) -> String {
    format!(
        "{found}; add at least one [[{ROOT}.kernel]] entry, e.g. name = \"my_kernel\", \
         op = \"spmv\", value = \"f32\", pattern = {{ kind = \"stencil\", grid = [1024, 1024], \
         points = 5 }}"
    )
}

/// A value as written: strings quoted, numbers bare, containers by type.
pub(super) fn found(v: &Value) -> String {
    match v {
        Value::String(s) => quote(s),
        Value::Integer(i) => i.to_string(),
        Value::Float(f) => format!("{f:?}"),
        Value::Boolean(b) => b.to_string(),
        Value::Datetime(d) => format!("datetime {d}"),
        Value::Array(a) if a.is_empty() => "an empty array".to_string(),
        Value::Array(a) => format!("an array of {} elements", a.len()),
        Value::Table(_) => "a table".to_string(),
    }
}

/// A value with its TOML type, for type mismatches.
pub(super) fn found_typed(v: &Value) -> String {
    match v {
        Value::String(s) => format!("string {}", quote(s)),
        Value::Integer(i) => format!("integer {i}"),
        Value::Float(f) => format!("float {f:?}"),
        Value::Boolean(b) => format!("boolean {b}"),
        other => found(other),
    }
}

pub(super) fn quote(s: &str) -> String {
    const MAX: usize = 60;
    if s.chars().count() > MAX {
        let head: String = s.chars().take(MAX).collect();
        format!("{:?}...", head)
    } else {
        format!("{s:?}")
    }
}

pub(super) fn one_of(options: &[&str]) -> String {
    let quoted: Vec<String> = options.iter().map(|o| format!("\"{o}\"")).collect();
    format!("one of {}", quoted.join(", "))
}

pub(super) fn string<'v>(
    cx: &Cx<'_>,
    path: &str,
    v: &'v Value,
) -> Result<&'v str, DescriptorError> {
    match v {
        Value::String(s) => Ok(s),
        other => Err(cx.err(
            path,
            format!("found {}, expected a string", found_typed(other)),
        )),
    }
}

pub(super) fn positive_int(
    cx: &Cx<'_>,
    path: &str,
    v: &Value,
    max: usize,
) -> Result<usize, DescriptorError> {
    match v {
        Value::Integer(i) if *i > 0 => match usize::try_from(*i) {
            Ok(n) if n <= max => Ok(n),
            _ => Err(cx.err(
                path,
                format!("found {i}, expected a positive integer no larger than {max}"),
            )),
        },
        Value::Integer(i) => Err(cx.err(path, format!("found {i}, expected a positive integer"))),
        other => Err(cx.err(
            path,
            format!("found {}, expected a positive integer", found_typed(other)),
        )),
    }
}

pub(super) fn positive_number(cx: &Cx<'_>, path: &str, v: &Value) -> Result<f64, DescriptorError> {
    let x = match v {
        Value::Integer(i) => *i as f64,
        Value::Float(f) => *f,
        other => {
            return Err(cx.err(
                path,
                format!("found {}, expected a positive number", found_typed(other)),
            ));
        }
    };
    if x.is_finite() && x > 0.0 {
        Ok(x)
    } else {
        Err(cx.err(
            path,
            format!("found {}, expected a positive finite number", found(v)),
        ))
    }
}
