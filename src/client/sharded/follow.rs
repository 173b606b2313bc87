//! Following the catalog: every surface of a client (routing, `map`, `resolve`, status) serves
//! a map another process activated within moments, not only after the next data call.
//!
//! A client opened from a catalog starts one background task that ends when the client does:
//!
//! - on a catalog in etcd, the task holds a watch of the map records (no polling) and, on each
//!   activation, applies the records the change wrote to the map it serves: the rest of the map
//!   is neither read nor parsed again. A watch that ends (etcd restarting, a member lost) is
//!   resumed from the revision after the last one seen; when that fails, or after a seed or a
//!   large change moved the records, the task reads the whole map once more with backoff. Until
//!   then the client keeps serving the last map it knows.
//! - on a master file, the task reads the active version (a cheap read) once per refresh
//!   interval and, when it changed, the records written since the version it serves.

use std::sync::Weak;
use std::time::Duration;

use tokio::sync::oneshot;

use super::Shared;
use crate::catalog::Catalog;
#[cfg(feature = "etcd")]
use crate::catalog::MapStep;

/// Ends the follower when dropped (with the client's last handle).
pub(super) struct FollowerStop(#[allow(dead_code)] oneshot::Sender<()>);

/// The longest pause between two attempts to re-open a watch.
#[cfg(feature = "etcd")]
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// Starts following `catalog` for the client whose state is `inner`; returns what stops it.
pub(super) fn start(catalog: &Catalog, inner: Weak<Shared>, interval: Duration) -> Option<FollowerStop> {
    // Without a runtime (never the case for an async open) there is nothing to run it on; the
    // version check on calls still notices new maps.
    let runtime = tokio::runtime::Handle::try_current().ok()?;
    let (stop, stopped) = oneshot::channel();
    if catalog.is_watched() {
        #[cfg(feature = "etcd")]
        runtime.spawn(watch(catalog.clone(), inner, stopped));
    } else {
        runtime.spawn(poll(inner, stopped, interval.max(Duration::from_millis(10))));
    }
    Some(FollowerStop(stop))
}

async fn poll(inner: Weak<Shared>, mut stopped: oneshot::Receiver<()>, interval: Duration) {
    loop {
        tokio::select! {
            _ = &mut stopped => return,
            () = tokio::time::sleep(interval) => {}
        }
        let Some(strong) = inner.upgrade() else {
            return;
        };
        let served = strong.generation().map.version();
        let changed = match &strong.catalog {
            Some(catalog) => matches!(catalog.active_version().await, Ok(Some(v)) if v != served),
            None => return,
        };
        if changed {
            strong.load_active().await;
        }
    }
}

#[cfg(feature = "etcd")]
async fn watch(catalog: Catalog, inner: Weak<Shared>, mut stopped: oneshot::Receiver<()>) {
    let mut backoff = Duration::from_millis(100);
    loop {
        let opened = tokio::select! {
            _ = &mut stopped => return,
            opened = catalog.watch_maps() => opened,
        };
        match opened {
            Ok((active, mut watch)) => {
                backoff = Duration::from_millis(100);
                // Changes made before the watch began (while disconnected) are read here.
                let Some(strong) = inner.upgrade() else {
                    return;
                };
                strong.install_whole(active).await;
                drop(strong);
                loop {
                    let changed = tokio::select! {
                        _ = &mut stopped => return,
                        changed = watch.changed() => changed,
                    };
                    let Some(strong) = inner.upgrade() else {
                        return;
                    };
                    match changed {
                        Ok(MapStep::Activated { version, changes }) => {
                            if !strong.follow_changes(version, &changes).await {
                                break;
                            }
                        }
                        // A seed or a large change: the whole map is read again at once.
                        Ok(MapStep::Reload) => break,
                        Err(err) => {
                            tracing::warn!(catalog = %catalog.location(), error = %err, "catalog watch ended; reconnecting");
                            break;
                        }
                    }
                }
                continue;
            }
            Err(err) => {
                tracing::debug!(catalog = %catalog.location(), error = %err, "catalog watch could not open; retrying");
            }
        }
        tokio::select! {
            _ = &mut stopped => return,
            () = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}
