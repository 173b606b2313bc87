//! A small harness for ratio benchmarks: every subject and its baseline run in the same process,
//! interleaved round by round so that a noisy moment hits both, and the table printed at the end
//! gives the median of the rounds and the ratio against the target of SPEC section 12. The whole
//! benchmark runs in several processes one after another ([`processes`]); each ratio is taken
//! within each process, and the table gives the median over them with the lowest and highest.

#![allow(dead_code)]

use std::time::{Duration, Instant};

/// What a ratio must be to meet its target.
#[derive(Debug, Clone, Copy)]
pub enum Target {
    /// Latency: subject / baseline at most this.
    AtMost(f64),
    /// Throughput: subject / baseline at least this.
    AtLeast(f64),
    /// Shown for information only.
    None,
}

/// One measured thing: `run` performs `ops` operations and returns how long they took.
pub struct Subject<'a> {
    pub name: &'static str,
    pub run: Box<dyn FnMut(u64) -> Duration + 'a>,
}

impl<'a> Subject<'a> {
    pub fn new(name: &'static str, run: impl FnMut(u64) -> Duration + 'a) -> Self {
        Self {
            name,
            run: Box::new(run),
        }
    }
}

/// What [`measure`] found: for each process that measured, the median nanoseconds per operation
/// of each subject.
pub struct Results {
    runs: Vec<Vec<(&'static str, f64)>>,
}

impl Results {
    /// Adds the subjects of a later [`measure`] call, process by process.
    pub fn extend(&mut self, other: Results) {
        for (mine, theirs) in self.runs.iter_mut().zip(other.runs) {
            mine.extend(theirs);
        }
    }

    /// The median over the processes of `name`'s value.
    pub fn value(&self, name: &str) -> f64 {
        median(self.runs.iter().map(|run| value_in(run, name)).collect()).0
    }

    /// The median over the processes of `name`'s value, with the lowest and the highest.
    pub fn spread(&self, name: &str) -> (f64, f64, f64) {
        median(self.runs.iter().map(|run| value_in(run, name)).collect())
    }

    /// The median over the processes of `subject / baseline`, each process's ratio taken from its
    /// own measurements, with the lowest and the highest.
    pub fn ratio(&self, subject: &str, baseline: &str) -> (f64, f64, f64) {
        median(
            self.runs
                .iter()
                .map(|run| value_in(run, subject) / value_in(run, baseline))
                .collect(),
        )
    }
}

fn value_in(run: &[(&'static str, f64)], name: &str) -> f64 {
    run.iter().find(|(n, _)| *n == name).map_or(f64::NAN, |(_, v)| *v)
}

/// The median of `values`, with the lowest and the highest.
fn median(mut values: Vec<f64>) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    match (values.first(), values.last()) {
        (Some(&low), Some(&high)) => (values[values.len() / 2], low, high),
        _ => (f64::NAN, f64::NAN, f64::NAN),
    }
}

/// How many processes measure when `SHARDLITE_BENCH_PROCESSES` does not say (5 unless
/// [`default_processes`] changed it).
static DEFAULT_PROCESSES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(5);

/// Sets how many processes measure when `SHARDLITE_BENCH_PROCESSES` does not say.
pub fn default_processes(n: usize) {
    DEFAULT_PROCESSES.store(n.max(1), std::sync::atomic::Ordering::Relaxed);
}

/// How many processes measure, one after another (`SHARDLITE_BENCH_PROCESSES`, default 5 or
/// what [`default_processes`] set).
///
/// A process of its own is a fresh draw of everything that stays fixed while one runs: where its
/// heap, files' pages and threads land. On a VM that alone moved the same ratio by a fifth from
/// one process to the next, while rounds within a process agreed. So each ratio is taken within
/// each process, and the median over the processes is reported.
pub fn processes() -> usize {
    if std::env::var_os(CHILD).is_some() {
        return 1;
    }
    std::env::var("SHARDLITE_BENCH_PROCESSES")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| DEFAULT_PROCESSES.load(std::sync::atomic::Ordering::Relaxed))
}

/// Whether this process is a measuring child (its parent reports and judges the figures).
pub fn is_child() -> bool {
    std::env::var_os(CHILD).is_some()
}

/// Set in a measuring child process.
const CHILD: &str = "SHARDLITE_BENCH_CHILD";
/// How a child reports one [`measure`] call's medians, in its subjects' order.
const VALUES: &str = "@values";

/// What the children measured: per child, per [`measure`] call, one value per subject. Run on
/// the first call, so a benchmark's setup is done (and its output shown) once in the parent.
fn children() -> &'static [Vec<Vec<f64>>] {
    static CHILDREN: std::sync::OnceLock<Vec<Vec<Vec<f64>>>> = std::sync::OnceLock::new();
    CHILDREN.get_or_init(|| {
        let exe = std::env::current_exe().expect("bench binary");
        let n = processes();
        (1..=n)
            .map(|i| {
                eprintln!("  measuring in process {i} of {n}");
                let output = std::process::Command::new(&exe)
                    .args(std::env::args_os().skip(1))
                    .env(CHILD, "1")
                    .stderr(std::process::Stdio::inherit())
                    .output()
                    .expect("run a measuring child");
                assert!(output.status.success(), "a measuring child failed: {}", output.status);
                String::from_utf8_lossy(&output.stdout)
                    .lines()
                    .filter_map(|line| line.strip_prefix(VALUES))
                    .map(|values| {
                        values
                            .split_whitespace()
                            .map(|v| v.parse().unwrap_or(f64::NAN))
                            .collect()
                    })
                    .collect()
            })
            .collect()
    })
}

