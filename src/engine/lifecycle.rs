//! A database file's life: closed until first used, open while used, closed again when idle or
//! when the [set of open files](super::shelf) needs its place.
//!
//! Open, a file holds a writer connection, its reader connections and the pools of connections
//! callers borrow ([`Open`]); closed, it holds none of them, and no thread and no descriptor.
//! Opening is serialised per file; a file is only closed when nothing uses it: no call holds
//! its open state, no transaction is open, no dedicated connection, copy or fence installation
//! has [pinned](Shared::pin) it. A data file that opens holding atomic-transaction state is
//! reported to its configuration's [`atomic_open_hook`](EngineConfig::atomic_open_hook).
//!
//! [`Shared`] is what every [`Database`](super::Database) handle of one file holds: its path,
//! label and settings, its open state, and its [session table](SessionTable).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use arc_swap::ArcSwapOption;
use rusqlite::Connection;
use tokio::sync::oneshot;

use super::config::EngineConfig;
use super::hold::Hold;
use super::identity::FileIdentity;
use super::inline::Borrowed;
use super::lane::Lane;
use super::open::{Role, open_reader, open_writer};
use super::reshard::fence_upkeep::Upkeep;
use super::session::SessionTable;
use super::shelf::{self, TICK};
use super::sqlite_error::storage_failure;
use super::workers::workers;
use crate::error::{Error, Result};

/// What every handle of one file shares, open or closed.
pub(super) struct Shared {
    pub(super) path: PathBuf,
    pub(super) label: String,
    pub(super) config: EngineConfig,
    pub(super) role: Role,
    open: ArcSwapOption<Open>,
    /// Held while the file opens or closes.
    opening: Mutex<()>,
    /// Whether the file was opened once: later opens never create it (a shard file deleted
    /// while closed is reported, not silently replaced by an empty one).
    opened_once: AtomicBool,
    /// The sweeper tick of the last use.
    last_used: AtomicU64,
    /// Dedicated connections, copies and fence installations in progress.
    pins: AtomicUsize,
    /// The file's open transactions and the ended ones still remembered.
    pub(super) sessions: SessionTable,
    /// Whether the file may hold atomic-transaction state: its tables were there when it
    /// opened, or a prepare or decision was written since. Background recovery visits only
    /// such files, so a file without any costs it nothing.
    pub(super) atomic_state: AtomicBool,
    /// Decided records this file holds whose participants have all finished, to be deleted by
    /// the file's next atomic decision write (or by the resolver).
    pub(super) atomic_forget: Mutex<Vec<String>>,
}

/// An open file's connections.
pub(super) struct Open {
    /// The file the writer opened: writes stop if the path comes to name another (or none).
    pub(super) identity: Option<FileIdentity>,
    pub(super) writer: Arc<Lane>,
    /// The writer's connection: its lane runs queued jobs on it, and blocking callers run
    /// their writes on it on their own thread; the lock serialises the two.
    pub(super) writer_conn: Arc<Mutex<Connection>>,
    pub(super) readers: Arc<Lane>,
    /// Read-only connections that async callers borrow to run a short query on their own task.
    pub(super) inline_readers: Borrowed,
    /// The read transaction kept open while async callers' inline reads overlap.
    pub(super) inline_hold: Arc<Hold>,
    /// Read-only connections that blocking callers borrow to run queries on their own thread.
    pub(super) blocking_readers: Borrowed,
    upkeep: Option<Arc<Mutex<Upkeep>>>,
    /// Whether the file held an intent or a decision record when it opened (only read for a
    /// data file whose configuration has an [`atomic_open_hook`](EngineConfig::atomic_open_hook)).
    held_atomic_state: bool,
    /// Whether a checkpoint is queued on the writer's lane (see [`Open::queue_checkpoint`]).
    checkpoint_queued: Arc<AtomicBool>,
}

