//! The lock file, `SparseRL.lock`, next to the user's `Cargo.toml`.
//!
//! `cargo xtask retune` writes it after a measured search on a GPU; builds that
//! find a *fresh* entry for a kernel (same descriptor and sample fingerprint,
//! same generator) use the locked variant without a GPU and produce the same
//! bytes every time. It is TOML, meant to be read in review and committed.

use serde::{Deserialize, Serialize};
use sparserl_rt::{ValueType, Variant};
use std::path::{Path, PathBuf};
use thiserror::Error;

mod check;

/// File name of the lock file.
pub const LOCK_FILE: &str = "SparseRL.lock";
/// The lock-file format version this crate reads and writes.
pub const LOCK_VERSION: u32 = 1;
const HEADER: &str = "# SparseRL lock file: tuned kernel choices, written by `cargo xtask retune`.\n# Commit it: builds that find a fresh entry need no GPU and are reproducible.\n\n";

/// Errors reading or writing a lock file.
#[derive(Debug, Error)]
pub enum LockError {
    /// I/O failure.
    #[error("cannot access {path}: {source}")]
    Io {
        /// the lock file
        path: PathBuf,
        /// cause
        source: std::io::Error,
    },
    /// Not valid lock-file TOML.
    #[error("{path} is not a valid lock file: {source}")]
    Parse {
        /// the lock file
        path: PathBuf,
        /// parser error
        #[source]
        source: toml::de::Error,
    },
    /// The file parses but cannot be used as it stands (a bad version, a
    /// duplicate entry, an entry that does not fit its kernel).
    #[error("{path}: {}{problem}; expected {expected}", entry.as_ref().map(|e| format!("entry `{e}`: ")).unwrap_or_default())]
    Invalid {
        /// the lock file
        path: PathBuf,
        /// the entry's kernel name, when the problem is an entry's
        entry: Option<String>,
        /// what was found
        problem: String,
        /// what was expected instead
        expected: String,
    },
    /// An `[[spmm]]` entry that parses but is not valid (a variant id that
    /// does not parse, a width out of order, ...).
    #[error("{path}: invalid [[spmm]] entry `{name}`: {source}")]
    Spmm {
        /// the lock file
        path: PathBuf,
        /// the entry's kernel name
        name: String,
        /// what is wrong
        #[source]
        source: Box<crate::lock_spmm::SpmmEntryError>,
    },
    /// The lock file could not be rendered as TOML (an internal error).
    #[error("{path}: could not render the lock file: {source}")]
    Render {
        /// the lock file
        path: PathBuf,
        /// serializer error
        #[source]
        source: toml::ser::Error,
    },
}

/// One tuned kernel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct LockEntry {
    /// Kernel name from the descriptor.
    pub name: String,
    /// Value type.
    pub value: ValueType,
    /// Fingerprint of the kernel's descriptor and sample bytes.
    pub descriptor: String,
    /// Generator fingerprint the variant was measured with.
    pub generator: String,
    /// The GPU it was tuned on.
    pub gpu: String,
    /// Winner's effective bandwidth, GB/s, on the tuning samples.
    pub gbs: f64,
    /// Winner's share of the device's measured copy bandwidth, percent.
    pub pct_copy: f64,
    /// Candidates measured by the search.
    pub candidates: u32,
    /// The chosen variant.
    pub variant: Variant,
    /// What an objective other than time did (`[kernel.objective]`: the
    /// finalists' time and energy per call, the pick); absent for the time
    /// objective, so older lock files read as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objective: Option<crate::objective::ObjectiveRecord>,
}

/// The whole lock file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockFile {
    /// Format version.
    pub version: u32,
    /// Entries, sorted by name.
    #[serde(default)]
    pub kernel: Vec<LockEntry>,
    /// SpMM entries (`[[spmm]]`), sorted by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spmm: Vec<crate::lock_spmm::SpmmLockEntry>,
}

impl LockFile {
    /// Reads `dir/SparseRL.lock`; `Ok(None)` if there is none.
    pub fn read(dir: &Path) -> Result<Option<LockFile>, LockError> {
        let path = dir.join(LOCK_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(LockError::Io { path, source }),
        };
        let lock: LockFile = match toml::from_str(&text) {
            Ok(l) => l,
            Err(source) => {
                return Err(check::diagnose_entries(&path, &text)
                    .unwrap_or(LockError::Parse { path, source }));
            }
        };
        lock.check_file(&path)?;
        for e in &lock.spmm {
            e.validate().map_err(|source| LockError::Spmm {
                path: path.clone(),
                name: e.name.clone(),
                source: Box::new(source),
            })?;
        }
        Ok(Some(lock))
    }

