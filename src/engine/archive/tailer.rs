//! One archived file's state (its generation's log, where its WAL was last read, the
//! archive's own connections while it is written) and the thread that reads the written files'
//! WALs into the archive, which runs only while some file is being written.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::wal::{WalPosition, read_committed};
use super::{Archive, ArchivedFile, CHECKPOINT_FRAMES, QUIET_AFTER, READ_EVERY, log, now_ms};

/// One file the archive knows.
pub(crate) struct Archived {
    pub(super) path: PathBuf,
    folder: PathBuf,
    pub(super) catalog: bool,
    state: Mutex<State>,
    /// Whether `state.engaged` is set: a commit on an engaged file never takes the lock, so it
    /// never waits for the archive's reads.
    engaged: AtomicBool,
    last_commit_ms: AtomicU64,
    /// When the oldest commit not yet read was seen (0: none).
    first_unread_ms: AtomicU64,
}

#[derive(Default)]
struct State {
    /// The generation's log, once one began in this process.
    generation: Option<PathBuf>,
    /// The log, open while the file is engaged.
    log: Option<std::fs::File>,
    position: WalPosition,
    page_size: u32,
    engaged: Option<Engaged>,
}

/// The archive's connections to a file being written: `pin` holds a read snapshot while a
/// checkpoint runs on `checkpointer`, so the WAL cannot restart over frames not yet read; both
/// keep the file's WAL from being folded and deleted when the engine closes the file.
struct Engaged {
    pin: Connection,
    checkpointer: Connection,
}

fn io_to_sqlite(err: std::io::Error) -> rusqlite::Error {
    rusqlite::Error::ToSqlConversionFailure(Box::new(err))
}

fn open(path: &Path, flags: OpenFlags) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(path, flags | OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
    conn.busy_timeout(Duration::from_millis(200))?;
    // A first read: a connection in WAL mode holds its shared lock on the file from then on.
    conn.query_row("SELECT count(*) FROM sqlite_schema", [], |_| Ok(()))?;
    Ok(conn)
}

impl Archived {
    pub(super) fn new(dir: &Path, path: PathBuf, catalog: bool) -> Self {
        use sha2::Digest as _;
        let digest = sha2::Sha256::digest(path.to_string_lossy().as_bytes());
        let key: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        Self {
            folder: dir.join("files").join(key),
            path,
            catalog,
            state: Mutex::new(State::default()),
            engaged: AtomicBool::new(false),
            last_commit_ms: AtomicU64::new(0),
            first_unread_ms: AtomicU64::new(0),
        }
    }

