//! Content-addressed persistent cache of generated kernels.
//!
//! An entry is one JSON file named by its key (a sha256 hex string). The file
//! carries a sha256 of its own payload, so a truncated or edited entry is
//! detected on read, reported, deleted and regenerated. Writes go to a unique
//! temporary file in the same directory followed by an atomic rename, so two
//! builds writing the same entry at once never leave a torn file behind.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Incrementally builds a cache key from labelled parts.
///
/// Each part is length-prefixed so that `("ab", "c")` and `("a", "bc")` differ.
#[derive(Clone, Default)]
pub struct KeyBuilder {
    hasher: Sha256,
}

impl KeyBuilder {
    /// Starts an empty key.
    pub fn new() -> Self {
        Self::default()
    }
    /// Adds a labelled byte string.
    pub fn part(&mut self, label: &str, bytes: &[u8]) -> &mut Self {
        for chunk in [label.as_bytes(), bytes] {
            self.hasher.update((chunk.len() as u64).to_le_bytes());
            self.hasher.update(chunk);
        }
        self
    }
    /// Adds a labelled string.
    pub fn text(&mut self, label: &str, text: &str) -> &mut Self {
        self.part(label, text.as_bytes())
    }
    /// Finishes the key as lowercase hex.
    pub fn finish(&self) -> String {
        hex(&self.hasher.clone().finalize())
    }
}

/// Lowercase hex of bytes.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// sha256 of bytes as lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

#[derive(Serialize, Deserialize)]
struct Envelope {
    /// sha256 of `payload`.
    checksum: String,
    /// The entry, JSON text.
    payload: String,
}

/// What reading an entry found.
#[derive(Debug)]
pub enum Lookup<T> {
    /// A valid entry.
    Hit(T),
    /// No entry under that key.
    Miss,
    /// An entry existed but was damaged; it has been removed.
    Corrupt(String),
}

/// A directory of cache entries. `None` root = caching disabled.
#[derive(Debug, Clone)]
pub struct Cache {
    root: Option<PathBuf>,
}

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl Cache {
    /// A cache rooted at `dir` (created on first write).
    pub fn at(dir: impl Into<PathBuf>) -> Cache {
        Cache {
            root: Some(dir.into()),
        }
    }
    /// A cache that never hits and never stores.
    pub fn disabled() -> Cache {
        Cache { root: None }
    }
    /// The directory, if enabled.
    pub fn root(&self) -> Option<&Path> {
        self.root.as_deref()
    }

    fn path(&self, key: &str) -> Option<PathBuf> {
        self.root.as_ref().map(|r| r.join(format!("{key}.json")))
    }

    /// Reads the entry under `key`.
    pub fn get<T: for<'de> Deserialize<'de>>(&self, key: &str) -> Lookup<T> {
        let Some(path) = self.path(key) else {
            return Lookup::Miss;
        };
        let text = match fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Lookup::Miss,
            Err(e) => return Lookup::Corrupt(format!("cannot read {}: {e}", path.display())),
        };
        let problem = match serde_json::from_str::<Envelope>(&text) {
            Err(e) => format!("not a cache entry ({e})"),
            Ok(env) if sha256_hex(env.payload.as_bytes()) != env.checksum => {
                "checksum mismatch".to_string()
            }
            Ok(env) => match serde_json::from_str::<T>(&env.payload) {
                Ok(v) => return Lookup::Hit(v),
                Err(e) => format!("payload does not decode ({e})"),
            },
        };
        let _ = fs::remove_file(&path);
        Lookup::Corrupt(format!("{}: {problem}", path.display()))
    }

    /// Stores `value` under `key` atomically. Failures are returned, not fatal:
    /// callers degrade to an uncached build.
    pub fn put<T: Serialize>(&self, key: &str, value: &T) -> std::io::Result<()> {
        let Some(path) = self.path(key) else {
            return Ok(());
        };
        let payload = serde_json::to_string(value).map_err(std::io::Error::other)?;
        let env = Envelope {
            checksum: sha256_hex(payload.as_bytes()),
            payload,
        };
        let text = serde_json::to_string(&env).map_err(std::io::Error::other)?;
        write_atomic(&path, text.as_bytes())
    }
}

/// Writes `bytes` to `path` through a unique temporary file and a rename.
/// Skips the write when the file already holds exactly these bytes (keeps
/// mtimes stable so dependent builds are not invalidated).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Ok(existing) = fs::read(path)
        && existing == bytes
    {
        return Ok(());
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(
        ".{}.{}.{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("entry"),
        std::process::id(),
        TMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    fs::rename(&tmp, path).inspect_err(|_| {
        let _ = fs::remove_file(&tmp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_and_miss() {
        let dir = tempfile::tempdir().unwrap();
        let c = Cache::at(dir.path());
        assert!(matches!(c.get::<Vec<u32>>("k"), Lookup::Miss));
        c.put("k", &vec![1u32, 2, 3]).unwrap();
        assert!(matches!(c.get::<Vec<u32>>("k"), Lookup::Hit(v) if v == vec![1, 2, 3]));
    }

    #[test]
    fn corruption_is_detected_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let c = Cache::at(dir.path());
        c.put("k", &"hello".to_string()).unwrap();
        let p = dir.path().join("k.json");
        let text = fs::read_to_string(&p).unwrap().replace("hello", "hellp");
        fs::write(&p, text).unwrap();
        assert!(matches!(c.get::<String>("k"), Lookup::Corrupt(m) if m.contains("checksum")));
        assert!(!p.exists());
        fs::write(&p, "{truncated").unwrap();
        assert!(matches!(c.get::<String>("k"), Lookup::Corrupt(_)));
        assert!(matches!(c.get::<String>("k"), Lookup::Miss));
    }

    #[test]
    fn concurrent_writers_leave_a_valid_entry() {
        let dir = tempfile::tempdir().unwrap();
        let c = Cache::at(dir.path());
        let big: Vec<u64> = (0..50_000).collect();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..5 {
                        c.put("same", &big).unwrap();
                        assert!(!matches!(c.get::<Vec<u64>>("same"), Lookup::Corrupt(_)));
                    }
                });
            }
        });
        assert!(matches!(c.get::<Vec<u64>>("same"), Lookup::Hit(v) if v == big));
        let leftovers = fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(leftovers, 1, "no temporary files left behind");
    }

    #[test]
    fn keys_are_length_prefixed() {
        let a = KeyBuilder::new().text("x", "ab").text("y", "c").finish();
        let b = KeyBuilder::new().text("x", "a").text("y", "bc").finish();
        assert_ne!(a, b);
        assert_eq!(a.len(), 64);
    }

    #[test]
    fn disabled_cache_never_hits() {
        let c = Cache::disabled();
        c.put("k", &1u8).unwrap();
        assert!(matches!(c.get::<u8>("k"), Lookup::Miss));
    }
}
