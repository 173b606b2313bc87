//! The phase a data move reached: a typed value whose text is what the wire and the catalog
//! have always held (`"validated"`, `"catching-up"`, `"copying table 'orders'"`, ...).

use std::fmt;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize, Serializer};

/// The last phase a migration reached, stored with its state and shown by status.
///
/// Its JSON is a string: the phase's name, and for [`Copying`](Self::Copying) the item being
/// copied after it.
///
/// ```
/// use shardlite::data::ReshardPhase;
///
/// let phase: ReshardPhase = serde_json::from_str(r#""copying table 'orders'""#)?;
/// assert_eq!(phase, ReshardPhase::Copying { item: "table 'orders'".into() });
/// assert_eq!(serde_json::to_string(&ReshardPhase::CatchingUp)?, r#""catching-up""#);
/// assert_eq!(ReshardPhase::PendingMapWritten.to_string(), "pending-map-written");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReshardPhase {
    /// The request passed its checks (`validated`).
    Validated,
    /// A dry run planned it (`planned`).
    Planned,
    /// Refused before anything changed (`rejected`).
    Rejected,
    /// The moving rows are fenced on the source (`fenced`, offline moves).
    Fenced,
    /// Change capture is installed on the source (`capturing`, online moves).
    Capturing,
    /// Copying `item` (`copying table 'orders'`; plain `copying` when no item is named).
    Copying {
        /// The table or collection being copied, as messages name it (`table 'orders'`), or
        /// empty.
        item: String,
    },
    /// Replaying captured changes on the destination (`catching-up`, online moves).
    CatchingUp,
    /// Comparing the destination with a snapshot of the source (`verifying`, online moves).
    Verifying,
    /// The moving rows are fenced for the last delta (`cutover`, online moves).
    Cutover,
    /// Every item verified (`verified`).
    Verified,
    /// The new map was written as the pending map (`pending-map-written`).
    PendingMapWritten,
    /// The new map is active (`activated`).
    Activated,
    /// The moved rows were deleted from the source (`source-deleted`).
    SourceDeleted,
    /// The destination did not verify (`verification-failed`).
    VerificationFailed,
    /// The pending map could not be written (`catalog-apply-failed`).
    CatalogApplyFailed,
    /// Stopped by an error (`failed`).
    Failed,
    /// Given up by the operator (`abandoned`).
    Abandoned,
}

/// The phases without an item, each with its text.
const NAMED: [(ReshardPhase, &str); 16] = [
    (ReshardPhase::Validated, "validated"),
    (ReshardPhase::Planned, "planned"),
    (ReshardPhase::Rejected, "rejected"),
    (ReshardPhase::Fenced, "fenced"),
    (ReshardPhase::Capturing, "capturing"),
    (ReshardPhase::CatchingUp, "catching-up"),
    (ReshardPhase::Verifying, "verifying"),
    (ReshardPhase::Cutover, "cutover"),
    (ReshardPhase::Verified, "verified"),
    (ReshardPhase::PendingMapWritten, "pending-map-written"),
    (ReshardPhase::Activated, "activated"),
    (ReshardPhase::SourceDeleted, "source-deleted"),
    (ReshardPhase::VerificationFailed, "verification-failed"),
    (ReshardPhase::CatalogApplyFailed, "catalog-apply-failed"),
    (ReshardPhase::Failed, "failed"),
    (ReshardPhase::Abandoned, "abandoned"),
];

/// The name of [`ReshardPhase::Copying`], before its item.
const COPYING: &str = "copying";

impl ReshardPhase {
    /// The copy of `item` (as messages name it: `table 'orders'`).
    pub fn copying(item: impl Into<String>) -> Self {
        Self::Copying { item: item.into() }
    }

    /// The phase's name without its item: `copying` for every copy.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Copying { .. } => COPYING,
            other => NAMED
                .iter()
                .find(|(phase, _)| phase == other)
                .map_or(COPYING, |(_, name)| *name),
        }
    }

    /// Whether this is the copy of some item.
    pub fn is_copying(&self) -> bool {
        matches!(self, Self::Copying { .. })
    }

    /// The phase `text` names; `None` when it names none.
    pub fn parse(text: &str) -> Option<Self> {
        if let Some(rest) = text.strip_prefix(COPYING) {
            return match rest.strip_prefix(' ') {
                Some(item) => Some(Self::copying(item)),
                None if rest.is_empty() => Some(Self::copying("")),
                None => None,
            };
        }
        NAMED
            .iter()
            .find(|(_, name)| *name == text)
            .map(|(phase, _)| phase.clone())
    }
}

impl fmt::Display for ReshardPhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Copying { item } if !item.is_empty() => write!(f, "{COPYING} {item}"),
            other => f.write_str(other.name()),
        }
    }
}

impl Serialize for ReshardPhase {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ReshardPhase {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).ok_or_else(|| de::Error::custom(format!("unknown data-move phase '{text}'")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every phase beside the text the wire and the catalog have always held for it.
    fn every_phase() -> Vec<(ReshardPhase, &'static str)> {
        vec![
            (ReshardPhase::Validated, "validated"),
            (ReshardPhase::Planned, "planned"),
            (ReshardPhase::Rejected, "rejected"),
            (ReshardPhase::Fenced, "fenced"),
            (ReshardPhase::Capturing, "capturing"),
            (ReshardPhase::copying("table 'orders'"), "copying table 'orders'"),
            (
                ReshardPhase::copying("collection 'pro files'"),
                "copying collection 'pro files'",
            ),
            (ReshardPhase::copying(""), "copying"),
            (ReshardPhase::CatchingUp, "catching-up"),
            (ReshardPhase::Verifying, "verifying"),
            (ReshardPhase::Cutover, "cutover"),
            (ReshardPhase::Verified, "verified"),
            (ReshardPhase::PendingMapWritten, "pending-map-written"),
            (ReshardPhase::Activated, "activated"),
            (ReshardPhase::SourceDeleted, "source-deleted"),
            (ReshardPhase::VerificationFailed, "verification-failed"),
            (ReshardPhase::CatalogApplyFailed, "catalog-apply-failed"),
            (ReshardPhase::Failed, "failed"),
            (ReshardPhase::Abandoned, "abandoned"),
        ]
    }

    #[test]
    fn every_phase_keeps_its_stored_and_wire_text() {
        let phases = every_phase();
        // Every variant is named once above (the copy thrice, with and without an item).
        assert_eq!(phases.len(), NAMED.len() + 3);
        for (phase, text) in phases {
            let json = serde_json::to_string(&phase).expect("serialise");
            assert_eq!(json, format!("\"{text}\""), "{phase:?}");
            assert_eq!(phase.to_string(), text);
            let back: ReshardPhase = serde_json::from_str(&json).expect("deserialise");
            assert_eq!(back, phase, "{text}");
            assert_eq!(ReshardPhase::parse(text), Some(phase.clone()));
            assert!(text.starts_with(phase.name()));
        }
    }

    #[test]
    fn unknown_text_is_refused() {
        for text in ["", "Validated", "copyingtable", "catching_up", "fenced "] {
            assert_eq!(ReshardPhase::parse(text), None, "{text}");
            assert!(serde_json::from_str::<ReshardPhase>(&format!("\"{text}\"")).is_err());
        }
    }
}
