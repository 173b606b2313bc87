//! Resharding: verified moves of the data of one route key, or of a bucket range, to another
//! primary shard while the application keeps writing.
//!
//! Resharding is what the seed's wire and command line call a *migration*: the REST paths
//! (`/api/sharding/migrations/...`), the gRPC methods (`MigrateExactRouteKey`, ...), the
//! `shardlite migrate` command and the JSON bodies keep that name. Schema migrations (sqlx
//! migration folders applied to every shard) are [`schema`](crate::schema)'s.
//!
//! Phases, online (the default): validate → capture → copy while writes go on → catch up
//! (replay captured changes until the remaining delta is small) → verify against a snapshot →
//! cutover (fence, drain, last delta, compare what changed since, write the pending map,
//! activate if asked) → delete the source rows (if asked) → history. Offline (fenced for the
//! whole copy): validate → fence → drain → copy → verify → write the pending map → activate (if
//! asked) → delete the source rows (if asked, only once the new map is active) → history.
//!
//! - **Capture** (`capture.rs`, SQL in `engine::reshard::capture`): triggers in the source shard's file
//!   record the primary key of every moving row any process inserts, updates or deletes, in an
//!   internal change table. Replay writes each captured row back as the source holds it (or
//!   deletes it on the destination when it no longer moves): idempotent, so the replay position
//!   checkpointed in the catalog is a safe place to resume from. Installed in one write
//!   transaction before the first page is copied; removed (triggers, changes, and the table once
//!   empty) when the migration ends or is abandoned. Verification compares the destination with
//!   a consistent read snapshot of the source before the cutover, and only the rows changed
//!   since inside it (`run/settle.rs`), so the cutover stays short.
//!
//! - **Fence** ([`fences_on`], `fence.rs`): persisted in the source shard's file as rows and
//!   triggers, so every process that writes to the shard refuses writes of the moving rows with
//!   [`route_fenced`](crate::ErrorKind::RouteFenced) (retryable); reads go on. Installing it is a
//!   write transaction, so it waits for writes already under way (the drain) and orders every
//!   later write after it. After activation the fence stays as a `moved` record: a writer still
//!   holding the old map is refused instead of writing where nobody reads.
//! - **Copy** reads moving rows in primary-key order a page at a time and upserts each page
//!   on the destination in one transaction, checkpointing in the master catalog (last key,
//!   counts, running checksum). A destination row with the same key but another route value is
//!   never overwritten; verification reports it.
//!   - When both shards are files of this process, the copy runs inside SQLite
//!     (`engine::reshard::copy`): a reader of the source hashes each page while
//!     the destination's writer, with the source attached for that job only, copies the page
//!     before by `INSERT ... SELECT`. No row becomes a value. The page's transaction also
//!     records the copy's cursor in the destination's internal `_shardlite_copy_cursors`, so
//!     the destination always knows exactly which pages it holds. The copy does not wait for
//!     the catalog: the newest page's cursor is checkpointed there every few tens of
//!     milliseconds and when a job ends, for progress.
//!   - Otherwise (a remote daemon on either side) pages are read as values through
//!     [`DataClient`](crate::data::DataClient) and upserted with a multi-row statement,
//!     checkpointing each page before the next is written.
//!
//!   Memory holds a page or two whatever the row count. A page committed on the destination
//!   but not yet checkpointed when a run stops is not copied again on resume: the local copy
//!   goes on from the destination's record, the copy through clients compares the first page
//!   after the checkpoint with what the destination holds. A migration's records are removed
//!   once it no longer copies (every item copied, or abandoned).
//! - **Verify** counts and checksums the moving rows on the destination (inside SQLite for a
//!   local destination) and compares them with the source's, per table and collection (the
//!   receipts). Both ways of reading hash the same canonical encoding
//!   (`engine::reshard::checksum`), so local and remote checksums agree.
//! - **Resume** ([`Resharder::resume`]) continues a stopped migration from its checkpoint
//!   without copying a finished page again; it is idempotent.
//!
//! Source and destination are reached through [`DataClient`](crate::data::DataClient), so
//! either may be a remote daemon; local files additionally through their engine, for the copy.
//!
//! Client SQL may not write shardlite's internal tables (`_shardlite_*`) nor create or drop
//! their triggers. A migration does both (fence rows and triggers, a collection's documents, the
//! deletion of moved documents), so it does them inside *maintenance* transactions
//! ([`TransactionOptions::maintenance`](crate::data::TransactionOptions::maintenance)), which
//! the data interface carries in-process, over REST (`POST /api/transactions?maintenance=true`)
//! and over gRPC (`BeginTransactionRequest.maintenance`). Only such a transaction's own
//! top-level statements may write the internal tables, never a trigger; the engine's local copy
//! writes them as the engine's own statements. Asking for maintenance is an operator capability,
//! which SPEC section 17's scoped API keys reserve for `admin` keys.

mod capture;
mod fence;
mod item_sql;
mod manifest;
mod run;

pub use fence::fences_on;
pub use manifest::{DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE};
pub use run::{CopyProgress, Resharder};
