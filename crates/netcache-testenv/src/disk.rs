//! A disk that fills up: a filesystem of its own (tmpfs) a test fills to the
//! last block and frees again, to see what a full disk does to writes.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use tempfile::TempDir;

/// A tmpfs of a given size, unmounted on drop.
pub struct TinyDisk(TempDir);

impl TinyDisk {
    /// Mounts one of `size` (`mount`'s `size=`, e.g. `2m`); `None` where this
    /// process may not mount one (not root).
    #[must_use]
    pub fn mount(size: &str) -> Option<Self> {
        let dir = tempfile::tempdir().ok()?;
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        mounted.then_some(Self(dir))
    }

    #[must_use]
    pub fn path(&self) -> &Path {
        self.0.path()
    }

    /// Fills the disk to the last block with a ballast file.
    pub fn fill(&self) {
        let mut file = std::fs::File::create(self.ballast()).unwrap();
        let chunk = vec![0_u8; 4096];
        while file.write_all(&chunk).and_then(|()| file.sync_all()).is_ok() {}
    }

    /// Makes room again: removes the ballast.
    pub fn free(&self) {
        std::fs::remove_file(self.ballast()).unwrap();
    }

    fn ballast(&self) -> PathBuf {
        self.path().join("ballast")
    }
}

impl Drop for TinyDisk {
    fn drop(&mut self) {
        // Lazily: the store's connections may still hold its files.
        let _ = Command::new("umount").arg("-l").arg(self.path()).status();
    }
}