    /// Writes `file.json`, what the archive knows of the file: a master catalog is described
    /// when it opens, so a restore knows where its shard paths are relative to.
    pub(super) fn describe(&self) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.folder)?;
        let meta = ArchivedFile {
            path: self.path.to_string_lossy().into_owned(),
            catalog: self.catalog,
        };
        std::fs::write(self.folder.join("file.json"), serde_json::to_vec(&meta)?)
    }

    /// How long the oldest commit not yet archived has waited, while the file is engaged.
    pub(super) fn lag(&self) -> Option<Duration> {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.engaged.as_ref()?;
        let first = self.first_unread_ms.load(Ordering::Acquire);
        Some(match first {
            0 => Duration::ZERO,
            at => Duration::from_millis(now_ms().saturating_sub(at)),
        })
    }

    /// Called by the commit hook of every read-write connection to the file, before the
    /// transaction's frames are written.
    pub(super) fn committed(self: &Arc<Self>, archive: &Arc<Archive>) {
        let now = now_ms();
        self.last_commit_ms.store(now, Ordering::SeqCst);
        let _ = self
            .first_unread_ms
            .compare_exchange(0, now, Ordering::AcqRel, Ordering::Acquire);
        // Seen engaged after the commit time was stored: the tick letting go of the file sees
        // the new time and keeps it (see `tick`).
        if self.engaged.load(Ordering::SeqCst) {
            return;
        }
        let engaged = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            if state.engaged.is_some() {
                return;
            }
            self.engage(&mut state)
        };
        match engaged {
            Ok(()) => archive.reader.watch(archive, Arc::clone(self)),
            Err(err) => {
                tracing::error!(file = %self.path.display(), error = %err, "the archive cannot follow this file")
            }
        }
    }

    fn engage(&self, state: &mut State) -> rusqlite::Result<()> {
        match &state.generation {
            None => self.begin_generation(state).map_err(io_to_sqlite)?,
            Some(log) => {
                let log = std::fs::OpenOptions::new()
                    .append(true)
                    .open(log)
                    .map_err(io_to_sqlite)?;
                state.log = Some(log);
            }
        }
        let pin = open(&self.path, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
        let checkpointer = open(&self.path, OpenFlags::SQLITE_OPEN_READ_WRITE)?;
        checkpointer.execute_batch("PRAGMA wal_autocheckpoint = 0;")?;
        state.engaged = Some(Engaged { pin, checkpointer });
        self.engaged.store(true, Ordering::SeqCst);
        Ok(())
    }

    /// Copies the file as it is and reads every committed frame of its WAL into the new
    /// generation's first record.
    fn begin_generation(&self, state: &mut State) -> std::io::Result<()> {
        self.describe()?;
        let began = now_ms();
        std::fs::copy(&self.path, self.folder.join(format!("{began}.base")))?;
        let path = self.folder.join(format!("{began}.log"));
        let mut log = std::fs::OpenOptions::new().create(true).append(true).open(&path)?;
        let (committed, position) = read_committed(&self.path, WalPosition::default())?;
        if committed.frames > 0 {
            log::append(&mut log, began, &committed)?;
            state.page_size = committed.page_size;
        }
        log.sync_all()?;
        state.position = position;
        state.log = Some(log);
        state.generation = Some(path);
        Ok(())
    }

    fn is_engaged(&self) -> bool {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .engaged
            .is_some()
    }

    /// Reads what was committed since the last read; checkpoints when the WAL grew long; lets
    /// go of the file once it has been quiet. `false` when the file is no longer engaged.
    fn tick(&self) -> bool {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(engaged) = state.engaged.as_ref() else {
            return false;
        };
        let checkpoint = state.position.frames(state.page_size) >= CHECKPOINT_FRAMES;
        let pinned = checkpoint
            && engaged
                .pin
                .execute_batch("BEGIN")
                .and_then(|()| {
                    engaged
                        .pin
                        .query_row("SELECT count(*) FROM sqlite_schema", [], |_| Ok(()))
                })
                .is_ok();
        let read = self.read(&mut state);
        if let Some(engaged) = state.engaged.as_ref() {
            if pinned && read.is_ok() {
                let _ = engaged
                    .checkpointer
                    .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
            }
            if !engaged.pin.is_autocommit() {
                let _ = engaged.pin.execute_batch("COMMIT");
            }
        }
        let last_commit = self.last_commit_ms.load(Ordering::SeqCst);
        let quiet = now_ms().saturating_sub(last_commit) >= u64::try_from(QUIET_AFTER.as_millis()).unwrap_or(u64::MAX);
        match read {
            Err(err) => {
                tracing::error!(file = %self.path.display(), error = %err, "the archive could not read this file's WAL");
                true
            }
            Ok(0) if quiet && self.first_unread_ms.load(Ordering::Acquire) == 0 => {
                self.engaged.store(false, Ordering::SeqCst);
                // A commit that saw the file engaged stored its time first: keep the file.
                if self.last_commit_ms.load(Ordering::SeqCst) != last_commit {
                    self.engaged.store(true, Ordering::SeqCst);
                    return true;
                }
                state.engaged = None;
                state.log = None;
                false
            }
            Ok(_) => true,
        }
    }

    /// Appends the transactions committed since the last read; returns the frames read.
    fn read(&self, state: &mut State) -> std::io::Result<u64> {
        let started = now_ms();
        // A record is stamped with its oldest commit's time, so that a restore to any moment
        // after a commit was acknowledged holds it (and may hold what the next READ_EVERY
        // committed after it).
        let stamp = match self.first_unread_ms.load(Ordering::Acquire) {
            0 => started,
            first => first.min(started),
        };
        let (committed, position) = read_committed(&self.path, state.position)?;
        if committed.frames > 0 {
            let log = state
                .log
                .as_mut()
                .ok_or_else(|| std::io::Error::other("no generation"))?;
            log::append(log, stamp, &committed)?;
            log.sync_data()?;
            state.page_size = committed.page_size;
            state.position = position;
        } else if position != state.position {
            state.position = position;
        }
        // Every commit seen before this read began is in the archive now; one seen since may
        // not be, and was seen at `started` or later.
        let last = self.last_commit_ms.load(Ordering::Acquire);
        let pending = if last >= started { started } else { 0 };
        self.first_unread_ms.store(pending, Ordering::Release);
        Ok(committed.frames)
    }
}

/// The thread that reads the written files into the archive.
#[derive(Default)]
pub(super) struct Reader {
    /// The files being written, and whether the thread runs.
    watching: Mutex<(Vec<Arc<Archived>>, bool)>,
}

impl Reader {
    /// Reads `file` from now on, starting the thread if it is not running.
    pub(super) fn watch(&self, archive: &Arc<Archive>, file: Arc<Archived>) {
        let mut watching = self.watching.lock().unwrap_or_else(PoisonError::into_inner);
        if !watching.0.iter().any(|known| Arc::ptr_eq(known, &file)) {
            watching.0.push(file);
        }
        if !watching.1 {
            watching.1 = true;
            let archive = Arc::clone(archive);
            let spawned = std::thread::Builder::new()
                .name("shardlite-archive".to_owned())
                .spawn(move || archive.reader.run());
            if spawned.is_err() {
                watching.1 = false;
                tracing::error!("the archive's thread could not start");
            }
        }
    }

    fn run(&self) {
        loop {
            std::thread::sleep(READ_EVERY);
            let files = self.watching.lock().unwrap_or_else(PoisonError::into_inner).0.clone();
            let quiet: Vec<_> = files.iter().filter(|file| !file.tick()).cloned().collect();
            let mut watching = self.watching.lock().unwrap_or_else(PoisonError::into_inner);
            // A file written again since its tick let go of it is engaged again: keep it.
            watching
                .0
                .retain(|file| !quiet.iter().any(|q| Arc::ptr_eq(q, file)) || file.is_engaged());
            if watching.0.is_empty() {
                watching.1 = false;
                return;
            }
        }
    }
}
