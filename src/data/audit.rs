//! Who made a change and why: the pair every catalog change and data move carries into history;
//! and when, as the records say it ([`now_utc`]).

/// Who made a change and why, as the catalog history and the migration history record them.
///
/// Every request that changes the catalog or moves data carries one
/// ([`CatalogUpdateRequest`](super::CatalogUpdateRequest),
/// [`ActivationRequest`](super::ActivationRequest), [`ReshardRequest`](super::ReshardRequest)),
/// and so does what the histories keep ([`CatalogHistoryEntry`](super::CatalogHistoryEntry),
/// [`ReshardSpec`](super::ReshardSpec)). Both parts are optional: the history shows what
/// was given. In JSON (REST bodies, gRPC, stored records) they stay the top-level members
/// `operator` and `comment` of each body, as they always were.
///
/// ```
/// use shardlite::data::Audit;
///
/// let audit = Audit::by("ada").because("tenant 42 outgrew s0");
/// assert_eq!(audit.operator.as_deref(), Some("ada"));
/// assert_eq!(audit.comment.as_deref(), Some("tenant 42 outgrew s0"));
///
/// let anonymous = Audit::default().because("nightly rebalance");
/// assert_eq!(anonymous.operator, None);
/// assert!(Audit::default().is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Audit {
    /// Who makes the change (a person, a job, a tool).
    pub operator: Option<String>,
    /// Why.
    pub comment: Option<String>,
}

impl Audit {
    /// A change made by `operator`, with no comment yet (add one with [`because`](Self::because)).
    pub fn by(operator: impl Into<String>) -> Self {
        Self {
            operator: Some(operator.into()),
            comment: None,
        }
    }

    /// The same, with `comment` as the reason.
    #[must_use]
    pub fn because(mut self, comment: impl Into<String>) -> Self {
        self.comment = Some(comment.into());
        self
    }

    /// From the two optional parts, as command-line flags give them.
    pub fn new(operator: Option<String>, comment: Option<String>) -> Self {
        Self { operator, comment }
    }

    /// Whether neither part is given.
    pub fn is_empty(&self) -> bool {
        self.operator.is_none() && self.comment.is_none()
    }

    /// The same operator, with `comment` as the reason when none was given.
    pub(crate) fn or_because(mut self, comment: impl FnOnce() -> String) -> Self {
        if self.comment.is_none() {
            self.comment = Some(comment());
        }
        self
    }
}

/// The current time as the records write it: RFC 3339 in UTC (`2026-06-01T12:00:00.5Z`).
pub(crate) fn now_utc() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::Audit;

    #[test]
    fn the_builder_sets_each_part() {
        assert_eq!(
            Audit::by("ada"),
            Audit {
                operator: Some("ada".into()),
                comment: None
            }
        );
        assert_eq!(
            Audit::by("ada").because("why"),
            Audit::new(Some("ada".into()), Some("why".into()))
        );
        assert_eq!(Audit::default().because("why").operator, None);
        assert!(Audit::default().is_empty());
        assert!(!Audit::default().because("why").is_empty());
    }

    #[test]
    fn a_default_reason_fills_only_a_missing_comment() {
        let kept = Audit::by("ada").because("mine").or_because(|| "default".into());
        assert_eq!(kept.comment.as_deref(), Some("mine"));
        let filled = Audit::by("ada").or_because(|| "default".into());
        assert_eq!(filled, Audit::by("ada").because("default"));
    }
}
