//! Validation of `SparseRL.lock` before any of it is used: the file's
//! `version`, one entry per kernel name, and for the entry a build is about
//! to use its value type, its variant's parameters and its numbering
//! against the kernel's declaration. Every error names the lock file, the
//! entry and what was expected.

use super::{LOCK_VERSION, LockEntry, LockError, LockFile};
use crate::descriptor::KernelDecl;
use std::collections::HashSet;
use std::path::Path;

/// An [`LockError::Invalid`] for `entry` of the lock file at `path`.
fn invalid(path: &Path, entry: Option<&str>, problem: String, expected: String) -> LockError {
    LockError::Invalid {
        path: path.to_path_buf(),
        entry: entry.map(str::to_string),
        problem,
        expected,
    }
}

impl LockFile {
    /// File-level checks: the format `version`, and no two entries with one
    /// name (which of them a build would use is not defined).
    pub(super) fn check_file(&self, path: &Path) -> Result<(), LockError> {
        if self.version != LOCK_VERSION {
            return Err(invalid(
                path,
                None,
                format!(
                    "version = {} is not a lock-file version this build reads",
                    self.version
                ),
                format!("version = {LOCK_VERSION} (rewrite the file with `cargo xtask retune`)"),
            ));
        }
        let mut seen = HashSet::new();
        for e in &self.kernel {
            if !seen.insert(e.name.as_str()) {
                return Err(invalid(
                    path,
                    Some(&e.name),
                    "the kernel has more than one entry".into(),
                    "one [[kernel]] entry per kernel name (remove the duplicates or rerun `cargo xtask retune`)".into(),
                ));
            }
        }
        Ok(())
    }

    /// The entry for `decl` if it is fresh (same descriptor and generator
    /// fingerprints), after checking it can be used as it stands: its value
    /// type is the declared one, its variant passes
    /// [`Variant::validate`](sparserl_rt::Variant::validate) and its
    /// numbering is one the declaration allows. `lock_path` is the file the
    /// entry came from, for the error.
    pub fn fresh_checked(
        &self,
        lock_path: &Path,
        decl: &KernelDecl,
        descriptor: &str,
        generator: &str,
    ) -> Result<Option<&LockEntry>, LockError> {
        let Some(e) = self.fresh(&decl.name, descriptor, generator) else {
            return Ok(None);
        };
        e.check_against(lock_path, decl)?;
        Ok(Some(e))
    }
}

impl LockEntry {
    /// Checks this entry against the kernel declaration it is used for.
    pub fn check_against(&self, lock_path: &Path, decl: &KernelDecl) -> Result<(), LockError> {
        let err = |problem: String, expected: String| {
            Err(invalid(lock_path, Some(&self.name), problem, expected))
        };
        if self.value != decl.value {
            return err(
                format!("value = \"{}\"", self.value.as_str()),
                format!(
                    "value = \"{}\", as the kernel declares",
                    decl.value.as_str()
                ),
            );
        }
        if let Err(why) = self.variant.validate() {
            return err(
                format!("variant {}: {why}", self.variant.id()),
                "a variant with parameters in range (see `Variant::validate`; rerun `cargo xtask retune`)".into(),
            );
        }
        let allowed = decl.allowed_reorders();
        if !allowed.contains(&self.variant.reorder) {
            let names: Vec<String> = allowed.iter().map(|r| format!("\"{r}\"")).collect();
            return err(
                format!("variant.reorder = \"{}\"", self.variant.reorder),
                format!("one the kernel's `reorder` allows: {}", names.join(", ")),
            );
        }
        if !(self.gbs.is_finite() && self.gbs >= 0.0) {
            return err(
                format!("gbs = {}", self.gbs),
                "a finite, non-negative measured bandwidth".into(),
            );
        }
        Ok(())
    }
}

