//! Following the catalog: every surface of a client (routing, `map`, `resolve`, status) serves
//! a map another process activated within moments, not only after the next data call.
//!
//! A client opened from a catalog starts one background task that ends when the client does:
//!
//! - on a catalog in etcd, the task holds a watch of the map records and loads the active map on
//!   every change: no polling. When the watch ends (etcd restarting, a member lost), it opens a
//!   new one with backoff and reads the catalog once more, so a map activated meanwhile is
//!   picked up. Until then the client keeps serving the last map it knows.
//! - on a master file, the task reads the active version (a cheap read) once per refresh
//!   interval and loads the map when it changed.

use std::sync::Weak;
use std::time::Duration;

use tokio::sync::oneshot;

use super::Shared;
use crate::catalog::Catalog;

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

/// Loads the catalog's active map into the client, if it still exists. `false` once it is gone.
#[cfg(feature = "etcd")]
async fn reload(inner: &Weak<Shared>) -> bool {
    let Some(inner) = inner.upgrade() else {
        return false;
    };
    inner.load_active().await;
    true
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
            Ok(mut watch) => {
                backoff = Duration::from_millis(100);
                // Changes made before the watch began (while disconnected) are read here.
                if !reload(&inner).await {
                    return;
                }
                loop {
                    let changed = tokio::select! {
                        _ = &mut stopped => return,
                        changed = watch.changed() => changed,
                    };
                    match changed {
                        Ok(()) if reload(&inner).await => {}
                        Ok(()) => return,
                        Err(err) => {
                            tracing::warn!(catalog = %catalog.location(), error = %err, "catalog watch ended; reconnecting");
                            break;
                        }
                    }
                }
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
