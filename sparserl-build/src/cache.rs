//! Content-addressed persistent cache of generated kernels.
//!
//! An entry is one JSON file named by its key (a sha256 hex string). The file
//! carries a sha256 of its own payload, so a truncated or edited entry is
//! detected on read, reported, deleted and regenerated. Writes go to a unique
//! temporary file in the same directory followed by an atomic rename and an
//! fsync of the directory, so two builds writing the same entry at once
//! never leave a torn file behind. A damaged entry is removed only when the
//! file at its name still holds the bytes that were read (another build may
//! have renamed a good entry into place meanwhile: that one stays).
//! Temporary files of builds that died before their rename (`.NAME.KIND.PID.N.tmp`)
//! are removed by the next build that writes to the directory: when their
//! process is gone, or when they are older than [`STALE_TEMP`].

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// Age past which any temporary file in a cache directory is a leftover
/// (writing an entry takes milliseconds; this covers a writer whose process
/// cannot be checked, or whose process id was reused).
pub const STALE_TEMP: Duration = Duration::from_secs(6 * 3600);

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
    /// Whether leftover temporary files were swept (once per cache value).
    swept: Arc<AtomicBool>,
}

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl Cache {
    /// A cache rooted at `dir` (created on first write).
    pub fn at(dir: impl Into<PathBuf>) -> Cache {
        Cache {
            root: Some(dir.into()),
            swept: Arc::default(),
        }
    }
    /// A cache that never hits and never stores.
    pub fn disabled() -> Cache {
        Cache {
            root: None,
            swept: Arc::default(),
        }
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
        self.get_observed(key, &mut || {})
    }

    /// [`Cache::get`], calling `after_read` between reading a damaged entry
    /// and removing it (where another build's rename may land; tests).
    pub(crate) fn get_observed<T: for<'de> Deserialize<'de>>(
        &self,
        key: &str,
        after_read: &mut dyn FnMut(),
    ) -> Lookup<T> {
        let Some(path) = self.path(key) else {
            return Lookup::Miss;
        };
        let bytes = match fs::read(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Lookup::Miss,
            Err(e) => return Lookup::Corrupt(format!("cannot read {}: {e}", path.display())),
        };
        let text = String::from_utf8_lossy(&bytes);
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
        after_read();
        let removed = match remove_if_holds(&path, &bytes) {
            Ok(true) => "removed",
            Ok(false) => "replaced meanwhile by another build's entry, kept",
            Err(_) => "could not be removed",
        };
        Lookup::Corrupt(format!("{}: {problem} ({removed})", path.display()))
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
        if let Some(dir) = path.parent()
            && !self.swept.swap(true, Ordering::Relaxed)
        {
            sweep_temps(dir, STALE_TEMP);
        }
        write_atomic(&path, text.as_bytes())
    }
}

/// Name of the cache directory inside a target directory.
pub const CACHE_DIR_NAME: &str = "sparserl-cache";

/// The cache directory of a build whose `OUT_DIR` is `out_dir`
/// (`<target>/[<triple>/]<profile>/build/<pkg>-<hash>/out`), with
/// `CARGO_TARGET_DIR` = `target_env` when set. A relative `target_env` is
/// relative to where cargo was started, which a build script does not know
/// (it runs in the crate's source directory): it is resolved as the
/// ancestor of `out_dir` that ends with it, so the cache lands in the
/// target directory cargo actually uses, never in the source tree; the
/// same for an absolute one (`out_dir` lies inside it).
pub fn target_cache_dir(target_env: Option<&Path>, out_dir: &Path) -> PathBuf {
    if let Some(t) = target_env {
        if t.is_absolute() {
            return t.join(CACHE_DIR_NAME);
        }
        let tail: PathBuf = t
            .components()
            .filter(|c| matches!(c, std::path::Component::Normal(_)))
            .collect();
        if !tail.as_os_str().is_empty()
            && let Some(target) = out_dir.ancestors().find(|a| a.ends_with(&tail))
        {
            return target.join(CACHE_DIR_NAME);
        }
    }
    match out_dir.ancestors().nth(4) {
        Some(target) if !target.as_os_str().is_empty() => target.join(CACHE_DIR_NAME),
        _ => out_dir.join(CACHE_DIR_NAME),
    }
}

/// A unique temporary name next to `path`: `.NAME.KIND.PID.N.tmp`.
fn temp_path(path: &Path, kind: &str) -> PathBuf {
    let dir = path.parent().unwrap_or(Path::new("."));
    dir.join(format!(
        ".{}.{kind}.{}.{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("entry"),
        std::process::id(),
        TMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ))
}

/// The writer's process id of a [`temp_path`] name, if it is one.
fn temp_owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix('.')?.strip_suffix(".tmp")?;
    let mut parts = rest.rsplitn(3, '.');
    let (_n, pid) = (parts.next()?.parse::<u64>().ok()?, parts.next()?);
    parts.next()?;
    pid.parse().ok()
}

