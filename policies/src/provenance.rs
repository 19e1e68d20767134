//! Where a dataset record's matrix came from: a generator with its
//! parameters and seed, or a real matrix file with its origin and sha256.
//!
//! Stored in [`crate::dataset::MatrixRecord::provenance`]; records of
//! datasets written before the field existed have none.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The origin of one record's matrix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Provenance {
    /// Built by a seeded generator (deterministic for these parameters).
    Generated {
        /// Generator name (e.g. `knn`, `sbm`, `rmat`).
        generator: String,
        /// The generator's parameters, as a JSON object.
        params: serde_json::Value,
        /// Seed given to the generator.
        seed: u64,
    },
    /// Read from a matrix file.
    Real {
        /// Where the file comes from (a collection, a repository).
        origin: String,
        /// Path of the file within its origin.
        path: String,
        /// Commit or version of the origin, where known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        commit: Option<String>,
        /// sha256 (hex) of the file's bytes.
        sha256: String,
    },
}

impl Provenance {
    /// A real matrix file: its sha256 is computed from `bytes`.
    pub fn real(origin: &str, path: &str, commit: Option<&str>, bytes: &[u8]) -> Provenance {
        Provenance::Real {
            origin: origin.to_string(),
            path: path.to_string(),
            commit: commit.map(str::to_string),
            sha256: sha256_hex(bytes),
        }
    }

    /// Whether the matrix was generated (not read from a file).
    pub fn is_generated(&self) -> bool {
        matches!(self, Provenance::Generated { .. })
    }

    /// One line for logs: `knn {"k":8,...} seed 3` or `file origin/path sha256 0123abcd`.
    pub fn describe(&self) -> String {
        match self {
            Provenance::Generated {
                generator,
                params,
                seed,
            } => format!("{generator} {params} seed {seed}"),
            Provenance::Real {
                origin,
                path,
                sha256,
                ..
            } => format!(
                "file {origin}/{path} sha256 {}",
                sha256.get(..12).unwrap_or(sha256)
            ),
        }
    }
}

/// sha256 of bytes, lower-case hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provenance_roundtrips_through_json_with_its_kind_tag() {
        let g = Provenance::Generated {
            generator: "knn".into(),
            params: serde_json::json!({"points": 1000, "k": 8}),
            seed: 7,
        };
        let text = serde_json::to_string(&g).unwrap();
        assert!(text.contains("\"kind\":\"generated\""), "{text}");
        assert_eq!(serde_json::from_str::<Provenance>(&text).unwrap(), g);
        let r = Provenance::real("SuiteSparse", "HB/1138_bus.mtx", None, b"abc");
        let Provenance::Real { sha256, .. } = &r else {
            panic!("not real")
        };
        // sha256("abc")
        assert!(sha256.starts_with("ba7816bf8f01cfea"), "{sha256}");
        let text = serde_json::to_string(&r).unwrap();
        assert!(!text.contains("commit"), "{text}");
        assert_eq!(serde_json::from_str::<Provenance>(&text).unwrap(), r);
        assert!(g.is_generated() && !r.is_generated());
        assert!(
            r.describe()
                .starts_with("file SuiteSparse/HB/1138_bus.mtx sha256 ba7816bf8f01")
        );
    }
}