    /// Writes `dir/SparseRL.lock` atomically.
    pub fn write(&self, dir: &Path) -> Result<PathBuf, LockError> {
        let path = dir.join(LOCK_FILE);
        let mut sorted = self.clone();
        sorted.kernel.sort_by(|a, b| a.name.cmp(&b.name));
        sorted.spmm.sort_by(|a, b| a.name.cmp(&b.name));
        let body = toml::to_string_pretty(&sorted).map_err(|source| LockError::Render {
            path: path.clone(),
            source,
        })?;
        crate::cache::write_atomic(&path, format!("{HEADER}{body}").as_bytes()).map_err(
            |source| LockError::Io {
                path: path.clone(),
                source,
            },
        )?;
        Ok(path)
    }

    /// The entry for `name` if it matches `descriptor` and `generator`.
    pub fn fresh(&self, name: &str, descriptor: &str, generator: &str) -> Option<&LockEntry> {
        self.kernel
            .iter()
            .find(|e| e.name == name && e.descriptor == descriptor && e.generator == generator)
    }

    /// The SpMM entry for `name` if it matches `descriptor` and `generator`
    /// and holds exactly the declared `columns` in `dense`.
    pub fn fresh_spmm(
        &self,
        name: &str,
        descriptor: &str,
        generator: &str,
        columns: &[usize],
        dense: sparserl_rt::dense::DenseLayout,
    ) -> Option<&crate::lock_spmm::SpmmLockEntry> {
        self.spmm.iter().find(|e| {
            e.name == name
                && e.descriptor == descriptor
                && e.generator == generator
                && e.covers(columns, dense)
        })
    }

    /// Whether any entry (SpMV or SpMM) names kernel `name`.
    pub fn has_entry(&self, name: &str) -> bool {
        self.kernel.iter().any(|e| e.name == name) || self.spmm.iter().any(|e| e.name == name)
    }

    /// Inserts or replaces the SpMM entry with the same name.
    pub fn upsert_spmm(&mut self, entry: crate::lock_spmm::SpmmLockEntry) {
        self.version = 1;
        self.spmm.retain(|e| e.name != entry.name);
        self.spmm.push(entry);
    }

    /// Inserts or replaces the entry with the same name.
    pub fn upsert(&mut self, entry: LockEntry) {
        self.version = LOCK_VERSION;
        self.kernel.retain(|e| e.name != entry.name);
        self.kernel.push(entry);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sparserl_rt::Strategy;

    fn entry(name: &str) -> LockEntry {
        LockEntry {
            name: name.into(),
            value: ValueType::F32,
            descriptor: "abc".into(),
            generator: "g1".into(),
            gpu: "test gpu".into(),
            gbs: 1234.5,
            pct_copy: 30.1,
            candidates: 17,
            variant: Variant::of(Strategy::GroupPerRow),
            objective: None,
        }
    }

    #[test]
    fn roundtrip_and_freshness() {
        let dir = tempfile::tempdir().unwrap();
        assert!(LockFile::read(dir.path()).unwrap().is_none());
        let mut l = LockFile::default();
        l.upsert(entry("b"));
        l.upsert(entry("a"));
        l.upsert(entry("a"));
        l.write(dir.path()).unwrap();
        let back = LockFile::read(dir.path()).unwrap().unwrap();
        assert_eq!(back.kernel.len(), 2);
        assert_eq!(back.kernel[0].name, "a");
        assert!(back.fresh("a", "abc", "g1").is_some());
        assert!(back.fresh("a", "abd", "g1").is_none());
        assert!(back.fresh("a", "abc", "g2").is_none());
        let text = std::fs::read_to_string(dir.path().join(LOCK_FILE)).unwrap();
        assert!(text.starts_with("# SparseRL lock file"));
    }

    #[test]
    fn bad_lock_file_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(LOCK_FILE), "version = \"x\"").unwrap();
        let e = LockFile::read(dir.path()).unwrap_err();
        assert!(e.to_string().contains("not a valid lock file"));
    }
}