impl Open {
    fn new(shared: &Shared, create: bool) -> Result<Self> {
        let config = &shared.config;
        let writer = open_writer(&shared.path, config, shared.role, create)?;
        let has_tables = super::atomic::has_state(&writer);
        if has_tables {
            shared.atomic_state.store(true, std::sync::atomic::Ordering::Release);
        }
        let held_atomic_state = has_tables
            && shared.role == Role::Data
            && config.atomic_open_hook.is_some()
            && super::atomic::holds_records(&writer);
        let writer_conn = Arc::new(Mutex::new(writer));
        let readers = (0..config.readers.max(1))
            .map(|_| open_reader(&shared.path, config))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            identity: FileIdentity::of(&shared.path),
            writer: Lane::writer(Arc::clone(&writer_conn), config.max_queued_jobs),
            writer_conn,
            readers: Lane::readers(readers, config.max_queued_jobs),
            inline_readers: Borrowed::new(std::time::Duration::ZERO),
            inline_hold: Arc::default(),
            blocking_readers: Borrowed::new(config.busy_timeout),
            upkeep: (shared.role == Role::Data)
                .then(|| Arc::new(Mutex::new(Upkeep::new(config.moved_record_grace, config.busy_timeout)))),
            held_atomic_state,
            checkpoint_queued: Arc::default(),
        })
    }

    /// Queues a passive checkpoint on the writer's thread, for a write that ran on its caller's
    /// task and grew the WAL past its size (see [`checkpoint`](super::checkpoint)). One at a
    /// time; a full queue skips it, and the next such write asks again.
    pub(super) fn queue_checkpoint(&self) {
        if self.checkpoint_queued.swap(true, Ordering::AcqRel) {
            return;
        }
        let queued = Arc::clone(&self.checkpoint_queued);
        let job = Box::new(move |conn: &mut Connection| {
            queued.store(false, Ordering::Release);
            super::checkpoint::run(conn);
        });
        if self.writer.submit(job).is_err() {
            self.checkpoint_queued.store(false, Ordering::Release);
        }
    }

    /// Fails when the path no longer names the file the writer opened (see [`FileIdentity`]).
    pub(super) fn check_file(&self, shared: &Shared) -> Result<()> {
        FileIdentity::check(self.identity, &shared.path, &shared.label)
    }
}

impl Shared {
    pub(super) fn new(path: PathBuf, label: String, config: EngineConfig, role: Role) -> Self {
        workers().allow(config.worker_threads);
        Self {
            sessions: SessionTable::new(config.max_open_transactions),
            path,
            label,
            config,
            role,
            open: ArcSwapOption::empty(),
            opening: Mutex::new(()),
            opened_once: AtomicBool::new(false),
            last_used: AtomicU64::new(0),
            pins: AtomicUsize::new(0),
            atomic_state: AtomicBool::new(false),
            atomic_forget: Mutex::new(Vec::new()),
        }
    }

    /// The sweeper tick of the last use.
    pub(super) fn last_used(&self) -> u64 {
        self.last_used.load(Ordering::Relaxed)
    }

    fn touch(&self) {
        let now = shelf::now();
        if self.last_used.load(Ordering::Relaxed) != now {
            self.last_used.store(now, Ordering::Relaxed);
        }
    }

    /// Whether something that must not be closed under it uses the file (a call in flight is
    /// only seen for sure when closing, see [`close_if_idle`](Self::close_if_idle)).
    pub(super) fn is_busy(&self) -> bool {
        self.pins.load(Ordering::Relaxed) > 0 || self.sessions.open_transactions() > 0
    }

    /// Closes the file when nothing uses it; whether it closed. Never waits: a file being
    /// opened or closed by another caller stays as it is.
    pub(super) fn close_if_idle(&self) -> bool {
        let Ok(_opening) = self.opening.try_lock() else {
            return false;
        };
        let Some(open) = self.open.swap(None) else {
            return false;
        };
        // Replacing the value accounts for every reader's loan, so the count is exact here.
        if Arc::strong_count(&open) > 1 || self.is_busy() {
            self.open.store(Some(open));
            return false;
        }
        self.config.open_shards.forget(self);
        drop(open);
        tracing::debug!(shard = %self.label, "closed an idle shard file");
        true
    }

    /// The sweeper's visit: closes the file when idle past its timeout, or else runs its fence
    /// upkeep on the writer when due.
    pub(super) fn sweep(&self, tick: u64) {
        if let Some(idle) = self.config.shard_idle_timeout {
            let ticks = u64::try_from(idle.as_millis() / TICK.as_millis())
                .unwrap_or(u64::MAX)
                .max(1);
            if tick.saturating_sub(self.last_used()) >= ticks && self.close_if_idle() {
                return;
            }
        }
        let Some(open) = self.open.load_full() else {
            return;
        };
        let Some(upkeep) = open.upkeep.as_ref().filter(|upkeep| is_due(upkeep)) else {
            return;
        };
        let upkeep = Arc::clone(upkeep);
        let label = self.label.clone();
        // A full queue skips this visit; the next tick tries again.
        let _ = open.writer.submit(Box::new(move |conn: &mut Connection| {
            upkeep
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .run_if_due(conn, &label);
        }));
    }
}

