//! Where local shard files live, and which spellings name the same file.
//!
//! A relative `dataSource` is relative to the folder of the master catalog, not to the process's
//! working directory, so a master and its shards open the same way from anywhere (the daemon, a
//! script, a test) and move together. An absolute `dataSource` is used as it is. The functions
//! here are lexical: they never touch the file system, so they cannot see symbolic links; the
//! catalog compares canonical paths when the files exist.

use std::path::{Component, Path, PathBuf};

/// The file a shard's `dataSource` names for the master catalog at `master`: an absolute path as
/// it is (trimmed), a relative one joined to the master's folder.
///
/// A master given as a bare file name (`master.db`) is in the working directory, so its shards'
/// relative paths stay relative to it.
///
/// ```
/// use std::path::Path;
/// use shardlite::map::resolve_data_source;
///
/// let master = Path::new("/srv/orders/master.db");
/// assert_eq!(resolve_data_source(master, "shard-0.db"), Path::new("/srv/orders/shard-0.db"));
/// assert_eq!(resolve_data_source(master, "cold/2025.db"), Path::new("/srv/orders/cold/2025.db"));
/// assert_eq!(resolve_data_source(master, "/mnt/fast/s1.db"), Path::new("/mnt/fast/s1.db"));
/// assert_eq!(resolve_data_source(Path::new("master.db"), "s0.db"), Path::new("s0.db"));
/// ```
pub fn resolve_data_source(master: &Path, data_source: &str) -> PathBuf {
    let data_source = Path::new(data_source.trim());
    if data_source.is_absolute() {
        return data_source.to_path_buf();
    }
    master.parent().unwrap_or_else(|| Path::new("")).join(data_source)
}

/// The lexical normal form of a path, for comparing spellings: `.` components dropped, `dir/..`
/// folded (a leading `..` of a relative path is kept), repeated and trailing separators dropped.
/// Case is kept as given. `./a.db`, `a.db` and `x/../a.db` all become `a.db`.
///
/// ```
/// use std::path::Path;
/// use shardlite::map::normalize_path;
///
/// assert_eq!(normalize_path(Path::new("./data//x/../a.db")), Path::new("data/a.db"));
/// assert_eq!(normalize_path(Path::new("../a.db")), Path::new("../a.db"));
/// assert_eq!(normalize_path(Path::new("/srv/./a.db")), Path::new("/srv/a.db"));
/// assert_ne!(normalize_path(Path::new("A.db")), normalize_path(Path::new("a.db")));
/// ```
pub fn normalize_path(path: &Path) -> PathBuf {
    let mut parts: Vec<Component<'_>> = Vec::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => match parts.last() {
                Some(Component::Normal(_)) => {
                    parts.pop();
                }
                // `/..` is `/`.
                Some(Component::RootDir | Component::Prefix(_)) => {}
                Some(Component::ParentDir | Component::CurDir) | None => parts.push(component),
            },
            other => parts.push(other),
        }
    }
    parts.iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_of_one_relative_file_normalise_alike() {
        let same = ["a.db", "./a.db", " a.db ", "x/../a.db", "./x/./../a.db", ".//a.db"];
        for spelling in same {
            assert_eq!(
                normalize_path(Path::new(spelling.trim())),
                Path::new("a.db"),
                "{spelling:?}"
            );
        }
        assert_eq!(normalize_path(Path::new("../../a.db")), Path::new("../../a.db"));
        assert_eq!(normalize_path(Path::new("x/../../a.db")), Path::new("../a.db"));
        assert_eq!(normalize_path(Path::new("/../a.db")), Path::new("/a.db"));
        assert_eq!(normalize_path(Path::new("data/")), Path::new("data"));
    }

    #[test]
    fn relative_sources_join_the_masters_folder_and_absolute_ones_stay() {
        let master = Path::new("/srv/m/master.db");
        assert_eq!(resolve_data_source(master, " s0.db "), Path::new("/srv/m/s0.db"));
        assert_eq!(resolve_data_source(master, "../s0.db"), Path::new("/srv/m/../s0.db"));
        assert_eq!(resolve_data_source(master, "/abs/s0.db"), Path::new("/abs/s0.db"));
        assert_eq!(
            resolve_data_source(Path::new("rel/master.db"), "s0.db"),
            Path::new("rel/s0.db")
        );
        assert_eq!(resolve_data_source(Path::new("master.db"), "s0.db"), Path::new("s0.db"));
    }
}
