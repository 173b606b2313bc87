//! Backup sets of a whole keyspace, consistent across shards, and their restore.
//!
//! A **backup place** is a folder holding sets side by side:
//!
//! ```text
//! PLACE/objects/ab/abcd…     each file once, named by the SHA-256 of its content
//! PLACE/sets/ID.json         one manifest per complete set (written last, atomically)
//! PLACE/incoming/            copies being written, before they have a name
//! ```
//!
//! [`create_backup`] takes a set: inside short fences (see [`engine::cut`](crate::engine::cut))
//! in which no map activation and no atomic-commit decision happens in this process, it exports
//! the catalog at one map version and, for each shard file, either begins a read snapshot or,
//! when the file's [`FileStamp`] equals the one the newest set recorded, references that set's
//! copy. The copies are then taken from the snapshots with SQLite's online backup API while the
//! shards go on serving, stored by content, and the manifest is published. The shards go through
//! the cut in batches of at most [`SNAPSHOTS_PER_FENCE`] snapshots, with no activation and no
//! decision between the first batch and the last, so a set holds a bounded number of
//! descriptors whatever the number of shards. A process killed
//! while it takes a set leaves no manifest, so [`list_sets`] never shows half a set.
//!
//! [`verify_backup`] checks every file of a set and [`restore_backup`] writes it into an empty
//! folder as shard files and a master, then runs atomic recovery.

mod batches;
mod create;
mod manifest;
mod objects;
mod point_in_time;
mod restore;
mod stamp;

pub use batches::SNAPSHOTS_PER_FENCE;
pub use create::{BackupStep, create_backup};
pub use manifest::{
    BackupManifest, BackupSetSummary, MANIFEST_FORMAT, ShardCopy, StoredFile, last_published, list_sets,
};
pub use point_in_time::{parse_moment, restore_backup_as_at, restore_backup_as_at_into};
pub use restore::{
    RestoreTarget, RestoredSet, VerifiedSet, locate_set, restore_backup, restore_backup_into, verify_backup,
};
pub use stamp::FileStamp;
