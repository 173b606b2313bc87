//! Verified data migrations: move the data of one route key, or of a bucket range, to another
//! primary shard while the application keeps writing.
//!
//! Phases: validate → fence → drain → copy → verify → write the pending map → activate (if
//! asked) → delete the source rows (if asked, only once the new map is active) → history.
//!
//! - **Fence** ([`fences_on`], `fence.rs`): persisted in the source shard's file as rows and
//!   triggers, so every process that writes to the shard refuses writes of the moving rows with
//!   [`route_fenced`](crate::ErrorKind::RouteFenced) (retryable); reads go on. Installing it is a
//!   write transaction, so it waits for writes already under way (the drain) and orders every
//!   later write after it. After activation the fence stays as a `moved` record: a writer still
//!   holding the old map is refused instead of writing where nobody reads.
//! - **Copy** reads moving rows in primary-key order a page at a time and upserts each page on
//!   the destination in one statement (one transaction), then checkpoints the page in the master
//!   catalog (last key, counts, running checksum). Memory holds one page.
//! - **Verify** counts and checksums the moving rows on the destination and compares them with
//!   the source's, per table and collection (the receipts).
//! - **Resume** ([`Migrator::resume`]) continues a stopped migration from its checkpoint; it
//!   is idempotent.
//!
//! Source and destination are reached through [`DataClient`](crate::data::DataClient), so
//! either may be a remote daemon.

mod fence;
mod manifest;
mod run;
mod target;

pub use fence::fences_on;
pub use manifest::{DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE};
pub use run::{CopyProgress, Migrator};
