//! The data-move half of the engine: what a move between shards runs inside one SQLite file.
//!
//! - `copy` (`copy/moves.rs` holds `Moves`): a data move's page copies, copy cursors and page
//!   checksums on the file (`Database::moves`), and what those jobs read and write.
//! - `checksum`: the canonical row encoding the page checksums hash.
//! - `capture`: the change-capture triggers that record writes to moving rows.
//! - `moving`: which rows a move moves, one type for capture, fences and the runner.
//! - `fence`: the route fences that keep writers away from moving rows, and `fence_upkeep` the
//!   periodic tidying of expired fences and moved-row records.

pub(crate) mod capture;
pub(crate) mod checksum;
pub(crate) mod copy;
pub(crate) mod fence;
pub(super) mod fence_upkeep;
pub(crate) mod moving;