/// Median nanoseconds per operation of each subject, over `rounds` interleaved rounds of `ops`
/// operations each (after one warm-up round), in each of [`processes`] processes.
///
/// With more than one process, this process measures nothing: on its first call it runs the
/// benchmark again in each child process, one after another, and each call returns what the
/// children's same call measured.
///
/// `SHARDLITE_BENCH_ONLY=text` measures only the subjects whose name contains `text` (to
/// profile one of them); `text$` only the subject named `text`; several, separated by `|`,
/// the subjects any of them picks. `SHARDLITE_BENCH_SHOW_ROUNDS=1` prints every round's value.
pub fn measure(rounds: usize, ops: u64, subjects: &mut [Subject<'_>]) -> Results {
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    if processes() > 1 {
        let runs = children()
            .iter()
            .map(|child| {
                let values = child.get(call).expect("each child measures what the parent asks for");
                subjects.iter().map(|s| s.name).zip(values.iter().copied()).collect()
            })
            .collect();
        return Results { runs };
    }
    let run = measure_here(rounds, ops, subjects);
    if std::env::var_os(CHILD).is_some() {
        let values: Vec<String> = run.iter().map(|(_, v)| v.to_string()).collect();
        println!("{VALUES} {}", values.join(" "));
    }
    Results { runs: vec![run] }
}

fn measure_here(rounds: usize, ops: u64, subjects: &mut [Subject<'_>]) -> Vec<(&'static str, f64)> {
    let only = std::env::var("SHARDLITE_BENCH_ONLY").ok();
    let chosen = |name: &str| {
        only.as_deref().is_none_or(|only| {
            only.split('|').any(|only| match only.strip_suffix('$') {
                Some(exact) => name == exact,
                None => name.contains(only),
            })
        })
    };
    for subject in subjects.iter_mut().filter(|s| chosen(s.name)) {
        (subject.run)(ops);
    }
    let mut samples: Vec<Vec<f64>> = vec![vec![f64::NAN]; subjects.len()];
    for _ in 0..rounds {
        for (i, subject) in subjects.iter_mut().enumerate() {
            if !chosen(subject.name) {
                continue;
            }
            if samples[i][0].is_nan() {
                samples[i].clear();
            }
            let took = (subject.run)(ops);
            samples[i].push(took.as_nanos() as f64 / ops as f64);
        }
    }
    if std::env::var_os("SHARDLITE_BENCH_SHOW_ROUNDS").is_some() {
        for (subject, values) in subjects.iter().zip(&samples) {
            let shown: Vec<String> = values.iter().map(|v| format!("{v:.0}")).collect();
            eprintln!("  {:<34} rounds: {}", subject.name, shown.join(" "));
        }
    }
    subjects
        .iter()
        .zip(samples)
        .map(|(subject, mut values)| {
            values.sort_by(f64::total_cmp);
            (subject.name, values[values.len() / 2])
        })
        .collect()
}

/// Times `ops` calls of `f`.
pub fn time(ops: u64, mut f: impl FnMut(u64)) -> Duration {
    let started = Instant::now();
    for i in 0..ops {
        f(i);
    }
    started.elapsed()
}

/// Times `ops` operations spread over `threads` threads: each thread runs `f(thread index,
/// its share of the operations)`.
pub fn time_threads(threads: u64, ops: u64, f: impl Fn(u64, u64) + Sync) -> Duration {
    let per_thread = ops / threads;
    let started = Instant::now();
    std::thread::scope(|scope| {
        for t in 0..threads {
            let f = &f;
            scope.spawn(move || f(t, per_thread));
        }
    });
    started.elapsed()
}

/// Prints the header of a ratio table.
pub fn header(title: &str, unit: &str) {
    println!();
    println!("{title}");
    let n = processes();
    if n > 1 {
        println!(
            "  (each ratio: the median over {n} processes of the ratio within each; lowest and highest in brackets)"
        );
    }
    println!(
        "  {:<34} {:>12}   {:<26} {:>12}   {:>7}   target",
        "subject", unit, "baseline", unit, "ratio"
    );
}

/// Prints one ratio line. `values` are nanoseconds per operation; for a throughput target the
/// ratio is baseline time / subject time (that is, subject throughput / baseline throughput).
pub fn ratio_line(results: &Results, subject: &str, baseline: &str, target: Target, per_second: bool) {
    let s = results.value(subject);
    let b = results.value(baseline);
    let (shown_s, shown_b) = if per_second { (1e9 / s, 1e9 / b) } else { (s, b) };
    let ((ratio, low, high), verdict, target_text) = match target {
        Target::AtMost(limit) => {
            let ratio = results.ratio(subject, baseline);
            (
                ratio,
                if ratio.0 <= limit { "met" } else { "NOT met" },
                format!("<= {limit}x"),
            )
        }
        Target::AtLeast(limit) => {
            let ratio = results.ratio(baseline, subject);
            (
                ratio,
                if ratio.0 >= limit { "met" } else { "NOT met" },
                format!(">= {limit}x"),
            )
        }
        Target::None if per_second => (results.ratio(baseline, subject), "", String::new()),
        Target::None => (results.ratio(subject, baseline), "", String::new()),
    };
    let range = if processes() > 1 {
        format!("[{low:.2}-{high:.2}]")
    } else {
        String::new()
    };
    println!(
        "  {:<34} {:>12.1}   {:<26} {:>12.1}   {:>6.2}x   {:<8} {:<7} {}",
        subject, shown_s, baseline, shown_b, ratio, target_text, verdict, range
    );
}

/// Rounds and operations per round, from `SHARDLITE_BENCH_ROUNDS` and `SHARDLITE_BENCH_OPS`.
pub fn settings(default_ops: u64) -> (usize, u64) {
    let rounds = std::env::var("SHARDLITE_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7);
    let ops = std::env::var("SHARDLITE_BENCH_OPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default_ops);
    (rounds, ops)
}