/// Whether process `pid` is alive, where the platform says (`/proc`).
fn process_alive(pid: u32) -> Option<bool> {
    let proc = Path::new("/proc");
    proc.join("self")
        .exists()
        .then(|| proc.join(pid.to_string()).exists())
}

/// Removes the temporary files in `dir` that no live writer will rename:
/// those of a process that is gone, and any older than `max_age`. Never
/// this process's own (another thread may be writing). Best effort.
pub fn sweep_temps(dir: &Path, max_age: Duration) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let me = std::process::id();
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(temp_owner) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > max_age);
        if old || process_alive(pid) == Some(false) {
            let _ = fs::remove_file(e.path());
        }
    }
}

/// Removes `path` if it still holds `bytes`: renames it aside under a
/// unique name first (so a good entry another build renames into place
/// afterwards is never touched), then deletes the aside file if it holds
/// `bytes`, else puts it back (it was a good entry that landed between the
/// read and the rename). `Ok(false)`: kept.
fn remove_if_holds(path: &Path, bytes: &[u8]) -> std::io::Result<bool> {
    let aside = temp_path(path, "damaged");
    match fs::rename(path, &aside) {
        Ok(()) => {}
        // Gone already (another build removed it): nothing to do.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(true),
        Err(e) => return Err(e),
    }
    if fs::read(&aside)? == bytes {
        fs::remove_file(&aside)?;
        return Ok(true);
    }
    fs::rename(&aside, path)?;
    Ok(false)
}

/// Makes a rename in `dir` durable (best effort: not every platform and
/// file system can sync a directory).
fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
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
    write_atomic_observed(path, bytes, &mut || {})
}

