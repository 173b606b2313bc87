//! Plans kept by their SQL text: an application sends the same few queries again and again, and
//! reading one with `sqlparser` and writing its statements costs more than a shard answering it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use super::{QueryPlan, Template, placeholders, read};
use crate::data::Params;
use crate::error::Result;

/// Texts kept at most; past it the least recently used is forgotten.
const CAPACITY: usize = 256;

/// Texts longer than this are read each time rather than kept, so the cache stays small.
const LONGEST_KEPT: usize = 8 * 1024;

/// A bounded cache of plans by SQL text, least recently used forgotten first.
///
/// What a text alone decides is kept: the checks and refusals, the shape of the plan and the
/// statements generated for the shards. Each call's values are still checked against the
/// text's placeholders. A text whose checks read a value (a date and time function given a
/// placeholder, which is refused for `'now'`) is read again on every call.
///
/// ```
/// use shardlite::client::Params;
/// use shardlite::query::PlanCache;
///
/// let plans = PlanCache::default();
/// let sql = "SELECT id FROM orders WHERE amount > ?1 ORDER BY id LIMIT 10";
/// plans.plan(sql, Params::from(vec![5])).expect("planned");
/// plans.plan(sql, Params::from(vec![7])).expect("planned again, from the cache");
/// assert!(plans.plan(sql, Params::none()).is_err(), "values are still checked");
/// assert_eq!(plans.len(), 1);
/// ```
#[derive(Default)]
pub struct PlanCache {
    entries: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    by_text: HashMap<Box<str>, (Arc<Template>, u64)>,
    /// Counts uses; an entry's count says when it was last used.
    clock: u64,
}

impl std::fmt::Debug for PlanCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlanCache").field("len", &self.len()).finish()
    }
}

impl PlanCache {
    /// [`plan`](super::plan), reading `sql` only when this cache does not hold it yet.
    pub fn plan(&self, sql: &str, params: Params) -> Result<QueryPlan> {
        if let Some(template) = self.get(sql) {
            placeholders::check_found(&template.placeholders, &params)?;
            return Ok(QueryPlan { template, params });
        }
        let (template, for_any_values) = read(sql, &params)?;
        let template = Arc::new(template);
        if for_any_values && sql.len() <= LONGEST_KEPT {
            self.insert(sql, Arc::clone(&template));
        }
        Ok(QueryPlan { template, params })
    }

    /// How many texts are kept.
    pub fn len(&self) -> usize {
        self.lock().by_text.len()
    }

    /// Whether no text is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn get(&self, sql: &str) -> Option<Arc<Template>> {
        let mut entries = self.lock();
        entries.clock += 1;
        let now = entries.clock;
        let (template, used) = entries.by_text.get_mut(sql)?;
        *used = now;
        Some(Arc::clone(template))
    }

    fn insert(&self, sql: &str, template: Arc<Template>) {
        let mut entries = self.lock();
        if entries.by_text.len() >= CAPACITY
            && !entries.by_text.contains_key(sql)
            && let Some(oldest) = entries
                .by_text
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(text, _)| text.clone())
        {
            entries.by_text.remove(&oldest);
        }
        entries.clock += 1;
        let now = entries.clock;
        entries.by_text.insert(sql.into(), (template, now));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_text_is_forgotten_first() {
        let plans = PlanCache::default();
        let text = |n: usize| format!("SELECT id FROM orders WHERE id > {n}");
        for n in 0..CAPACITY {
            plans.plan(&text(n), Params::none()).expect("planned");
        }
        plans.plan(&text(0), Params::none()).expect("used again");
        plans.plan(&text(CAPACITY), Params::none()).expect("one more");
        assert_eq!(plans.len(), CAPACITY);
        assert!(plans.get(&text(0)).is_some(), "the text used again is kept");
        assert!(plans.get(&text(1)).is_none(), "the least recently used is forgotten");
    }

    #[test]
    fn texts_whose_checks_read_values_are_not_kept() {
        let plans = PlanCache::default();
        let sql = "SELECT id FROM orders WHERE placed > date(?1)";
        plans.plan(sql, Params::from(vec!["2026-01-01"])).expect("a date");
        assert!(plans.plan(sql, Params::from(vec!["now"])).is_err(), "'now' is refused");
        assert!(plans.is_empty());
    }
}