/// When the whole file does not parse: the first `[[kernel]]` entry that
/// does not parse on its own, with its name, as an [`LockError::Invalid`].
pub(super) fn diagnose_entries(path: &Path, text: &str) -> Option<LockError> {
    let table: toml::Table = toml::from_str(text).ok()?;
    let kernels = table.get("kernel")?.as_array()?;
    kernels.iter().enumerate().find_map(|(i, k)| {
        let err = k.clone().try_into::<LockEntry>().err()?;
        let name = k
            .get("name")
            .and_then(|n| n.as_str())
            .map_or_else(|| format!("kernel[{i}]"), str::to_string);
        Some(invalid(
            path,
            Some(&name),
            format!("does not parse: {err}"),
            "an entry as `cargo xtask retune` writes it (name, value, descriptor, generator, gpu, gbs, pct-copy, candidates, variant)".into(),
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::descriptor::parse_descriptor;
    use sparserl_rt::reorder::Reorder;
    use sparserl_rt::{Strategy, ValueType, Variant};

    const MANIFEST: &str = r#"
[package]
name = "x"
version = "0.1.0"

[[package.metadata.sparserl.kernel]]
name = "k"
op = "spmv"
value = "f32"
reorder = "rcm"
pattern = { kind = "stencil", grid = [8, 8], points = 5 }
"#;

    fn decl() -> KernelDecl {
        let d = parse_descriptor(Path::new("/p/Cargo.toml"), MANIFEST).unwrap();
        d.kernels[0].clone()
    }

    fn entry(variant: Variant) -> LockEntry {
        LockEntry {
            name: "k".into(),
            value: ValueType::F32,
            descriptor: "d".into(),
            generator: "g".into(),
            gpu: "gpu".into(),
            gbs: 100.0,
            pct_copy: 2.0,
            candidates: 3,
            variant,
            objective: None,
        }
    }

    fn good() -> Variant {
        Variant {
            reorder: Reorder::Rcm,
            ..Variant::of(Strategy::GroupPerRow)
        }
    }

    fn lock(entries: Vec<LockEntry>) -> LockFile {
        LockFile {
            version: LOCK_VERSION,
            kernel: entries,
            spmm: Vec::new(),
        }
    }

    /// The message of using `e` for the kernel, which must be an error.
    fn refused(e: LockEntry) -> String {
        let path = Path::new("/p/SparseRL.lock");
        let msg = lock(vec![e])
            .fresh_checked(path, &decl(), "d", "g")
            .unwrap_err()
            .to_string();
        assert!(msg.contains("/p/SparseRL.lock"), "{msg}");
        assert!(msg.contains("entry `k`"), "{msg}");
        assert!(msg.contains("expected"), "{msg}");
        assert!(!msg.contains("internal error"), "{msg}");
        msg
    }

    #[test]
    fn a_valid_fresh_entry_is_used_and_a_stale_one_is_not_checked() {
        let l = lock(vec![entry(good())]);
        let p = Path::new("/p/SparseRL.lock");
        assert_eq!(
            l.fresh_checked(p, &decl(), "d", "g")
                .unwrap()
                .unwrap()
                .variant,
            good()
        );
        // Stale entries are not used, so not refused either (a retune fixes them).
        let stale = lock(vec![entry(Variant { block: 0, ..good() })]);
        assert!(
            stale
                .fresh_checked(p, &decl(), "other", "g")
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn a_variant_out_of_range_names_the_file_entry_and_parameter() {
        let msg = refused(entry(Variant { block: 0, ..good() }));
        assert!(msg.contains("block 0"), "{msg}");
        let msg = refused(entry(Variant { lanes: 3, ..good() }));
        assert!(msg.contains("lanes 3"), "{msg}");
    }

    #[test]
    fn another_value_type_is_refused() {
        let msg = refused(LockEntry {
            value: ValueType::F64,
            ..entry(good())
        });
        assert!(msg.contains("value = \"f64\""), "{msg}");
        assert!(msg.contains("value = \"f32\""), "{msg}");
    }

    #[test]
    fn a_numbering_the_descriptor_does_not_allow_is_refused() {
        let msg = refused(entry(Variant {
            reorder: Reorder::Degree,
            ..good()
        }));
        assert!(msg.contains("reorder = \"degree\""), "{msg}");
        assert!(msg.contains("\"rcm\""), "{msg}");
    }

    #[test]
    fn a_bandwidth_that_is_not_a_measurement_is_refused() {
        let msg = refused(LockEntry {
            gbs: f64::NAN,
            ..entry(good())
        });
        assert!(msg.contains("gbs = NaN"), "{msg}");
    }

    fn read_text(text: &str) -> Result<Option<LockFile>, LockError> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(super::super::LOCK_FILE), text).unwrap();
        LockFile::read(dir.path())
    }

    fn written(l: &LockFile) -> String {
        let dir = tempfile::tempdir().unwrap();
        l.write(dir.path()).unwrap();
        std::fs::read_to_string(dir.path().join(super::super::LOCK_FILE)).unwrap()
    }

    #[test]
    fn duplicate_entries_are_an_error_naming_the_entry() {
        let mut other = entry(good());
        other.variant.block = 512;
        let text = written(&lock(vec![entry(good()), other]));
        let msg = read_text(&text).unwrap_err().to_string();
        assert!(msg.contains("SparseRL.lock"), "{msg}");
        assert!(
            msg.contains("entry `k`: the kernel has more than one entry"),
            "{msg}"
        );
    }

    #[test]
    fn an_unknown_version_is_an_error() {
        let text = written(&lock(vec![entry(good())])).replace("version = 1", "version = 7");
        let msg = read_text(&text).unwrap_err().to_string();
        assert!(msg.contains("version = 7"), "{msg}");
        assert!(msg.contains("expected version = 1"), "{msg}");
        assert!(read_text(&text.replace("version = 7", "version = 1")).is_ok());
    }

    #[test]
    fn an_entry_that_does_not_parse_is_named() {
        let text = written(&lock(vec![entry(good())]))
            .replace("strategy = \"group-per-row\"", "strategy = \"warp-magic\"");
        let msg = read_text(&text).unwrap_err().to_string();
        assert!(msg.contains("SparseRL.lock"), "{msg}");
        assert!(msg.contains("entry `k`: does not parse"), "{msg}");
        assert!(msg.contains("warp-magic"), "{msg}");
    }
}