/// [`write_atomic`], calling `before_rename` once the temporary file is
/// written (where a killed build stops; tests).
pub(crate) fn write_atomic_observed(
    path: &Path,
    bytes: &[u8],
    before_rename: &mut dyn FnMut(),
) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir)?;
    let tmp = temp_path(path, "new");
    {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    before_rename();
    fs::rename(&tmp, path).inspect_err(|_| {
        let _ = fs::remove_file(&tmp);
    })?;
    sync_dir(dir);
    Ok(())
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

    /// Runs the ignored helper test `name` of this binary in another process
    /// with `var` = `value`.
    fn child(name: &str, var: &str, value: &str) -> std::process::Command {
        let mut c = std::process::Command::new(std::env::current_exe().unwrap());
        c.args([
            "--exact",
            name,
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(var, value);
        c
    }

    /// Helper process: `put`s `"good"` under a key (`SPARSERL_TEST_CACHE_PUT`
    /// = `dir|key`).
    #[test]
    #[ignore = "helper process of the cache's process tests"]
    fn child_put() {
        let spec = std::env::var("SPARSERL_TEST_CACHE_PUT").expect("run by the cache tests");
        let (dir, key) = spec.split_once('|').unwrap();
        Cache::at(dir).put(key, &"good".to_string()).unwrap();
        println!("child-put: done");
    }

    /// Helper process: writes an entry's temporary file, says so, and
    /// waits to be killed before its rename (`SPARSERL_TEST_CACHE_HANG` =
    /// the entry's path).
    #[test]
    #[ignore = "helper process of the cache's process tests"]
    fn child_dies_before_rename() {
        let path = std::env::var("SPARSERL_TEST_CACHE_HANG").expect("run by the cache tests");
        write_atomic_observed(Path::new(&path), b"half of an entry", &mut || {
            println!("child-temp: written");
            std::io::stdout().flush().unwrap();
            std::thread::sleep(std::time::Duration::from_secs(600));
        })
        .unwrap();
    }

    fn temps(dir: &Path) -> Vec<String> {
        fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect()
    }

    #[test]
    fn a_damaged_read_never_removes_a_good_entry_renamed_in_meanwhile() {
        let dir = tempfile::tempdir().unwrap();
        let c = Cache::at(dir.path());
        fs::write(dir.path().join("k.json"), "{damaged").unwrap();
        let spec = format!("{}|k", dir.path().display());
        // Another build renames a good entry into place after this one read
        // the damaged file and before it removes it.
        let got = c.get_observed::<String>("k", &mut || {
            let out = child("cache::tests::child_put", "SPARSERL_TEST_CACHE_PUT", &spec)
                .output()
                .unwrap();
            assert!(String::from_utf8_lossy(&out.stdout).contains("child-put: done"));
        });
        assert!(
            matches!(&got, Lookup::Corrupt(m) if m.contains("kept")),
            "{got:?}"
        );
        assert!(matches!(c.get::<String>("k"), Lookup::Hit(v) if v == "good"));
        assert!(temps(dir.path()).is_empty(), "{:?}", temps(dir.path()));
        // Without a concurrent build the damaged entry is removed.
        fs::write(dir.path().join("k.json"), "{damaged").unwrap();
        assert!(matches!(c.get::<String>("k"), Lookup::Corrupt(m) if m.contains("(removed)")));
        assert!(!dir.path().join("k.json").exists());
    }

    #[test]
    fn temp_files_of_a_killed_build_are_swept_and_a_live_ones_kept() {
        use std::io::BufRead;
        let dir = tempfile::tempdir().unwrap();
        let entry = dir.path().join("x.json");
        let mut writer = child(
            "cache::tests::child_dies_before_rename",
            "SPARSERL_TEST_CACHE_HANG",
            &entry.to_string_lossy(),
        )
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
        let mut lines = std::io::BufReader::new(writer.stdout.take().unwrap()).lines();
        assert!(lines.any(|l| l.unwrap().contains("child-temp: written")));
        // The partial state exists: a temporary file and no entry.
        assert_eq!(temps(dir.path()).len(), 1);
        assert!(!entry.exists());
        // Its writer is alive: a sweep leaves it alone.
        sweep_temps(dir.path(), STALE_TEMP);
        assert_eq!(temps(dir.path()).len(), 1);
        writer.kill().unwrap();
        writer.wait().unwrap();
        assert_eq!(
            temps(dir.path()).len(),
            1,
            "the kill left the temporary file"
        );
        // The next build writing to the cache removes it.
        let c = Cache::at(dir.path());
        c.put("other", &1u32).unwrap();
        assert!(temps(dir.path()).is_empty(), "{:?}", temps(dir.path()));
        assert!(matches!(c.get::<u32>("other"), Lookup::Hit(1)));
        assert!(matches!(c.get::<String>("x"), Lookup::Miss));
    }

    #[test]
    fn old_temp_files_are_swept_whatever_process_they_name() {
        let dir = tempfile::tempdir().unwrap();
        // Process 1 is alive: only age makes its files leftovers.
        let old = dir.path().join(".a.json.new.1.0.tmp");
        let fresh = dir.path().join(".b.json.new.1.0.tmp");
        let other = dir.path().join("notes.tmp");
        for p in [&old, &fresh, &other] {
            fs::write(p, "x").unwrap();
        }
        let hours_ago = std::time::SystemTime::now() - Duration::from_secs(7 * 3600);
        fs::File::options()
            .write(true)
            .open(&old)
            .unwrap()
            .set_modified(hours_ago)
            .unwrap();
        sweep_temps(dir.path(), STALE_TEMP);
        assert!(!old.exists());
        assert!(fresh.exists() && other.exists());
    }

    #[test]
    fn temp_names_carry_their_writer() {
        let p = temp_path(Path::new("/c/k.json"), "new");
        let name = p.file_name().unwrap().to_str().unwrap();
        assert_eq!(temp_owner(name), Some(std::process::id()));
        assert_eq!(temp_owner(".k.json.123.4.tmp"), Some(123));
        assert_eq!(temp_owner("k.json"), None);
        assert_eq!(temp_owner(".x.tmp"), None);
    }

    #[test]
    fn the_cache_lives_in_the_target_directory_cargo_uses() {
        let out = Path::new("/ws/build-out/debug/build/app-1f/out");
        let at = |t: Option<&str>| target_cache_dir(t.map(Path::new), out);
        // A relative CARGO_TARGET_DIR: the ancestor of OUT_DIR it names,
        // not the crate's source directory the build script runs in.
        assert_eq!(
            at(Some("build-out")),
            Path::new("/ws/build-out/sparserl-cache")
        );
        assert_eq!(
            at(Some("./build-out")),
            Path::new("/ws/build-out/sparserl-cache")
        );
        assert_eq!(
            at(Some("../ws/build-out")),
            Path::new("/ws/build-out/sparserl-cache")
        );
        assert_eq!(at(Some("/abs/t")), Path::new("/abs/t/sparserl-cache"));
        // Not found among the ancestors, or unset: from OUT_DIR's shape.
        assert_eq!(
            at(Some("elsewhere")),
            Path::new("/ws/build-out/sparserl-cache")
        );
        assert_eq!(at(None), Path::new("/ws/build-out/sparserl-cache"));
        let cross = Path::new("/ws/t/x86_64-unknown-linux-gnu/debug/build/app-1f/out");
        assert_eq!(
            target_cache_dir(Some(Path::new("t")), cross),
            Path::new("/ws/t/sparserl-cache")
        );
    }

    #[test]
    fn disabled_cache_never_hits() {
        let c = Cache::disabled();
        c.put("k", &1u8).unwrap();
        assert!(matches!(c.get::<u8>("k"), Lookup::Miss));
    }
}