fn is_due(upkeep: &Mutex<Upkeep>) -> bool {
    upkeep.lock().unwrap_or_else(PoisonError::into_inner).next() <= std::time::Instant::now()
}

/// A file's open state, lent to one call.
pub(super) enum Opened {
    Lent(arc_swap::Guard<Option<Arc<Open>>>),
    Owned(Arc<Open>),
}

impl std::ops::Deref for Opened {
    type Target = Open;

    fn deref(&self) -> &Open {
        match self {
            // Only lent when it held an open file.
            Self::Lent(guard) => guard.as_deref().unwrap_or_else(|| unreachable!("lent only when open")),
            Self::Owned(open) => open,
        }
    }
}

impl Shared {
    /// The error of a call that found the file closed under it (its thread or worker gone).
    pub(super) fn closed(&self) -> Error {
        Error::Closed {
            shard_id: self.label.clone(),
        }
    }

    /// The file's open state, opening it on this thread if it is closed.
    pub(super) fn opened(self: &Arc<Self>) -> Result<Opened> {
        let lent = self.open.load();
        if lent.is_some() {
            self.touch();
            return Ok(Opened::Lent(lent));
        }
        drop(lent);
        self.open_here().map(Opened::Owned)
    }

    /// The file's open state when it is open now (a use); `None` when closed.
    pub(super) fn opened_if_open(&self) -> Option<Opened> {
        let lent = self.open.load();
        lent.is_some().then(|| {
            self.touch();
            Opened::Lent(lent)
        })
    }

    /// The file's open state for an async caller: a closed file opens on a worker thread.
    pub(super) async fn opened_async(self: &Arc<Self>) -> Result<Arc<Open>> {
        if let Some(open) = self.open.load_full() {
            self.touch();
            return Ok(open);
        }
        let (tx, rx) = oneshot::channel();
        let shared = Arc::clone(self);
        workers().spawn(Box::new(move || {
            let _ = tx.send(shared.open_here());
        }));
        rx.await.map_err(|_| self.closed())?
    }

    /// Opens the file on this thread, in a place of its set of open files.
    fn open_here(self: &Arc<Self>) -> Result<Arc<Open>> {
        let _opening = self.opening.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(open) = self.open.load_full() {
            self.touch();
            return Ok(open);
        }
        let place = match self.role {
            Role::Data => Some(self.config.open_shards.admit(
                self,
                self.config.max_open_shards,
                self.config.busy_timeout,
            )?),
            Role::Catalog => None,
        };
        let create = !self.opened_once.load(Ordering::Relaxed);
        if create {
            create_parent(&self.path, &self.label)?;
        }
        let open = Arc::new(Open::new(self, create).map_err(|err| storage_failure(&self.label, err))?);
        self.open.store(Some(Arc::clone(&open)));
        self.opened_once.store(true, Ordering::Relaxed);
        self.touch();
        if let Some(place) = place {
            place.fill(self);
        }
        if open.held_atomic_state
            && let Some(hook) = &self.config.atomic_open_hook
        {
            (hook.0)(&self.label);
        }
        Ok(open)
    }

    /// Whether the file is open now (it opens on its next use otherwise).
    pub(super) fn is_open(&self) -> bool {
        self.open.load().is_some()
    }

    /// Keeps the file open until the pin drops: for work that spans calls (a copy, a fence
    /// being installed, a dedicated connection).
    pub(super) fn pin(self: &Arc<Self>) -> Pin {
        self.pins.fetch_add(1, Ordering::Relaxed);
        Pin(Arc::clone(self))
    }

    /// Jobs queued on the writer and on the readers, for metrics; 0 when closed.
    pub(super) fn queued_jobs(&self) -> usize {
        self.open
            .load()
            .as_ref()
            .map_or(0, |open| open.writer.queued() + open.readers.queued())
    }
}

/// Keeps a file open while it lives (see [`Shared::pin`]).
pub(crate) struct Pin(Arc<Shared>);

impl std::fmt::Debug for Pin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Pin").field(&self.0.label).finish()
    }
}

impl Drop for Pin {
    fn drop(&mut self) {
        self.0.pins.fetch_sub(1, Ordering::Relaxed);
    }
}

fn create_parent(path: &Path, label: &str) -> Result<()> {
    match path.parent().filter(|parent| !parent.as_os_str().is_empty()) {
        Some(parent) => std::fs::create_dir_all(parent).map_err(|source| Error::Io {
            what: format!("the folder of database '{label}'"),
            source,
        }),
        None => Ok(()),
    }
}
